"""What the perfkit pytest plugin costs a plain `pytest` run that never uses it.

    .venv/bin/python -m benchmarks.pytest_plugin_import --runs 21 --callgrind   # ~5 min, 2 cores

The plugin is registered through the `pytest11` entry point, so every pytest run in an
environment where perfkit is installed imports it. Measurements, each in fresh
subprocesses (one thread: OMP/MKL/OpenBLAS pinned to 1), medians of --runs:

1. import time: `python -X importtime -c "import pytest; import perfkit.pytest_plugin"`, the
   cumulative microseconds of the `perfkit.pytest_plugin` line (pytest itself is imported first:
   it is loaded in any pytest run, with or without the plugin), and the modules the plugin
   import brings in.
2. whole run: `python -m pytest -q` of one trivial test (wall and CPU time), with the plugin
   (the default) and with `-p no:perfkit`, interleaved so that drift of the machine hits both
   alike; the trivial test also lists sys.modules, so the run shows which modules the plugin
   adds to a real session.
3. with --callgrind: the instructions of that whole run, with and without the plugin, under
   valgrind's callgrind: a figure that other jobs on a shared machine do not disturb, turned
   into ms at the CPU time per instruction of the timed runs.

The .pyc files are written (PYTHONDONTWRITEBYTECODE is cleared for the children) and one
warm-up run of each precedes the timed ones, as on a user's machine after the first run.

`--smoke`: one run of each, no callgrind, nothing written unless --out (checks the script).

Goal: < 50 ms added. Writes benchmarks/results/pytest_plugin_import-<machine>.md and .json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.gate_quality import machine  # noqa: E402
from perfkit.core.measurement import median_ci_ranks  # noqa: E402

GOAL_MS = 50.0
PLUGIN = "perfkit.pytest_plugin"
# Modules a plain pytest run must not get from the plugin (third-party heavy and perfkit's
# generic top-level packages).
HEAVY = ("torch", "numpy", "pandas", "scipy", "pydantic", "rich", "sqlalchemy", "msgspec",
         "yaml", "profiler", "reports", "workloads", "dashboard", "analyzers", "roofline")
TRIVIAL_TEST = """
import sys
from pathlib import Path


def test_trivial():
    Path("modules.txt").write_text("\\n".join(sorted(sys.modules)))
"""
IMPORTTIME = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \| ( *)(\S+)")


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = "1"
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's second run finds the .pyc files
    return env


def import_time_once(env: dict[str, str]) -> tuple[float, list[str]]:
    """(cumulative ms of the plugin's import, modules imported under it) in a fresh process."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import pytest; import {PLUGIN}"],
        env=env, capture_output=True, text=True, check=True)
    pending: list[str] = []  # importtime prints a module after the modules it imported
    for line in proc.stderr.splitlines():
        match = IMPORTTIME.match(line)
        if match is None:
            continue
        name, depth = match.group(4), len(match.group(3))
        if depth == 0 and name != PLUGIN:
            pending = []
        elif depth == 0:
            return int(match.group(2)) / 1e3, sorted(pending)
        else:
            pending.append(name)
    raise RuntimeError(f"no importtime line for {PLUGIN}:\n{proc.stderr[-2000:]}")


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def pytest_once(env: dict[str, str], cwd: Path, enabled: bool) -> tuple[float, float, set[str]]:
    """(wall ms, CPU ms of `python -m pytest -q test_trivial.py`, modules loaded in the test).

    CPU time (user + system of the child) is less disturbed than wall time by other jobs on a
    shared machine.
    """
    args = [sys.executable, "-m", "pytest", "-q", "test_trivial.py"]
    if not enabled:
        args += ["-p", "no:perfkit"]
    cpu0, t0 = children_cpu_s(), time.perf_counter()
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    wall_ms, cpu_ms = (time.perf_counter() - t0) * 1e3, (children_cpu_s() - cpu0) * 1e3
    if proc.returncode != 0:
        raise RuntimeError(f"pytest failed ({proc.returncode}):\n{proc.stdout[-2000:]}")
    return wall_ms, cpu_ms, set((cwd / "modules.txt").read_text().split())


def summary(values: list[float]) -> dict[str, float]:
    return {"median_ms": statistics.median(values), "min_ms": min(values), "max_ms": max(values)}


def whole_runs(env: dict[str, str], runs: int) -> dict[str, Any]:
    """Interleaved pytest runs with and without the plugin: samples and the modules it adds."""
    samples: dict[str, dict[str, list[float]]] = {
        side: {"wall": [], "cpu": []} for side in ("with", "without")}
    with tempfile.TemporaryDirectory(prefix="pk-plugin-bench-") as tmp:
        cwd = Path(tmp)
        (cwd / "test_trivial.py").write_text(TRIVIAL_TEST)
        _, _, mods_with = pytest_once(env, cwd, True)  # warm-up (pyc, page cache)
        _, _, mods_without = pytest_once(env, cwd, False)
        for i in range(runs):
            for enabled in ((True, False) if i % 2 == 0 else (False, True)):
                wall_ms, cpu_ms, _ = pytest_once(env, cwd, enabled)
                side = samples["with" if enabled else "without"]
                side["wall"].append(wall_ms)
                side["cpu"].append(cpu_ms)
    return {"samples": samples, "added_modules": sorted(mods_with - mods_without)}


def compare(with_ms: list[float], without_ms: list[float]) -> dict[str, Any]:
    paired = sorted(a - b for a, b in zip(with_ms, without_ms, strict=True))
    ranks = median_ci_ranks(len(paired))
    ci = [paired[ranks[0]], paired[ranks[1]]] if ranks else None
    with_med, without_med = statistics.median(with_ms), statistics.median(without_ms)
    return {"with_plugin": summary(with_ms), "without_plugin": summary(without_ms),
            "added_ms": with_med - without_med, "ratio": with_med / without_med,
            "added_paired_median_ms": statistics.median(paired), "added_paired_ci95_ms": ci}


def callgrind_instructions(env: dict[str, str], cwd: Path, enabled: bool) -> int:
    """Instructions executed by the whole pytest run under valgrind (deterministic with a fixed
    PYTHONHASHSEED; unaffected by other jobs on the machine)."""
    args = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={cwd / 'callgrind.out'}",
            sys.executable, "-m", "pytest", "-q", "test_trivial.py"]
    if not enabled:
        args += ["-p", "no:perfkit"]
    proc = subprocess.run(args, cwd=cwd, env={**env, "PYTHONHASHSEED": "0"},
                          capture_output=True, text=True)
    match = re.search(r"Collected : (\d+)", proc.stderr)
    if proc.returncode != 0 or match is None:
        raise RuntimeError(f"valgrind failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return int(match.group(1))


def callgrind(env: dict[str, str], cpu_ms_without: float) -> dict[str, Any]:
    """Instructions with and without the plugin (twice each) and their difference, also as ms
    at the CPU-time rate of the timed runs without the plugin."""
    with tempfile.TemporaryDirectory(prefix="pk-plugin-bench-") as tmp:
        cwd = Path(tmp)
        (cwd / "test_trivial.py").write_text(TRIVIAL_TEST)
        counts = {side: [callgrind_instructions(env, cwd, side == "with") for _ in range(2)]
                  for side in ("with", "without")}
    with_n, without_n = min(counts["with"]), min(counts["without"])
    added = with_n - without_n
    return {"instructions": counts, "added_instructions": added,
            "added_fraction": added / without_n, "added_ms_at_cpu_rate": added / without_n * cpu_ms_without}


def measure(runs: int, with_callgrind: bool) -> dict[str, Any]:
    env = child_env()
    import_time_once(env)  # writes the .pyc files first, as a user's earlier run would have
    imports = [import_time_once(env) for _ in range(runs)]
    whole = whole_runs(env, runs)
    samples = whole["samples"]
    added = whole["added_modules"]
    cpu = compare(samples["with"]["cpu"], samples["without"]["cpu"])
    grind = callgrind(env, cpu["without_plugin"]["median_ms"]) if with_callgrind else None
    return {
        "machine": machine(), "python": platform.python_version(), "runs": runs,
        "load_average_end": os.getloadavg()[0],
        "import": {**summary([ms for ms, _ in imports]), "modules": imports[0][1]},
        "pytest_wall": compare(samples["with"]["wall"], samples["without"]["wall"]),
        "pytest_cpu": cpu,
        "callgrind": grind,
        "modules_added_to_a_pytest_run": added,
        "heavy_modules_added": [m for m in added if m.split(".")[0] in HEAVY],
        "samples_ms": {"import": [ms for ms, _ in imports], **samples},
    }


def _ci(c: dict[str, Any]) -> str:
    ci = c["added_paired_ci95_ms"]
    return f" (95% CI {ci[0]:+.1f} to {ci[1]:+.1f})" if ci else ""


def _callgrind_lines(g: dict[str, Any] | None) -> list[str]:
    if g is None:
        return ["Instruction counts: not measured (pass --callgrind; needs valgrind).", ""]
    counts = g["instructions"]
    return [
        "Instruction counts of the whole run under valgrind --tool=callgrind (PYTHONHASHSEED=0, "
        "two runs each; not disturbed by other jobs): with the plugin "
        f"{', '.join(f'{n:,}' for n in counts['with'])}; without "
        f"{', '.join(f'{n:,}' for n in counts['without'])}. The plugin adds "
        f"{g['added_instructions']:,} instructions ({100 * g['added_fraction']:.2f}% of the "
        f"run), about {g['added_ms_at_cpu_rate']:.1f} ms at the CPU time of the timed runs.",
        "",
    ]


def markdown(r: dict[str, Any]) -> str:
    imp, wall, cpu, grind = r["import"], r["pytest_wall"], r["pytest_cpu"], r["callgrind"]
    run_ms = grind["added_ms_at_cpu_rate"] if grind else cpu["added_paired_median_ms"]
    judged_by = "instruction count" if grind else "paired CPU difference"
    heavy = ", ".join(r["heavy_modules_added"]) or "none"

    def row(what: str, s: dict[str, float]) -> str:
        return f"| {what} | {s['median_ms']:.1f} | {s['min_ms']:.1f} - {s['max_ms']:.1f} |"

    def added(name: str, c: dict[str, Any]) -> str:
        return (f"- {name}: {c['added_ms']:+.1f} ms (difference of the medians, ratio "
                f"{c['ratio']:.3f}); median of the paired differences "
                f"{c['added_paired_median_ms']:+.1f} ms{_ci(c)}")

    return "\n".join([
        "# Import cost of the perfkit pytest plugin (benchmarks/pytest_plugin_import.py)",
        "",
        f"Machine: {r['machine']}; load average {r['load_average_end']:.1f} at the end. "
        f"Fresh subprocesses, one thread, medians of {r['runs']} runs (min - max); the "
        "pytest runs with and without the plugin are interleaved.",
        "",
        "| measurement | median ms | min - max ms |",
        "|---|---:|---:|",
        row(f"`import {PLUGIN}` after `import pytest` (-X importtime, cumulative)", imp),
        row("`pytest -q` of one trivial test, plugin loaded: wall", wall["with_plugin"]),
        row("`pytest -q -p no:perfkit`, same test: wall", wall["without_plugin"]),
        row("`pytest -q`, plugin loaded: CPU (user + system)", cpu["with_plugin"]),
        row("`pytest -q -p no:perfkit`: CPU (user + system)", cpu["without_plugin"]),
        "",
        "What the plugin adds to a whole run, timed (on a shared machine the run-to-run spread "
        "of a whole run is larger than the plugin's cost; see the interval):",
        "",
        added("wall", wall),
        added("CPU", cpu),
        "",
        *_callgrind_lines(grind),
        f"Goal < {GOAL_MS:.0f} ms: import {imp['median_ms']:.1f} ms, whole run {run_ms:.1f} ms "
        f"(by {judged_by}): {'met' if max(imp['median_ms'], run_ms) < GOAL_MS else 'NOT met'}.",
        "",
        f"Modules the plugin import brings in: {', '.join(imp['modules']) or 'none'}.",
        f"Modules the plugin adds to a pytest session: "
        f"{', '.join(r['modules_added_to_a_pytest_run']) or 'none'}; heavy ones among them: "
        f"{heavy}.",
        "",
    ])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=21, help="runs per measurement (>= 7)")
    ap.add_argument("--callgrind", action="store_true",
                    help="also count the instructions of a whole run under valgrind (~3 min)")
    ap.add_argument("--out", type=Path, default=None,
                    help="output path without suffix (default benchmarks/results/"
                         "pytest_plugin_import-<machine>)")
    ap.add_argument("--smoke", action="store_true", help="one run each, no results written unless --out")
    args = ap.parse_args()
    if args.smoke:
        args.runs, args.callgrind = 1, False
    elif args.runs < 7:
        ap.error("--runs must be >= 7")
    result = measure(args.runs, args.callgrind)
    text = markdown(result)
    print(text)
    tag = "".join(ch if ch.isalnum() else "-" for ch in platform.node() or "machine")[:40]
    if args.smoke and not args.out:
        return 0 if not result["heavy_modules_added"] else 1
    out = args.out or REPO / "benchmarks" / "results" / f"pytest_plugin_import-{tag}"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text(text)
    out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    return 0 if not result["heavy_modules_added"] else 1


if __name__ == "__main__":
    sys.exit(main())
