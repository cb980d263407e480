"""More valid inputs for benchmarks/hostile_fuzz.py: other tools' traces and result files (XLA,
JAX JSON, rocprofv3, Nsight Compute / Systems, asv, serving), memory snapshots, calibrations,
`perfkit ab` command strings, and a store whose rows the fuzzer edits."""

from __future__ import annotations

import gzip
import json
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.hostile_fuzz_seeds import SERVING, SHARED, Target, _copy, _fresh
from perfkit.analyzers.loaders.xla.xspace import open_xspace
from perfkit.core.record import load_run
from perfkit.roofline.calibration import KIND_COMPUTE, KIND_MEMORY, Calibration, MeasuredCeiling
from perfkit.roofline.snapshot import device_info_from_run

REPO = Path(__file__).resolve().parents[1]
XLA = REPO / "tests" / "analyzers" / "data" / "xla"
ASV = REPO / "tests" / "data" / "asv" / "asv_example_results" / "results"
AB_COMMAND = "printf '%s' 'a b'"


def _jax_json(src: Path, dst: Path) -> None:
    """The trace-viewer JSON xprof writes for an XSpace (as tests/analyzers/test_xla_json_and_cli.py)."""
    events: list[dict[str, Any]] = []
    for pid, plane in enumerate(open_xspace(src).planes(), start=1):
        events.append({"ph": "M", "pid": pid, "name": "process_name", "args": {"name": plane.name}})
        wanted, meta = dict(plane.stat_names), plane.event_metadata
        for line in plane.lines():
            events.append({"ph": "M", "pid": pid, "tid": line.id, "name": "thread_name", "args": {"name": line.name}})
            for ev in line.events(wanted):
                if ev is None:
                    continue
                args = {k: v for k, v in ev.stats.items() if isinstance(v, (int, str))}
                events.append({"ph": "X", "pid": pid, "tid": line.id, "name": meta[ev.metadata_id].name,
                               "ts": ev.start_ps / 1e6, "dur": ev.duration_ps / 1e6, "args": args})
    dst.write_bytes(gzip.compress(json.dumps({"displayTimeUnit": "ns", "traceEvents": [*events, {}]}).encode()))


def _calibration(run: Path) -> dict[str, Any]:
    info = device_info_from_run(load_run(run))
    if info is None:
        raise RuntimeError(f"{run}: no device info for a calibration")
    cal = Calibration(device=info, created="2026-01-01T00:00:00+00:00", duration_s=1.0, skipped={},
                      ceilings=(MeasuredCeiling("dram", KIND_MEMORY, 2.0e10, "copy plateau", level="dram"),
                                MeasuredCeiling("gemm.fp32", KIND_COMPUTE, 1.0e11, "matmul", dtype="fp32")))
    return cal.to_dict()


def _assets(work: Path, run: Path) -> dict[str, Path]:
    files = {"jax": work / "gemm.trace.json.gz", "memory-json": work / "snapshot.json",
             "calibration": work / "calibration.json", "ab": work / "ab-command.txt"}
    _jax_json(XLA / "tracelens_jax08" / "gemm.xplane.pb", files["jax"])
    snapshot = pickle.loads((REPO / "tests" / "data" / "memory" / "mosaic" / "output.pickle").read_bytes())
    files["memory-json"].write_text(json.dumps(snapshot))
    cal = _calibration(run)
    files["calibration"].write_text(json.dumps(cal))
    (work / "home-cal").mkdir()
    files["home-calibration"] = work / "home-cal" / f"{cal['fingerprint']}.json"
    files["home-calibration"].write_text(json.dumps(cal))
    files["ab"].write_text(AB_COMMAND)
    return files


def _asv_copy(member: str) -> Callable[[Path], Path]:
    """A copy of an asv results folder; `member` (under it) is the file the mutation damages."""
    def prepare(case: Path) -> Path:
        shutil.copytree(ASV, case / "results")
        return case / "results" / member
    return prepare


def _home(case: Path) -> dict[str, str]:
    return {"PERFKIT_HOME": str(case / "home")}


def _home_copy(src: Path) -> Callable[[Path], Path]:
    def prepare(case: Path) -> Path:
        (case / "home" / "calibration").mkdir(parents=True)
        return _copy(src)(case / "home" / "calibration")
    return prepare


def _command(path: Path) -> str:
    """The damaged command string (a shell hands no NUL to argv; an unreadable file is empty)."""
    if not path.is_file() or path.is_fifo():  # a FIFO would block this fuzzer
        return ""
    try:
        return path.read_bytes().decode("utf-8", errors="surrogateescape").replace("\x00", "")
    except OSError:
        return ""


def format_targets(work: Path, run: Path, run2: Path, store: Path) -> list[Target]:
    a = _assets(work, run)
    run_id, run2_id = run.name, run2.name
    roofline = ["roofline", str(run), "--no-figure"]
    memory = REPO / "tests" / "data" / "memory" / "mosaic" / "output.pickle"
    ab = ["ab", "--rounds", "3", "--warmup", "0", "--candidate", AB_COMMAND]
    return [
        Target("analyze:xplane", "bytes", _copy(XLA / "tracelens_jax08" / "gemm.xplane.pb"), lambda c, f: ["analyze", str(f)]),
        Target("analyze:jax-json", "json", _copy(a["jax"]), lambda c, f: ["analyze", str(f)]),
        Target("analyze:rocprofv3", "json", _copy(REPO / "tests" / "analyzers" / "data" / "rocprof" / "908_results.json.gz"),
               lambda c, f: ["analyze", str(f)]),
        Target("analyze:nsys-tables", "sqlite", _copy(REPO / "tests" / "data" / "nsys" / "nsys_ai" / "rtx3080_tiny.sqlite"),
               lambda c, f: ["analyze", str(f)]),
        Target("analyze:nsys-h100-tables", "sqlite", _copy(SHARED / "nsys" / "mfu_2gpu_before.sqlite"),
               lambda c, f: ["analyze", str(f)]),
        Target("roofline:ncu", "csv", _copy(REPO / "tests" / "roofline" / "data" / "ncu_raw_handwritten.csv"),
               lambda c, f: [*roofline, "--ncu", str(f)]),
        Target("roofline:calibration", "json", _copy(a["calibration"]), lambda c, f: [*roofline, "--calibration", str(f)]),
        Target("roofline:home-calibration", "json", _home_copy(a["home-calibration"]), lambda c, f: roofline, env=_home),
        Target("ingest:asv-machine", "json", _asv_copy("cheetah/machine.json"),
               lambda c, f: ["ingest", "--format", "asv", str(c / "results"), "--db", _fresh(c)]),
        Target("ingest:asv-benchmarks", "json", _asv_copy("benchmarks.json"),
               lambda c, f: ["ingest", "--format", "asv", str(c / "results"), "--db", _fresh(c)]),
        Target("ingest:asv-result", "json", _asv_copy("cheetah/bac1f64f-py2.7-Cython-numpy1.8.json"),
               lambda c, f: ["ingest", "--format", "asv", str(c / "results"), "--db", _fresh(c)]),
        Target("ingest:guidellm-0.3", "json", _copy(SERVING / "guidellm" / "benchmarks-0.3.json"),
               lambda c, f: ["ingest", "--format", "guidellm", str(f), "--db", _fresh(c)]),
        Target("ingest:aiperf-0.2", "json", _copy(SERVING / "aiperf" / "aiperf-0.2" / "profile_export_aiperf.json"),
               lambda c, f: ["ingest", "--format", "aiperf", str(f), "--db", _fresh(c)]),
        Target("ingest:aiperf-csv", "csv", _copy(SERVING / "aiperf" / "aiperf-0.1.1-gpt-oss-20b" / "profile_export_aiperf.csv"),
               lambda c, f: ["ingest", "--format", "aiperf", str(f), "--db", _fresh(c)]),
        Target("memory:json", "json", _copy(a["memory-json"]), lambda c, f: ["memory", str(f)]),
        Target("memory:diff", "bytes", _copy(memory), lambda c, f: ["memory", "diff", str(memory), str(f)]),
        Target("memory:diff-json", "json", _copy(a["memory-json"]), lambda c, f: ["memory", "diff", str(f), str(memory)]),
        Target("ab:command", "bytes", _copy(a["ab"]), lambda c, f: [*ab, "--baseline=" + _command(f)], names_file=False),
        Target("compare:store-rows", "rows", _copy(store), lambda c, f: ["compare", run2_id, run_id, "--db", f"sqlite:///{f}"]),
        Target("report:store-rows", "rows", _copy(store),
               lambda c, f: ["report", str(run), "--vs", run2_id, "--db", f"sqlite:///{f}", "--out", str(c / "r.html")]),
        Target("gate:store-rows", "rows", _copy(store),
               lambda c, f: ["gate", "--baseline", run2_id, "--candidate", run_id, "--db", f"sqlite:///{f}",
                             "--no-step-summary"], ok_codes=(1,)),
    ]
