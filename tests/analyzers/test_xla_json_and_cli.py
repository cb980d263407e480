"""JAX JSON traces, damaged xplanes, the CLI, and a real jax[cpu] trace recorded here."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perfkit.analyzers.event_table import Kind
from perfkit.analyzers.loaders.trace_files import load_trace_file, trace_format
from perfkit.analyzers.loaders.xla.builder import ps_to_ns
from perfkit.analyzers.loaders.xla.details import kernel_config, memcpy_bytes
from perfkit.analyzers.loaders.xla.xspace import open_xspace
from perfkit.cli import main

DATA = Path(__file__).parent / "data" / "xla"
EIGHT = DATA / "conv_8gpu_jax08.xplane.pb"


def _xspace_as_trace_json(src: Path, dst: Path) -> None:
    """The trace-viewer JSON xprof writes for an XSpace: planes as processes, lines as threads,
    stats in args, microsecond times, a trailing {}."""
    events: list[dict[str, Any]] = []
    for pid, plane in enumerate(open_xspace(src).planes(), start=1):
        events.append({"ph": "M", "pid": pid, "name": "process_name", "args": {"name": plane.name}})
        wanted = dict(plane.stat_names)
        meta = plane.event_metadata
        for line in plane.lines():
            events.append({"ph": "M", "pid": pid, "tid": line.id, "name": "thread_name", "args": {"name": line.name}})
            for ev in line.events(wanted):
                assert ev is not None
                args = {k: v for k, v in ev.stats.items() if isinstance(v, (int, str))}
                events.append({"ph": "X", "pid": pid, "tid": line.id, "name": meta[ev.metadata_id].name,
                               "ts": f"{ev.start_ps // 1000}.{ev.start_ps % 1000:03d}", "dur": ev.duration_ps / 1e6,
                               "args": args})
    text = json.dumps({"displayTimeUnit": "ns", "traceEvents": [*events, {}]})
    dst.write_bytes(gzip.compress(text.replace('"ts": "', '"ts": ').replace('", "dur"', ', "dur"').encode()))


def test_trace_viewer_json_reads_like_the_xplane(tmp_path: Path) -> None:
    path = tmp_path / "tw003.trace.json.gz"
    _xspace_as_trace_json(EIGHT, path)
    assert trace_format(path) == "jax-json"
    js, xp = load_trace_file(path), load_trace_file(EIGHT)
    for kind in (Kind.KERNEL, Kind.MEMCPY, Kind.RUNTIME):
        for d in range(8):
            a = js.mask_kind(kind) & (js["rank"] == d)
            b = xp.mask_kind(kind) & (xp["rank"] == d)
            assert a.sum() == b.sum()
            assert js["dur_ns"][a].astype(np.int64).sum() == xp["dur_ns"][b].astype(np.int64).sum()
    assert js.mask_kind(Kind.KERNEL).sum() == 235
    assert any("xplane.pb" in w for w in js.meta[0].warnings)  # the note that the xplane carries more


def test_kineto_json_is_not_taken_for_jax(tmp_path: Path) -> None:
    path = tmp_path / "k.json"
    path.write_text(json.dumps({"traceEvents": [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python"}}]}))
    assert trace_format(path) == "kineto"


def test_damaged_xplane_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cut = tmp_path / "cut.xplane.pb"
    cut.write_bytes(EIGHT.read_bytes()[: 100_000])
    assert main(["analyze", str(cut)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cut.xplane.pb" in err[0] and "XSpace" in err[0]


def test_cli_reads_an_xplane(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(EIGHT), "--only", "kernels,hlo_ops", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert sum(r["count"] for r in doc["kernels"]) == 235
    assert {r["hlo_module"] for r in doc["hlo_ops"]} == {"jit_forward_3d_conv"}


def test_exact_times_and_details() -> None:
    assert [ps_to_ns(p) for p in (1499, 1500, 2500, 2501, 10**15 + 1)] == [1, 2, 2, 3, 10**12]
    assert kernel_config("regs:32 static_shared:0 dynamic_shared:48 grid:2,3,4 block:128,1,1 occ_pct:50") == \
        (2, 3, 4, 128, 1, 1, 32, 0, 48)
    assert kernel_config(" grid:7,1,1 block:64,1,1 private_mem:0 group_mem:16 occ_pct:0")[:3] == (7, 1, 1)
    assert kernel_config(None) == (-1,) * 9
    assert memcpy_bytes("kind:Unknown size:655360 dest:2 async:1") == 655360 and memcpy_bytes(5) == -1


@pytest.mark.slow
def test_jax_cpu_trace_loads_its_host_events(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    f = jax.jit(lambda a, b: jnp.tanh(a @ b).sum())
    a = jnp.ones((32, 32))
    f(a, a).block_until_ready()
    with jax.profiler.trace(str(tmp_path), create_perfetto_trace=True):
        for i in range(3):
            with jax.profiler.StepTraceAnnotation("train", step_num=i):
                f(a, a).block_until_ready()
    files = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    xplane = next(p for p in files if p.name.endswith(".xplane.pb"))
    jsons = [p for p in files if p.name.endswith(".json.gz")]
    assert jsons
    for path in [xplane, *jsons]:
        table = load_trace_file(path)
        assert table.mask_kind(Kind.CPU_OP).sum() > 0 and table.gpu_mask().sum() == 0
        steps = sorted(n for n in table.name_of(table["name_id"][table.mask_kind(Kind.USER_ANNOTATION)]))
        assert steps == ["ProfilerStep#0", "ProfilerStep#1", "ProfilerStep#2"]
        assert any("no device events" in w for w in table.meta[0].warnings)
        assert main(["analyze", str(path), "--only", "kernels"]) == 0
        assert "no device events" in capsys.readouterr().err
