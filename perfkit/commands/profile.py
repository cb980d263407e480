"""`perfkit profile SPEC.yaml`: run every point of a model.yaml and write a run directory."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from perfkit.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_POINTS_FAILED


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "profile",
        help="run the workloads of a model.yaml and record a run",
        description="Run every sweep point of SPEC with GPU-correct timing, NVTX ranges, a "
        "torch.profiler trace and a numerics check; write DIR/<run_id>/run.json.",
    )
    p.add_argument("spec", type=Path, help="the model.yaml to run (see docs/spec.md)")
    p.add_argument("--out", type=Path, default=Path("runs"), help="parent directory of the run (default: runs/)")
    p.add_argument("--device", choices=("auto", "cuda", "cpu"), default=None,
                   help="where to run (default: the spec's device, else auto)")
    p.add_argument("--quick", action="store_true",
                   help="5x shorter warmup and budgets, CI target >= ±3%%, one profiled iteration")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no table")
    p.add_argument("--repo", type=Path, default=Path("."),
                   help="git repository whose commit is recorded (default: the working directory)")
    p.add_argument("--db", default=None,
                   help="results store URL (default: $PERFKIT_DB, else sqlite:///perfkit.db)")
    p.add_argument("--no-store", action="store_true", help="do not store the run in the results store")
    p.add_argument("--no-analyze", action="store_true", help="do not run the trace analyzers after the sweep")
    p.add_argument("--ncu", action="store_true",
                   help="after the sweep, collect Nsight Compute roofline metrics per point (needs ncu and a GPU)")
    p.add_argument("--ncu-clock-control", choices=("base", "none"), default="base",
                   help="ncu's clock control (default base: clocks locked to base, as ncu does)")
    p.add_argument("--ncu-pass", action="store_true", help=argparse.SUPPRESS)
    return p


def run(args: argparse.Namespace) -> int:
    from perfkit.spec import load_spec
    from profiler.orchestrator import ProfileOptions, execute, plan_for, start_run
    from profiler.progress import point_progress

    spec = load_spec(args.spec)
    options = ProfileOptions(out_dir=args.out, device=args.device, quick=args.quick, repo=args.repo)
    run_record, run_dir, points = start_run(spec, args.spec, options)
    show = not args.quiet
    if show:
        print(f"perfkit: run {run_record.run_id}: {len(points)} points on {run_record.device} -> {run_dir}")
    with point_progress(len(points), enabled=show and sys.stderr.isatty()) as advance:
        final = execute(run_record, run_dir, points, plan_for(spec, args.quick, args.ncu_pass), spec.seed,
                        advance)
    if args.ncu_pass:  # the child of --ncu: nothing else to do
        print(run_dir)
        return EXIT_OK
    if show:
        from rich.console import Console

        from reports.console import summary_table

        Console(soft_wrap=False, width=200 if not sys.stdout.isatty() else None).print(summary_table(final))
    from workloads.tune_report import after_profile  # tune.csv / tune.json for `tune:` workloads

    final = after_profile(spec, final, run_dir, show)
    if final.status != "interrupted":
        from profiler.post_run import PostRunOptions, post_run

        final, messages = post_run(spec, final, run_dir, PostRunOptions(
            analyze=not args.no_analyze, ncu=args.ncu, ncu_clock_control=args.ncu_clock_control,
            store=not args.no_store, db_url=args.db))
        for message in messages if show else []:
            print(f"perfkit: {message}")
    print(run_dir)
    if final.status == "interrupted":
        print(f"perfkit: interrupted; {len(final.points)} of {len(points)} points recorded", file=sys.stderr)
        return EXIT_INTERRUPTED
    counts = final.counts
    if counts.get("failed"):
        print(f"perfkit: {counts['failed']} of {len(points)} points failed (see run.json)", file=sys.stderr)
        return EXIT_POINTS_FAILED
    return EXIT_OK
