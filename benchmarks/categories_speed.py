"""Kernel-category matching: time per unique name, old rules-in-a-loop against the prefiltered one.

    .venv/bin/python -m benchmarks.categories_speed                  # 7 runs, every trace, ~1 min
    .venv/bin/python -m benchmarks.categories_speed --smoke          # the name table and one trace, 2 runs
    .venv/bin/python -m benchmarks.categories_speed --out results.md

Old = analyzers/categories.py as of commit OLD_COMMIT (before the prefilter; the same rules),
read with `git show` into a temporary file and loaded as a module, so it lives only here. New =
perfkit.analyzers.categories. Names: every name of tests/analyzers/data/kernel_names.tsv (as
kernels) and every unique (name, kind) GPU op of every trace in ../shared/bench (traces, nsys)
and tests/analyzers/data (xla, rocprof). First both sides categorize every name and must agree
(exit 1 and the names where they differ otherwise); then each run times old and new over all
names once, interleaved; prints the median microseconds per name of each side and the ratio.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

from perfkit.analyzers.categories import category_of
from perfkit.analyzers.event_table import Kind
from perfkit.analyzers.loaders.trace_files import load_trace_file

REPO = Path(__file__).resolve().parents[1]
OLD_COMMIT = "4519463"
OLD_PATH = "analyzers/categories.py"  # perfkit/analyzers links here
NAME_TABLE = REPO / "tests" / "analyzers" / "data" / "kernel_names.tsv"
SHARED = REPO.parent / "shared" / "bench"
TRACE_GLOBS = ((SHARED / "traces", "*.json.gz"), (SHARED / "nsys", "*.sqlite"),
               (REPO / "tests" / "analyzers" / "data" / "xla", "*.xplane.pb"),
               (REPO / "tests" / "analyzers" / "data" / "rocprof", "*.json*"))
SMOKE_TRACE = SHARED / "traces" / "hta_cp_alexnet_a100.json.gz"
GPU_KINDS = (int(Kind.KERNEL), int(Kind.MEMCPY), int(Kind.MEMSET))

Name = tuple[str, int]  # (name, kind)


def load_old(commit: str = OLD_COMMIT) -> ModuleType:
    """The old categories module, from git history, loaded from a temporary file."""
    text = subprocess.run(["git", "show", f"{commit}:{OLD_PATH}"], cwd=REPO, capture_output=True, text=True,
                          check=True).stdout
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"categories_{commit}.py"
        path.write_text(text)
        spec = importlib.util.spec_from_file_location(f"categories_{commit}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module


def table_names() -> list[Name]:
    lines = NAME_TABLE.read_text(encoding="utf-8").splitlines()[1:]
    return [(line.split("\t")[0], int(Kind.KERNEL)) for line in lines if line.strip()]


def trace_files(smoke: bool) -> list[Path]:
    if smoke:
        return [SMOKE_TRACE] if SMOKE_TRACE.exists() else []
    return [p for folder, pattern in TRACE_GLOBS if folder.is_dir() for p in sorted(folder.glob(pattern))]


def trace_names(path: Path) -> list[Name]:
    """Every unique (name, kind) GPU op of one trace."""
    table = load_trace_file(path)
    gpu = table.gpu_mask()
    pairs = {(int(n), int(k)) for n, k in zip(table["name_id"][gpu].tolist(), table["kind"][gpu].tolist(), strict=True)}
    return sorted((table.names[n], k) for n, k in pairs)


# Rule changes made on purpose since the old commit (name fragment -> (old, new) category):
# they are listed, and do not count as the prefilter changing a category.
INTENDED = {"oneRankReduce": ("reduction", "communication")}  # NCCL's one-rank kernel (H200, issue 29)


def differences(names: Sequence[Name], old: Callable[[str, int], str]) -> list[tuple[str, int, str, str]]:
    out = []
    for name, kind in names:
        a, b = old(name, kind), category_of(name, kind)
        if a != b and not any(k in name and (a, b) == v for k, v in INTENDED.items()):
            out.append((name, kind, a, b))
    return out


def time_per_name_us(fn: Callable[[str, int], str], names: Sequence[Name]) -> float:
    start = time.perf_counter()
    for name, kind in names:
        fn(name, kind)
    return (time.perf_counter() - start) / len(names) * 1e6


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--smoke", action="store_true", help="the name table and one small trace, 2 runs")
    ap.add_argument("--old-commit", default=OLD_COMMIT)
    ap.add_argument("--out", type=Path, help="also write the report (Markdown) here")
    args = ap.parse_args(argv)
    runs = 2 if args.smoke else args.runs
    try:
        old = load_old(args.old_commit).category_of
    except (subprocess.CalledProcessError, OSError) as exc:
        print(f"old side skipped: commit {args.old_commit} is not in this checkout ({exc})")
        return 0
    sources = [("kernel_names.tsv", table_names())]
    sources += [(p.name, trace_names(p)) for p in trace_files(args.smoke)]
    names = sorted({n for _, found in sources for n in found})
    lines = [f"# Kernel-category matching: old ({args.old_commit}) against new (benchmarks/categories_speed.py)", "",
             f"Python {platform.python_version()}, {os.cpu_count()} CPUs, OMP_NUM_THREADS="
             f"{os.environ.get('OMP_NUM_THREADS', 'unset')}; load average before: "
             + ", ".join(f"{x:.2f}" for x in os.getloadavg()), "",
             "| source | unique (name, kind) |", "|---|---:|"]
    lines += [f"| {label} | {len(found)} |" for label, found in sources]
    lines += [f"| all, deduplicated | {len(names)} |", ""]
    diff = differences(names, old)
    lines.append(f"Equal categories, old and new: {len(names) - len(diff)} of {len(names)} names.")
    for name, kind, a, b in diff[:20]:
        lines.append(f"- DIFFERS: {name[:120]!r} (kind {kind}): old {a}, new {b}")
    old_us, new_us = [], []
    for _ in range(runs):
        old_us.append(time_per_name_us(old, names))
        new_us.append(time_per_name_us(category_of, names))
    o, n = statistics.median(old_us), statistics.median(new_us)
    lines += ["", "| side | median us / name | runs (us / name) |", "|---|---:|---|",
              f"| old ({args.old_commit}) | {o:.1f} | {', '.join(f'{x:.1f}' for x in old_us)} |",
              f"| new | {n:.1f} | {', '.join(f'{x:.1f}' for x in new_us)} |", "",
              f"old / new: {o / n:.2f}x faster ({runs} runs, medians)"]
    report = "\n".join(lines) + "\n"
    print(report, end="")
    if args.out:
        args.out.write_text(report)
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
