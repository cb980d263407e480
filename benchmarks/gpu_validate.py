"""Validate perfkit's GPU paths on one lent H100 / H200 in a few minutes (docs/gpu-validation.md).

scripts/gpu-validate.sh calls this (`python -m benchmarks.gpu_validate [--dry-run] [STEP ...]`).
Each step runs as its own process group with its own time limit, under one deadline for the
whole (DEADLINE_S, default 420 s): a hung step costs only its slot, a failing step never stops
the others, and a step the deadline leaves under 10 s for is skipped with that reason. Wheels
in .whl/ are installed first (to /tmp/site, put on the steps' PYTHONPATH) when present.

Writes to OUT (default benchmarks/results/gpu/<card>/): ONE report.md and ONE report.json
(every step: status ok / fail / skipped, seconds, reason, details; the card's name), rewritten
after each step so a killed run still leaves them; the result files some steps write; and
logs.tar.gz (each step's log and the ncu CSV). `--dry-run` runs the same steps on a machine
without a GPU: every step that needs one (or ncu) is reported as skipped with the reason, the
others run, and OUT defaults to a new temporary folder. Exit 1 when a step failed, else 0.
This module needs only the standard library; the steps need perfkit's dependencies.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.gpu_validate_report import write_reports

ROOT = Path(__file__).resolve().parents[1]
DEADLINE_S = 420
MIN_LEFT_S = 10  # a step is not started with less time than this left
KILL_GRACE_S = 5
SITE = Path("/tmp/site")  # where the wheels go (outside the repository)
GPU, NCU = "a CUDA GPU", "ncu"
NCU_SPEC = "examples/gemm-gpu-ncu.yaml"
SPECS = ("examples/gemm-gpu-validate.yaml", NCU_SPEC, "examples/triton-rmsnorm-gpu.yaml")


@dataclass(frozen=True)
class Step:
    name: str
    limit_s: int
    needs: tuple[str, ...]  # GPU, NCU
    commands: Callable[[Context], list[list[str]]]  # argv of each command, run in order
    after: str | None = None  # a step that must have succeeded first
    stdout_to: str | None = None  # the first command's stdout goes to this file in OUT
    details: Callable[[Context], dict[str, Any]] | None = None


@dataclass
class Context:
    out: Path
    work: Path  # runs and scratch files (not returned from a lent machine)
    dry_run: bool
    has_gpu: bool
    gpu_reason: str
    ncu: str | None
    env: dict[str, str]
    started: float = field(default_factory=time.monotonic)
    deadline_s: int = DEADLINE_S
    archive: list[Path] = field(default_factory=list)  # extra files for logs.tar.gz

    @property
    def left_s(self) -> float:
        return self.deadline_s - (time.monotonic() - self.started)


PY = sys.executable


def _perfkit(*args: str) -> list[str]:
    return [PY, "-m", "perfkit", *args]


def _env_info() -> None:
    """What the machine has (the env step): Python, torch, the GPU, tools, perfkit's dependencies."""
    import importlib.metadata as md
    import importlib.util
    import platform

    print("python", sys.version.split()[0], platform.platform())
    import torch

    print("torch", torch.__version__, "cuda", torch.version.cuda, "cuda available", torch.cuda.is_available())
    if torch.cuda.is_available():
        print("device", torch.cuda.get_device_name(), "capability", torch.cuda.get_device_capability())
    for tool in ("nvidia-smi", "ncu", "nsys"):
        print(tool, shutil.which(tool) or "not found")
    for dist in ("triton", "pydantic", "msgspec", "sqlalchemy", "nvtx", "nvidia-ml-py", "pandas", "pyarrow"):
        try:
            print(dist, md.version(dist))
        except md.PackageNotFoundError:
            print(dist, "importable" if importlib.util.find_spec(dist.replace("-", "_")) else "MISSING")
    if shutil.which("nvidia-smi"):
        sys.stdout.flush()
        subprocess.run(["nvidia-smi"], check=False, timeout=20)


def _load_specs(paths: list[str]) -> None:
    """The specs step: every spec the steps run loads and expands (bad specs fail before GPU time)."""
    from perfkit.pipeline.spec import load_spec

    for path in paths:
        print(f"{path}: {len(load_spec(Path(path)).points())} points")


def _latest_run(parent: Path) -> Path | None:
    runs = sorted(parent.glob("*/run.json"), key=lambda p: p.stat().st_mtime)
    return runs[-1].parent if runs else None


def gemm_details(ctx: Context) -> dict[str, Any]:
    """The GEMM sweep's points: median, flop/s, numerics, the GPU's state right after timing."""
    run = _latest_run(ctx.work / "gemm")
    if run is None:
        return {}
    rows = []
    for p in json.loads((run / "run.json").read_text()).get("points", []):
        stats = (p.get("measurement") or {}).get("stats") or {}
        gpu = p.get("gpu_after_timing") or {}
        rows.append({"key": p.get("key"), "status": p.get("status"), "median_s": stats.get("median_s"),
                     "flop_per_s": (p.get("achieved") or {}).get("flop_per_s"),
                     "rel_err": (p.get("numerics") or {}).get("rel_err"), "error": p.get("error"),
                     "sm_mhz_after_timing": (gpu.get("clocks") or {}).get("sm_mhz"),
                     "throttle_after_timing": gpu.get("throttle_reasons")})
    return {"run": str(run), "points": rows}


def _json_details(name: str) -> Callable[[Context], dict[str, Any]]:
    def read(ctx: Context) -> dict[str, Any]:
        path = ctx.work / f"{name}.json"
        return dict(json.loads(path.read_text())) if path.is_file() else {}

    return read


def ncu_details(ctx: Context) -> dict[str, Any]:
    """The ncu pass's outcome (perfkit profile exits 0 when only its ncu step failed); its CSV
    and sidecar go into the log archive."""
    run = _latest_run(ctx.work / "ncu")
    if run is None:
        return {"fail_reason": "no run directory"}
    ctx.archive += [p for p in (run / "ncu" / "ncu.csv", run / "ncu" / "ncu.json") if p.is_file()]
    artifacts = json.loads((run / "run.json").read_text()).get("artifacts") or {}
    out: dict[str, Any] = {"run": str(run), "ncu": artifacts.get("ncu")}
    if artifacts.get("ncu_error") or not artifacts.get("ncu"):
        out["fail_reason"] = f"the ncu pass failed: {artifacts.get('ncu_error') or 'no ncu artifacts'}"
    return out


def _ncu_run(ctx: Context) -> str:
    run = _latest_run(ctx.work / "ncu")
    return str(run) if run else str(ctx.work / "ncu" / "missing-run")


STEPS = (
    Step("env", 30, (), lambda c: [[PY, "-c", "from benchmarks.gpu_validate import _env_info; _env_info()"]]),
    Step("specs", 60, (), lambda c: [[PY, "-c", "import sys; from benchmarks.gpu_validate import _load_specs; "
                                      "_load_specs(sys.argv[1:])", *SPECS]]),
    Step("tests", 120, (GPU,), lambda c: [[PY, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider", "tests"]]),
    Step("timer", 45, (GPU,), lambda c: [[PY, "-m", "benchmarks.timer_vs_do_bench", "--rounds", "4",
                                          "--out", str(c.out / "timer_vs_do_bench.json")]]),
    Step("gemm", 60, (GPU,), lambda c: [_perfkit("profile", "examples/gemm-gpu-validate.yaml", "--no-store", "--quiet",
                                                 "--out", str(c.work / "gemm"))], details=gemm_details),
    Step("decode", 90, (GPU,), lambda c: [[PY, "-m", "benchmarks.decode_gpu", "--out", str(c.out / "decode_gpu.json"),
                                           "--work", str(c.work / "decode")]]),
    Step("doctor", 60, (GPU,), lambda c: [_perfkit("doctor", "--selftest", "--format", "json"), _perfkit("doctor")],
         stdout_to="doctor.json"),
    Step("calib", 60, (GPU,), lambda c: [[PY, "-m", "benchmarks.calibrate_repeat", "--device", "cuda", "--runs", "2",
                                          "--out", str(c.out / "calibrate_repeat_cuda.json")]]),
    Step("ncu_metrics", 30, (NCU,), lambda c: [[PY, "-m", "benchmarks.ncu_checks", "metrics", "--chip", "gh100",
                                                "--details", str(c.work / "ncu_metrics.json")]],
         details=_json_details("ncu_metrics")),
    Step("ncu", 60, (GPU, NCU), lambda c: [_perfkit("profile", NCU_SPEC, "--ncu", "--no-store",
                                                    "--out", str(c.work / "ncu"))], details=ncu_details),
    Step("ncu_flops", 30, (), lambda c: [[PY, "-m", "benchmarks.ncu_checks", "flops", _ncu_run(c),
                                          "--dtypes", "bf16,fp8", "--details", str(c.work / "ncu_flops.json")]],
         after="ncu", details=_json_details("ncu_flops")),
    Step("graph_trace", 45, (GPU,), lambda c: [[PY, "-m", "benchmarks.graph_trace_probe",
                                                "--details", str(c.work / "graph_trace.json")]],
         details=_json_details("graph_trace")),
    Step("triton", 100, (GPU,), lambda c: [_perfkit("profile", "examples/triton-rmsnorm-gpu.yaml", "--quick",
                                                    "--no-store", "--quiet", "--out", str(c.work / "triton"))]),
)
STEP_NAMES = tuple(s.name for s in STEPS)


def why_not(step: Step, ctx: Context, done: dict[str, str]) -> str | None:
    """Why `step` is skipped, or None to run it."""
    if GPU in step.needs and ctx.dry_run:
        return "dry run: needs a CUDA GPU"
    if GPU in step.needs and not ctx.has_gpu:
        return f"needs a CUDA GPU: {ctx.gpu_reason}"
    if NCU in step.needs and ctx.ncu is None:
        return "needs ncu (Nsight Compute): not on PATH or in /usr/local/cuda/bin"
    if step.after and done.get(step.after) != "ok":
        state = done.get(step.after)
        return f"needs the {step.after} step to succeed first ({state or 'not run'})"
    left = ctx.left_s
    if left < MIN_LEFT_S:
        return f"deadline: DEADLINE_S={ctx.deadline_s} reached ({max(left, 0):.0f} s left)"
    return None


def run_command(argv: list[str], log: Path, limit_s: float, env: dict[str, str], stdout: Path | None = None) -> int | None:
    """Run one command in its own process group; its exit code, or None when it ran out of time."""
    with open(log, "ab") as err, open(stdout, "wb") if stdout else open(os.devnull, "wb") as out_file:
        err.write(f"$ {' '.join(argv)}\n".encode())
        err.flush()
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out_file if stdout else err, stderr=err,
                                start_new_session=True)
        try:
            return proc.wait(timeout=max(limit_s, 1))
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            return None


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    for sig, wait_s in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def run_step(step: Step, ctx: Context) -> dict[str, Any]:
    limit = min(step.limit_s, int(ctx.left_s))
    log = ctx.out / f"{step.name}.log"
    log.write_bytes(b"")
    commands = step.commands(ctx)
    t0 = time.monotonic()
    status, reason = "ok", None
    for i, argv in enumerate(commands):
        left = limit - (time.monotonic() - t0)
        stdout = ctx.out / step.stdout_to if step.stdout_to and i == 0 else None
        rc = run_command(argv, log, left, ctx.env, stdout)
        if rc is None:
            status, reason = "fail", f"timed out after {limit} s (its limit)"
            break
        if rc != 0 and status == "ok":
            status, reason = "fail", f"exit code {rc}" + (f" (command {i + 1} of {len(commands)})" if len(commands) > 1 else "")
    seconds = time.monotonic() - t0
    details = _details(step, ctx)
    if status == "ok" and details.get("fail_reason"):  # the command succeeded, its results say otherwise
        status, reason = "fail", str(details["fail_reason"])
    return {"name": step.name, "status": status, "seconds": round(seconds, 1), "limit_s": limit, "reason": reason,
            "needs": list(step.needs), "commands": [" ".join(c) for c in commands], "log": log.name,
            "details": details}


def _details(step: Step, ctx: Context) -> dict[str, Any]:
    if step.details is None:
        return {}
    try:
        return step.details(ctx)
    except (OSError, ValueError, KeyError, TypeError) as exc:  # a report is written whatever a step left
        return {"error": f"reading the step's results: {type(exc).__name__}: {exc}"}


def install_wheels(ctx: Context) -> dict[str, Any]:
    """The wheels step: pip install .whl/*.whl into /tmp/site for the steps (not in a dry run)."""
    wheels = sorted((ROOT / ".whl").glob("*.whl"))
    entry: dict[str, Any] = {"name": "wheels", "status": "skipped", "seconds": 0.0, "limit_s": 120, "reason": None,
                             "needs": [], "commands": [], "log": None,
                             "details": {"wheels": [w.name for w in wheels]} if wheels else {}}
    if not wheels:
        entry["reason"] = "no wheels in .whl/"
        return entry
    if ctx.dry_run:
        entry["reason"] = "dry run: the wheels are for the lent GPU machine"
        return entry
    argv = [PY, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile", "--no-cache-dir", "--upgrade",
            "--target", str(SITE), *map(str, wheels)]
    t0 = time.monotonic()
    log = ctx.out / "wheels.log"
    log.write_bytes(b"")
    rc = run_command(argv, log, min(120, ctx.left_s), ctx.env)
    entry.update(seconds=round(time.monotonic() - t0, 1), commands=[" ".join(argv)], log=log.name)
    if rc == 0:
        entry["status"] = "ok"
        ctx.env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(SITE), *_rest(ctx.env.get("PYTHONPATH", ""))])
    else:
        entry.update(status="fail", reason="timed out" if rc is None else f"exit code {rc}")
    return entry


def _rest(pythonpath: str) -> list[str]:
    return [p for p in pythonpath.split(os.pathsep) if p and Path(p).resolve() != ROOT]


def gpu_card() -> tuple[str | None, str]:
    """(the first GPU's name, or None; why there is none)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None, "nvidia-smi not found (no NVIDIA driver)"
    try:
        proc = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True,
                              timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"nvidia-smi failed: {exc}"
    names = [ln.strip() for ln in proc.stdout.splitlines() if ln.strip()]
    if proc.returncode != 0 or not names:
        return None, f"nvidia-smi lists no GPU (exit code {proc.returncode})"
    return names[0], ""


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "unknown"


NCU_SEARCH = ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu")  # as roofline.ncu.find_ncu


def find_ncu() -> str | None:
    """ncu where roofline.ncu.find_ncu looks (PATH, $CUDA_HOME/bin, $CUDA_PATH/bin, NCU_SEARCH),
    without importing perfkit: this runs before the wheels are installed."""
    found = shutil.which("ncu")
    if found:
        return found
    homes = [os.path.join(os.environ[v], "bin", "ncu") for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    return next((p for p in [*homes, *NCU_SEARCH] if os.path.isfile(p) and os.access(p, os.X_OK)), None)


def archive_logs(ctx: Context) -> None:
    """One logs.tar.gz of the step logs and extra files; the loose logs go (few files come back)."""
    logs = sorted(ctx.out.glob("*.log"))
    files = logs + [p for p in ctx.archive if p.is_file()]
    if not files:
        return
    with tarfile.open(ctx.out / "logs.tar.gz", "w:gz") as tar:
        for path in files:
            tar.add(path, arcname=path.name)
    for path in logs:
        path.unlink()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="scripts/gpu-validate.sh", description=__doc__.split("\n\n")[0])
    parser.add_argument("steps", nargs="*", metavar="STEP", help=f"steps to run (default all): {' '.join(STEP_NAMES)}")
    parser.add_argument("--dry-run", action="store_true", help="no GPU: run the rest, report the GPU steps as skipped")
    args = parser.parse_args(argv)
    unknown = [s for s in args.steps if s not in STEP_NAMES]
    if unknown:
        parser.error(f"unknown step {', '.join(unknown)}; choose from {' '.join(STEP_NAMES)}")
    deadline = os.environ.get("DEADLINE_S") or str(DEADLINE_S)
    if not deadline.isdigit():
        parser.error(f"DEADLINE_S={deadline!r}: give whole seconds, e.g. DEADLINE_S=600")
    args.deadline_s = int(deadline)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    card, gpu_reason = gpu_card()
    deadline = args.deadline_s
    out_env = os.environ.get("OUT")
    if out_env:
        out = Path(out_env)
    elif args.dry_run:
        out = Path(tempfile.mkdtemp(prefix="perfkit-gpu-validate-dry-run-"))
    else:
        out = ROOT / "benchmarks" / "results" / "gpu" / slug(card or "no-gpu")
    out.mkdir(parents=True, exist_ok=True)
    out = out.resolve()
    work = Path(tempfile.mkdtemp(prefix="perfkit-gpu-validate-work-"))
    env = {**os.environ, "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), *_rest(os.environ.get("PYTHONPATH", ""))])}
    env.setdefault("PERFKIT_HOME", str(work / "perfkit-home"))
    ctx = Context(out=out, work=work, dry_run=args.dry_run, has_gpu=card is not None, gpu_reason=gpu_reason,
                  ncu=find_ncu(), env=env, deadline_s=deadline)
    report: dict[str, Any] = {
        "tool": "scripts/gpu-validate.sh", "card": card, "card_reason": gpu_reason or None, "dry_run": args.dry_run,
        "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "finished": None,
        "deadline_s": deadline, "out": str(out), "ncu": ctx.ncu, "steps": [],
    }
    print(f"gpu-validate: {card or 'no GPU'}{' (dry run)' if args.dry_run else ''}; deadline {deadline} s; "
          f"reports in {out}", flush=True)
    chosen = [s for s in STEPS if not args.steps or s.name in args.steps]
    done: dict[str, str] = {}
    for entry in _run_all(chosen, ctx, done):
        report["steps"].append(entry)
        report["elapsed_s"] = round(time.monotonic() - ctx.started, 1)
        write_reports(out, report)
    report["finished"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    write_reports(out, report)
    archive_logs(ctx)
    failed = [s["name"] for s in report["steps"] if s["status"] == "fail"]
    print(f"gpu-validate: {len(report['steps'])} steps, failed: {', '.join(failed) or 'none'}; "
          f"{out / 'report.md'}", flush=True)
    return 1 if failed else 0


def _run_all(chosen: list[Step], ctx: Context, done: dict[str, str]) -> Iterator[dict[str, Any]]:
    yield _announce(install_wheels(ctx))
    for step in chosen:
        commands = step.commands(ctx)
        broken = preflight_problem(commands)
        reason = why_not(step, ctx, done)
        if broken is not None:  # also in a dry run: a renamed module or spec fails here, not on the GPU
            entry = _not_run(step, commands, "fail", broken)
        elif reason is not None:
            entry = _not_run(step, commands, "skipped", reason)
        else:
            entry = run_step(step, ctx)
        done[step.name] = entry["status"]
        yield _announce(entry, ctx.out / entry["log"] if entry.get("log") else None)


def _not_run(step: Step, commands: list[list[str]], status: str, reason: str) -> dict[str, Any]:
    return {"name": step.name, "status": status, "seconds": 0.0, "limit_s": step.limit_s, "reason": reason,
            "needs": list(step.needs), "commands": [" ".join(c) for c in commands], "log": None, "details": {}}


def preflight_problem(commands: list[list[str]]) -> str | None:
    """What a step's commands name that is not here: the module of `python -m`, a spec under examples/."""
    for argv in commands:
        if len(argv) > 2 and argv[1] == "-m" and importlib.util.find_spec(argv[2]) is None:
            return f"module {argv[2]} not found"
        for arg in argv:
            if arg.startswith("examples/") and not (ROOT / arg).is_file():
                return f"{arg} not found"
    return None


def _announce(entry: dict[str, Any], log: Path | None = None) -> dict[str, Any]:
    why = f": {entry['reason']}" if entry["reason"] else ""
    print(f"{entry['name']}: {entry['status']} in {entry['seconds']} s (limit {entry['limit_s']} s){why}", flush=True)
    if entry["status"] != "skipped" and log is not None and log.is_file():  # the log's end, as it ran
        tail = 25 if entry["status"] == "fail" else 8
        print("\n".join(log.read_text(errors="replace").splitlines()[-tail:]), flush=True)
    return entry


if __name__ == "__main__":
    sys.exit(main())
