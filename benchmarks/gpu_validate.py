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
The steps are benchmarks/gpu_validate_steps.py; processes, the card and ncu are
gpu_validate_machine.py; the reports gpu_validate_report.py. The driver needs only the standard
library; the steps need perfkit's dependencies.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.gpu_validate_machine import (
    ROOT,
    archive_logs,
    find_ncu,
    gpu_card,
    preflight_problem,
    run_command,
    slug,
)
from benchmarks.gpu_validate_report import write_reports
from benchmarks.gpu_validate_steps import (
    DEADLINE_S,
    DEFAULT_STEPS,
    GPU,
    NCU,
    PY,
    STEP_NAMES,
    STEPS,
    WHEELS_LIMIT_S,
    Context,
    Step,
)

MIN_LEFT_S = 10  # a step is not started with less time than this left
SITE = Path("/tmp/site")  # where the wheels go (outside the repository)


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
    except (OSError, ValueError, KeyError, TypeError, ImportError) as exc:  # a report is written whatever a step left
        return {"error": f"reading the step's results: {type(exc).__name__}: {exc}"}


def install_wheels(ctx: Context) -> dict[str, Any]:
    """The wheels step: pip install .whl/*.whl into /tmp/site for the steps (not in a dry run)."""
    wheels = sorted((ROOT / ".whl").glob("*.whl"))
    entry: dict[str, Any] = {"name": "wheels", "status": "skipped", "seconds": 0.0, "limit_s": WHEELS_LIMIT_S, "reason": None,
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
    rc = run_command(argv, log, min(WHEELS_LIMIT_S, ctx.left_s), ctx.env)
    entry.update(seconds=round(time.monotonic() - t0, 1), commands=[" ".join(argv)], log=log.name)
    if rc == 0:
        entry["status"] = "ok"
        ctx.env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(SITE), *_rest(ctx.env.get("PYTHONPATH", ""))])
        sys.path.insert(1, str(SITE))  # the driver reads results through perfkit too (ncu_details)
    else:
        entry.update(status="fail", reason="timed out" if rc is None else f"exit code {rc}")
    return entry


def _rest(pythonpath: str) -> list[str]:
    return [p for p in pythonpath.split(os.pathsep) if p and Path(p).resolve() != ROOT]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="scripts/gpu-validate.sh", description=__doc__.split("\n\n")[0])
    parser.add_argument("steps", nargs="*", metavar="STEP",
                        help=f"steps to run (default: {' '.join(DEFAULT_STEPS)}; also: "
                        f"{' '.join(n for n in STEP_NAMES if n not in DEFAULT_STEPS)})")
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
    chosen = [s for s in STEPS if s.name in args.steps or (not args.steps and s.default)]
    done: dict[str, str] = {}
    for entry in _run_all(chosen, ctx, done):
        report["steps"].append(entry)
        report["elapsed_s"] = round(time.monotonic() - ctx.started, 1)
        write_reports(out, report)
    report["finished"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    write_reports(out, report)
    archive_logs(ctx.out, ctx.archive)
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
        if broken is not None and step.pending and broken.startswith("module "):  # written in another part
            entry = _not_run(step, commands, "skipped", step.pending)
        elif broken is not None:  # also in a dry run: a renamed module or spec fails here, not on the GPU
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


def _announce(entry: dict[str, Any], log: Path | None = None) -> dict[str, Any]:
    why = f": {entry['reason']}" if entry["reason"] else ""
    print(f"{entry['name']}: {entry['status']} in {entry['seconds']} s (limit {entry['limit_s']} s){why}", flush=True)
    if entry["status"] != "skipped" and log is not None and log.is_file():  # the log's end, as it ran
        tail = 25 if entry["status"] == "fail" else 8
        print("\n".join(log.read_text(errors="replace").splitlines()[-tail:]), flush=True)
    return entry


if __name__ == "__main__":
    sys.exit(main())
