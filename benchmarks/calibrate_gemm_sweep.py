"""The GEMM sweep placed on the measured and the datasheet roof of this device.

Run:  PYTHONPATH=. python -m benchmarks.calibrate_gemm_sweep [--device cpu|cuda] [--spec FILE]
      [--recalibrate] [--figure FILE.html]
      PYTHONPATH=. python -m benchmarks.calibrate_gemm_sweep --smoke --out FILE   (a quick calibration,
      two fp32 points: checks the script end to end; $PERFKIT_HOME holds the calibration)

1. the device's stored calibration (this machine's `perfkit calibrate`; measured when absent or
   with --recalibrate; CPU: one thread, as the CPU spec runs);
2. `perfkit profile` of the example GEMM sweep (examples/gemm-cpu.yaml, or gemm-h100.yaml on a GPU);
3. every point placed: intensity, achieved, attainable, % of roof, bound, against both roofs.
Writes benchmarks/results/calibrate_gemm_sweep_<device>.json and prints the table and a summary:
how many points sit above 100% of the measured roof (a roof measured too low, or a point served
from cache), the best % of roof per dtype, and the measured / datasheet ratio of each ceiling.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--spec", default=None)
    parser.add_argument("--recalibrate", action="store_true")
    parser.add_argument("--figure", default=None, help="also write the roofline figure (HTML, ~5 MB)")
    parser.add_argument("--out", default=None)
    parser.add_argument("--smoke", action="store_true", help="quick calibration (not stored), two fp32 points")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))

    from perfkit.core.record import load_run
    from perfkit.roofline.calibrate.detect import detect
    from perfkit.roofline.calibrate.run import calibrate
    from perfkit.roofline.calibration import load_for, save
    from perfkit.roofline.ceilings import roof_labels, roofs_for
    from perfkit.roofline.figure import roofline_figure
    from perfkit.roofline.place import place_points
    from perfkit.roofline.table import placement_text

    cpu = args.device == "cpu"
    threads = 1 if cpu else None
    info = detect(args.device, threads=threads)
    cal = None if args.recalibrate or args.smoke else load_for(info)
    if cal is None:
        print(f"calibrating {info.name} ...", file=sys.stderr)
        cal = calibrate(args.device, threads=threads, dtypes=["fp32"] if args.smoke else None, quick=args.smoke)
        if not args.smoke:
            save(cal)
    with tempfile.TemporaryDirectory() as tmp:
        spec = args.spec or _default_spec(cpu, args.smoke, Path(tmp))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])), "OMP_NUM_THREADS": "1" if cpu else os.environ.get("OMP_NUM_THREADS", "")}
        cmd = [sys.executable, "-m", "perfkit", "profile", spec, "--out", f"{tmp}/runs", "--quiet", "--device", args.device]
        subprocess.run(cmd, check=True, cwd=REPO, env=env)
        run_dir = next(Path(tmp, "runs").iterdir())
        run = load_run(run_dir)
    roofs = roofs_for(info, cal)
    labels = roof_labels(roofs)
    placed = place_points(run, roofs)
    print(f"{info.name}: {len(placed)} GEMM points of {Path(spec).name}")
    for label in labels:
        print(f"  {label} roof: {roofs[label].source}{' ' + '; '.join(roofs[label].flags) if roofs[label].flags else ''}")
    print(placement_text(placed, labels))
    summary = _summary(placed, labels, roofs)
    for line in summary["lines"]:
        print(line)
    if args.smoke and not args.out:
        return 0  # a smoke run's numbers are not results
    out = Path(args.out) if args.out else REPO / "benchmarks" / "results" / f"calibrate_gemm_sweep_{args.device.replace(':', '')}.json"
    record = {
        "device": info.to_dict(),
        "spec": str(Path(spec).relative_to(REPO)) if Path(spec).is_relative_to(REPO) else spec,
        "calibration": cal.to_dict(),
        "roofs": {k: r.to_dict() for k, r in roofs.items()},
        "summary": {k: v for k, v in summary.items() if k != "lines"},
        "points": json.loads(placed.to_json(orient="records")),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"results: {out}")
    if args.figure:
        fig = roofline_figure(placed, roofs, title=f"GEMM sweep on {info.name}")
        Path(args.figure).write_text(fig.to_html(include_plotlyjs=True))
        print(f"figure: {args.figure}")
    return 0


SMOKE_SPEC = """\
name: gemm-smoke
device: cpu
seed: 0
cpu_threads: 1
timing: {warmup_s: 0.01, budget_s: 0.05, min_reps: 5, target_rel_ci: 0.1}
profile: {torch_profiler: false}
workloads:
  - {kind: gemm, name: square, m: [64, 128], n: 128, k: 128, dtypes: [fp32]}
"""


def _default_spec(cpu: bool, smoke: bool, tmp: Path) -> str:
    if smoke:
        path = tmp / "gemm-smoke.yaml"
        path.write_text(SMOKE_SPEC.replace("device: cpu", "device: cpu" if cpu else "device: cuda"))
        return str(path)
    return str(REPO / "examples" / ("gemm-cpu.yaml" if cpu else "gemm-h100.yaml"))


def _summary(placed: Any, labels: list[str], roofs: Any) -> dict[str, Any]:
    lines, out = [], {}
    for label in labels:
        pct = placed[f"pct_of_roof_{label}"]
        placed_ok = pct.notna()
        over = placed[placed_ok & (pct > 100.0)]
        best = placed[placed_ok].groupby("dtype")[f"pct_of_roof_{label}"].max().round(1).to_dict()
        bounds = placed[placed_ok][f"bound_{label}"].value_counts().to_dict()
        out[label] = {"placed": int(placed_ok.sum()), "over_100pct": over["key"].tolist(), "best_pct_by_dtype": best,
                      "bounds": bounds}
        lines.append(f"{label}: {int(placed_ok.sum())} placed ({bounds}); best % of roof by dtype {best}; "
                     f"{len(over)} above 100%")
    if "measured" in roofs and "datasheet" in roofs:
        m, d = roofs["measured"], roofs["datasheet"]
        ratios = {f"peak.{k}": m.peak_flop_per_s[k] / v for k, v in d.peak_flop_per_s.items() if k in m.peak_flop_per_s}
        if m.bandwidth("dram") and d.bandwidth("dram"):
            ratios["dram"] = m.bandwidth("dram") / d.bandwidth("dram")
        out["measured_over_datasheet"] = ratios
        lines.append("measured / datasheet: " + ", ".join(f"{k} {v:.3f}" for k, v in ratios.items()))
    return {**out, "lines": lines}


if __name__ == "__main__":
    raise SystemExit(main())
