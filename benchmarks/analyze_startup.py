"""Wall time of `perfkit analyze TRACE` and `perfkit --help`, old code against new, fresh processes.

    .venv/bin/python -m benchmarks.analyze_startup                 # 7 runs of each, ~30 s on 2 cores
    .venv/bin/python -m benchmarks.analyze_startup --runs 1        # smoke test
    .venv/bin/python -m benchmarks.analyze_startup --old /path/to/old/checkout --out results.md
    .venv/bin/python -m benchmarks.analyze_startup --old-rev dcf335c   # old = a commit of this repository

Runs `python -m perfkit analyze TRACE` (all tables, text format) and `python -m perfkit --help`
with PYTHONPATH set to the old checkout (--old, default /work/base when it exists) and to this
one, interleaved (old, new, old, new, ...), RUNS times each, every one a fresh process with
OMP_NUM_THREADS=1 started from an empty directory (so the current directory shadows neither
side). Prints min / median / max wall seconds of each (and the median CPU seconds, user +
system, which other load on the machine sways less), the new/old ratio of the medians, whether
the new code meets the targets (analyze under 0.8 s, --help under 0.5 s) and whether the old
and new analyze print the same stdout. `python -c 'import pandas'`, timed the same way, is the
floor: what analyze costs beyond it is perfkit's own. Without an old checkout it times the new side only and
says why.

Bytecode: `--bytecode cached` (the default; what an installed perfkit sees) gives each side its
own PYTHONPYCACHEPREFIX, filled by one untimed warm-up run; `--bytecode uncached` sets
PYTHONDONTWRITEBYTECODE=1 and no prefix, as the shared VM's shells do: the checkouts have no
__pycache__, so every run compiles perfkit's own sources again (stdlib and site-packages keep
their installed bytecode).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OLD = Path("/work/base")
DEFAULT_TRACE = REPO / "examples" / "traces" / "alexnet-a100.json.gz"
ANALYZE_TARGET_S = 0.8
HELP_TARGET_S = 0.5
FLOOR = "python -c 'import pandas' (the floor)"


@dataclass(frozen=True)
class Side:
    name: str  # "old" or "new"
    root: Path  # the checkout put first on PYTHONPATH
    pycache: Path  # its PYTHONPYCACHEPREFIX


@dataclass(frozen=True)
class Timed:
    wall_s: float
    cpu_s: float  # user + system time of the process and its children: less swayed by other load
    stdout: str


def side_env(side: Side, bytecode: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(side.root), "OMP_NUM_THREADS": "1"}
    if bytecode == "uncached":
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPYCACHEPREFIX", None)
    else:
        env["PYTHONPYCACHEPREFIX"] = str(side.pycache)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run_once(side: Side, python_args: list[str], bytecode: str, cwd: Path) -> Timed:
    env = side_env(side, bytecode)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start_s = time.perf_counter()
    proc = subprocess.run([sys.executable, *python_args], capture_output=True, text=True, env=env, cwd=cwd,
                          check=False)
    wall_s = time.perf_counter() - start_s
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"{side.name}: python {' '.join(python_args)} failed ({proc.returncode}): "
                         f"{proc.stderr.strip()[-500:]}")
    return Timed(wall_s, cpu_s, proc.stdout)


def summary_row(label: str, timed: list[Timed]) -> str:
    walls_s = [t.wall_s for t in timed]
    cpu_s = statistics.median(t.cpu_s for t in timed)
    return (f"| {label} | {min(walls_s):.3f} | {statistics.median(walls_s):.3f} | {max(walls_s):.3f} | "
            f"{cpu_s:.3f} | " + ", ".join(f"{w:.2f}" for w in walls_s) + " |")


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f}, {five:.2f}, {fifteen:.2f}"


def verdict(label: str, median_s: float, target_s: float) -> str:
    met = "met" if median_s < target_s else "NOT met"
    return f"- {label}: median {median_s:.3f} s, target < {target_s} s: {met}"


def commands(trace: Path) -> dict[str, list[str]]:
    """{label: python arguments}; `import pandas` alone is the floor under analyze (new side only)."""
    return {"analyze": ["-m", "perfkit", "analyze", str(trace)], "--help": ["-m", "perfkit", "--help"],
            FLOOR: ["-c", "import pandas"]}


def measure(sides: list[Side], trace: Path, runs: int, bytecode: str) -> dict[tuple[str, str], list[Timed]]:
    """{(side name, command label): timed runs}, interleaved over the sides."""
    plan = [(label, python_args, side) for label, python_args in commands(trace).items() for side in sides
            if label != FLOOR or side.name == "new"]
    out: dict[tuple[str, str], list[Timed]] = {(side.name, label): [] for label, _, side in plan}
    with tempfile.TemporaryDirectory(prefix="analyze-startup-") as cwd:
        if bytecode == "cached":
            for _, python_args, side in plan:  # untimed: fills the side's bytecode cache
                run_once(side, python_args, bytecode, Path(cwd))
        for _ in range(runs):
            for label, python_args, side in plan:
                out[(side.name, label)].append(run_once(side, python_args, bytecode, Path(cwd)))
    return out


def report(sides: list[Side], timed: dict[tuple[str, str], list[Timed]], args: argparse.Namespace,
           skipped: str | None, load_before: str) -> str:
    lines = ["# `perfkit analyze` start-up (benchmarks/analyze_startup.py)", "",
             f"Trace: {args.trace.name} ({args.trace.stat().st_size} bytes); {args.runs} runs of each command, "
             f"fresh processes, OMP_NUM_THREADS=1, bytecode {args.bytecode}; Python {sys.version.split()[0]}, "
             f"{os.cpu_count()} CPUs. Load average (1, 5, 15 min) before: {load_before}; after: {load_average()}.",
             ""]
    if skipped:
        lines += [f"Old side skipped: {skipped}.", ""]
    lines += ["| side, command | min s | median s | max s | median CPU s | all runs, wall (s) |",
              "|---|---:|---:|---:|---:|---|"]
    roots = {side.name: side.root for side in sides}
    for (name, label), runs in timed.items():
        lines.append(summary_row(f"{name} ({roots[name]}), {label}", runs))
    median = {key: statistics.median(t.wall_s for t in runs) for key, runs in timed.items()}
    lines.append("")
    if not skipped:
        for label in ("analyze", "--help"):
            lines.append(f"- {label}: new/old ratio of the medians {median[('new', label)] / median[('old', label)]:.2f}")
        same = timed[("old", "analyze")][0].stdout == timed[("new", "analyze")][0].stdout
        lines.append(f"- analyze stdout of old and new: {'identical' if same else 'DIFFERENT'}")
    lines.append(verdict("new analyze", median[("new", "analyze")], ANALYZE_TARGET_S))
    lines.append(verdict("new --help", median[("new", "--help")], HELP_TARGET_S))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", type=Path, default=DEFAULT_OLD, help="old checkout (default: %(default)s)")
    ap.add_argument("--old-rev", help="old code as a git revision of this repository (checked out into a "
                    "temporary worktree; overrides --old), e.g. the commit before a change")
    ap.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    ap.add_argument("--runs", type=int, default=7, help="timed runs of each command and side")
    ap.add_argument("--bytecode", choices=("cached", "uncached"), default="cached")
    ap.add_argument("--out", type=Path, help="also write the Markdown report to this file")
    args = ap.parse_args(argv)
    args.trace = args.trace.resolve()
    if args.old_rev:
        with tempfile.TemporaryDirectory(prefix="analyze-startup-old-") as tmp:
            args.old = Path(tmp) / "old"
            subprocess.run(["git", "-C", str(REPO), "worktree", "add", "-q", "--detach", str(args.old), args.old_rev],
                           check=True)
            try:
                return timed_report(args)
            finally:
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(args.old)], check=False)
    return timed_report(args)


def timed_report(args: argparse.Namespace) -> int:
    load_before = load_average()
    skipped = None if (args.old / "perfkit" / "cli.py").is_file() else f"no perfkit checkout at {args.old}"
    if skipped:
        print(f"analyze_startup: {skipped}; timing the new side only", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="analyze-startup-pyc-") as pyc:
        sides = [] if skipped else [Side("old", args.old.resolve(), Path(pyc) / "old")]
        sides.append(Side("new", REPO, Path(pyc) / "new"))
        timed = measure(sides, args.trace, args.runs, args.bytecode)
    text = report(sides, timed, args, skipped, load_before)
    print(text, end="")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
