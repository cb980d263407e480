"""Nsight Compute checks for the GPU validation (benchmarks/gpu_validate.py): metric names, FLOP counts.

metrics  `ncu --query-metrics --chip gh100` lists the base metrics a chip knows; every metric
         perfkit requests (roofline.ncu.roofline_metrics for the chip's compute capability)
         must be one of them once its roll-up (.sum, .avg, ...) is taken off. ncu needs no GPU
         for this, so it runs before the ncu pass and names a bad metric without spending one.
flops    a `perfkit profile --ncu` run directory: per GEMM dtype, the tensor-core operations ncu
         counted (roofline.ncu_kernels: `sm__ops_path_tensor_src_<dtype>*`, read as flop) against
         2 M N K per GEMM point of that dtype. A ratio of 0.5 would mean ncu counts
         multiply-adds, not flop, and every ncu-measured flop/s in perfkit would be half.

Run: python -m benchmarks.ncu_checks metrics [--chip gh100] [--details FILE]
     python -m benchmarks.ncu_checks flops RUN_DIR [--dtypes bf16,fp8] [--details FILE]
Exit 0 when every check holds, 1 when one does not, 2 when there is nothing to check.
     python -m benchmarks.ncu_checks metrics --smoke    # without ncu: the metrics perfkit would ask
                                                        # for, the skip reason, exit 0
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

CHIP_CC = {"ga100": "8.0", "ad102": "8.9", "gh100": "9.0", "gb100": "10.0"}  # ncu chip -> compute capability
FLOP_TOLERANCE = 0.02  # tile-aligned shapes: ncu's count should be exact
_METRIC_LINE = re.compile(r"^\s*([a-z0-9]+__[a-z0-9_]+)\b")


def base_metric(name: str) -> str:
    """`dram__bytes_read.sum` -> `dram__bytes_read` (roll-up and sub-metric suffixes dropped)."""
    return name.split(".", 1)[0]


def known_metrics(query_output: str) -> set[str]:
    """The base metric names in the output of `ncu --query-metrics` (one per line, name first)."""
    return {m.group(1) for line in query_output.splitlines() if (m := _METRIC_LINE.match(line))}


def missing_metrics(requested: Iterable[str], known: set[str]) -> list[str]:
    return [m for m in requested if base_metric(m) not in known]


def check_metrics(chip: str, ncu: str | None = None) -> tuple[bool, dict[str, Any]]:
    from perfkit.roofline.ncu import find_ncu, roofline_metrics

    exe = ncu or find_ncu()
    if exe is None:
        return False, {"error": "ncu not found on PATH or in /usr/local/cuda/bin"}
    cc = CHIP_CC.get(chip)
    proc = subprocess.run([exe, "--query-metrics", "--chip", chip], capture_output=True, text=True,
                          timeout=120, check=False)
    known = known_metrics(proc.stdout)
    requested = list(roofline_metrics(cc))
    missing = missing_metrics(requested, known)
    details: dict[str, Any] = {"chip": chip, "compute_capability": cc, "ncu": exe, "rc": proc.returncode,
                               "known": len(known), "requested": requested, "missing": missing}
    if proc.returncode != 0 or not known:
        details["error"] = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        return False, details
    return not missing, details


def gemm_expectations(points: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per dtype: the GEMM points that ran and their 2 M N K (x batch) in total."""
    out: dict[str, dict[str, Any]] = {}
    for p in points:
        if p.get("kind") != "gemm" or p.get("status") != "ok":
            continue
        q = p.get("params") or {}
        flop = 2.0 * q["m"] * q["n"] * q["k"] * q.get("batch", 1)
        row = out.setdefault(q["dtype"], {"points": [], "expected_flop": 0.0})
        row["points"].append(p.get("key"))
        row["expected_flop"] += flop
    return out


def flop_rows(expected: dict[str, dict[str, Any]], measured: dict[str, float], dtypes: Iterable[str],
              tolerance: float = FLOP_TOLERANCE) -> list[dict[str, Any]]:
    """One row per dtype checked: expected vs ncu-counted flop, ratio, verdict."""
    rows = []
    for dtype in dtypes:
        exp = expected.get(dtype)
        got = measured.get(dtype)
        row: dict[str, Any] = {"dtype": dtype, "points": exp["points"] if exp else [],
                               "expected_flop": exp["expected_flop"] if exp else None, "ncu_flop": got}
        if not exp:
            row.update(ok=False, problem=f"no {dtype} GEMM point ran in the ncu pass")
        elif not got:
            row.update(ok=False, problem=f"ncu counted no {dtype} tensor-core operations")
        else:
            ratio = got / exp["expected_flop"]
            row.update(ratio=ratio, ok=abs(ratio - 1.0) <= tolerance)
        rows.append(row)
    return rows


def check_flops(run_dir: Path, dtypes: list[str]) -> tuple[bool, dict[str, Any]]:
    from perfkit.roofline.ncu_csv import load_csv
    from perfkit.roofline.ncu_kernels import tensor_flop

    csv = run_dir / "ncu" / "ncu.csv"
    children = sorted((run_dir / "ncu" / "runs").glob("*/run.json"))  # the ncu pass's own record
    record = children[-1] if children else run_dir / "run.json"
    if not csv.is_file() or not record.is_file():
        return False, {"error": f"{run_dir}: no ncu/ncu.csv or run record; run `perfkit profile --ncu` first"}
    points = json.loads(record.read_text()).get("points", [])
    measured = {dtype: float(series.sum()) for dtype, series in tensor_flop(load_csv(csv)).items()}
    rows = flop_rows(gemm_expectations(points), measured, dtypes)
    return all(r["ok"] for r in rows), {"run_dir": str(run_dir), "record": str(record), "csv": str(csv),
                                        "tolerance": FLOP_TOLERANCE, "rows": rows}


def smoke_metrics(chip: str) -> int:
    """The metrics check where ncu exists; elsewhere the metrics perfkit would request and why not."""
    from perfkit.roofline.ncu import find_ncu, roofline_metrics

    if find_ncu() is not None:
        ok, details = check_metrics(chip)
        print(f"ncu metrics for {chip}: missing: {', '.join(details.get('missing', [])) or 'none'}")
        return 0 if ok else 1
    print(f"ncu metrics for {chip}: {len(roofline_metrics(CHIP_CC[chip]))} requested; check skipped: ncu not "
          "found on PATH or in /usr/local/cuda/bin")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ncu_checks", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="check", required=True)
    m = sub.add_parser("metrics", help="perfkit's ncu metrics exist for a chip")
    m.add_argument("--chip", default="gh100", choices=sorted(CHIP_CC))
    m.add_argument("--smoke", action="store_true", help="without ncu: list the requested metrics, exit 0")
    f = sub.add_parser("flops", help="ncu's tensor-core flop vs 2 M N K")
    f.add_argument("run_dir", type=Path, help="a `perfkit profile --ncu` run directory")
    f.add_argument("--dtypes", default="bf16,fp8", help="GEMM dtypes to check (default bf16,fp8)")
    for p in (m, f):
        p.add_argument("--details", type=Path, help="write the findings as JSON here")
    args = parser.parse_args(argv)
    if args.check == "metrics" and args.smoke:
        return smoke_metrics(args.chip)
    if args.check == "metrics":
        ok, details = check_metrics(args.chip)
        print(f"ncu metrics for {args.chip}: {len(details.get('requested', []))} requested, "
              f"{details.get('known', 0)} known to ncu, missing: {', '.join(details.get('missing', [])) or 'none'}")
    else:
        ok, details = check_flops(args.run_dir, [d for d in args.dtypes.split(",") if d])
        for r in details.get("rows", []):
            ratio = f"{r['ratio']:.4f}" if "ratio" in r else "-"
            print(f"{r['dtype']}: expected {r['expected_flop']} flop, ncu {r['ncu_flop']}, ratio {ratio}, "
                  f"{'ok' if r['ok'] else 'FAIL'} {r.get('problem', '')}".rstrip())
    if "error" in details:
        print(f"error: {details['error']}", file=sys.stderr)
    if args.details:
        args.details.write_text(json.dumps({"ok": ok, **details}, indent=1))
    if "error" in details and not details.get("requested") and not details.get("rows"):
        return 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
