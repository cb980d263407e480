"""Record HTA's own numbers on the shared real traces, for tests/analyzers/test_hta_agreement.py.

Runs Holistic Trace Analysis (in the benchmark venv, never perfkit's) on every trace in
../shared/bench/traces and writes tests/analyzers/hta_reference.json: per trace, HTA's
temporal breakdown (idle / compute / non-compute, us and %) and how many rows its launch
statistics and idle breakdown produce. Setup and run (from the repository root):

    python3 -m venv .venv-bench && .venv-bench/bin/pip install HolisticTraceAnalysis
    .venv-bench/bin/python benchmarks/analyzer_hta_reference.py
    python -m benchmarks.analyzer_hta_reference --smoke --out FILE   # the smallest trace only

Without HTA installed it says so and exits 0 (nothing to record).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import sys
import warnings
from importlib.metadata import version
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRACES = REPO.parent / "shared" / "bench" / "traces"
OUT = REPO / "tests" / "analyzers" / "hta_reference.json"


def reference(path: Path) -> dict[str, object]:
    from hta.trace_analysis import TraceAnalysis

    analysis = TraceAnalysis(trace_files={0: str(path)}, trace_dir=str(path.parent))
    temporal = analysis.get_temporal_breakdown(visualize=False).iloc[0]
    launch = analysis.get_cuda_kernel_launch_stats(visualize=False)[0]
    idle = analysis.get_idle_time_breakdown(visualize=False)[0]
    keys = (
        "idle_time(us)", "compute_time(us)", "non_compute_time(us)", "kernel_time(us)",
        "idle_time_pctg", "compute_time_pctg", "non_compute_time_pctg",
    )  # fmt: skip
    return {
        "temporal": {k: float(temporal[k]) for k in keys},
        "launch_stats_rows": len(launch),
        "launch_delay_median_us": float(launch["launch_delay"].median()) if len(launch) else None,
        "idle_streams": sorted(int(s) for s in idle["stream"].unique()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help="the JSON to write (default: %(default)s)")
    parser.add_argument("--smoke", action="store_true", help="the smallest trace only (checks the script)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    if not TRACES.is_dir():
        sys.exit(f"{TRACES} is absent")
    if importlib.util.find_spec("hta") is None:
        print("analyzer_hta_reference: skipped: HolisticTraceAnalysis is not installed in this Python "
              "(install it in .venv-bench, see the docstring)")
        return
    traces = sorted(TRACES.glob("*.json.gz"), key=lambda p: p.stat().st_size if args.smoke else 0)
    result = {
        "tool": f"HolisticTraceAnalysis {version('HolisticTraceAnalysis')}",
        "pandas": version("pandas"),
        "traces": {p.name: reference(p) for p in sorted(traces[:1] if args.smoke else traces)},
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
