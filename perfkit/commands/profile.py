"""`perfkit profile SPEC.yaml`: run every point of a model.yaml and write a run directory."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfkit.commands._run_labels import add_labels, add_recording, labels
from perfkit.core.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK, EXIT_POINTS_FAILED

if TYPE_CHECKING:
    from perfkit.pipeline.profile import ProfileHooks


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
    add_recording(p)
    add_labels(p, "the GPU label to record instead of the GPU seen")
    p.add_argument("--no-analyze", action="store_true", help="do not run the trace analyzers after the sweep")
    p.add_argument("--ncu", action="store_true",
                   help="after the sweep, collect Nsight Compute roofline metrics per point (needs ncu and a GPU)")
    p.add_argument("--ncu-clock-control", choices=("base", "none"), default="base",
                   help="ncu's clock control (default base: clocks locked to base, as ncu does)")
    p.add_argument("--nproc", type=_positive, default=None, metavar="N",
                   help="run under torchrun with N ranks on this node (replaces the spec's launch.nproc; "
                   "see docs/multi-gpu.md)")
    p.add_argument("--nsys", action="store_true",
                   help="after the sweep, run it again under Nsight Systems (one report, an NVTX range per "
                        "point), export SQLite and store its analysis tables with the run (needs nsys)")
    return p


def _positive(text: str) -> int:
    value = int(text) if text.strip().isdigit() else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer; give the number of ranks, e.g. 2")
    return value


def run(args: argparse.Namespace) -> int:
    from perfkit.pipeline.post_run import PostRunOptions
    from perfkit.pipeline.profile import ProfileHooks, profile
    from perfkit.pipeline.spec import load_spec
    from perfkit.pipeline.sweep import ProfileOptions

    if not args.no_store:  # a store that would lose the run is refused before anything else
        from perfkit.store.url import check_persistent

        check_persistent(args.db)
    if args.ncu:  # ncu profiles only what lies in perfkit's NVTX ranges
        _refuse_ncu_without_nvtx()
    if args.nsys:
        from perfkit.analyzers.loaders.nsys.export import find_nsys
        from perfkit.core.errors import DeviceError

        if find_nsys() is None:
            raise DeviceError("--nsys: nsys (Nsight Systems) not found on PATH, $CUDA_HOME/bin or /usr/local/cuda/bin; "
                              "install it or drop --nsys")
    spec = load_spec(args.spec, args.nproc)  # the one parse: child processes get it as data
    show = not args.quiet
    if show:  # `perfkit doctor`'s load / thread checks, before a long sweep
        from perfkit.profiler.doctor.run import quick_cpu_warnings

        for line in quick_cpu_warnings(threads=spec.cpu_threads):
            print(f"perfkit: warning: {line}", file=sys.stderr)
    options = ProfileOptions(out_dir=args.out, device=args.device, quick=args.quick, repo=args.repo,
                             labels=labels(args))
    post = PostRunOptions(analyze=not args.no_analyze, ncu=args.ncu, ncu_clock_control=args.ncu_clock_control,
                          nsys=args.nsys, store=not args.no_store, db_url=args.db)
    outcome = profile(spec, args.spec, options, post, _hooks() if show else ProfileHooks())
    for message in outcome.messages if show else []:
        print(f"perfkit: {message}")
    if show:
        from perfkit.reports.console import noise_summary

        noise = noise_summary(outcome.run)
        if noise:
            print(f"perfkit: {noise}")
    if outcome.stored is False and not show:  # a failed store write is an error in every mode
        print(f"perfkit: {outcome.messages[-1]}", file=sys.stderr)
    print(outcome.run_dir)
    final, n_points = outcome.run, outcome.n_points
    if final.status == "interrupted" or outcome.interrupted_step:
        by = final.artifacts.interrupted_by or "Ctrl-C"
        print(f"perfkit: interrupted ({by}); {len(final.points)} of {n_points} points recorded", file=sys.stderr)
        return outcome.signal_exit_code or EXIT_INTERRUPTED
    counts = final.counts
    if counts.get("failed"):
        print(f"perfkit: {counts['failed']} of {n_points} points failed (see run.json)", file=sys.stderr)
        return EXIT_POINTS_FAILED
    if outcome.stored is False:
        return EXIT_BAD_INPUT
    return EXIT_OK


def _refuse_ncu_without_nvtx() -> None:
    """Before the sweep: without working NVTX ranges the ncu pass would profile nothing."""
    from perfkit.core.errors import DeviceError
    from perfkit.profiler.nvtx_ranges import nvtx_problem

    problem = nvtx_problem()
    if problem:
        raise DeviceError(f"--ncu: {problem} (or drop --ncu)")


def _hooks() -> ProfileHooks:
    """What the terminal shows while a profile runs: the run line, a progress bar, the summary."""
    from perfkit.core.record import Run
    from perfkit.pipeline.profile import ProfileHooks
    from perfkit.pipeline.progress import point_progress

    def started(run: Run, run_dir: Path, n_points: int) -> None:
        print(f"perfkit: run {run.run_id}: {n_points} points on {run.device} -> {run_dir}")

    def sweep_done(run: Run) -> None:
        from rich.console import Console

        from perfkit.core.terminal import terminal_width
        from perfkit.reports.console import summary_table

        width = terminal_width()  # $COLUMNS, the terminal's, else 80
        Console(soft_wrap=False, width=width).print(summary_table(run, width))

    return ProfileHooks(started=started, progress=lambda n: point_progress(n, enabled=sys.stderr.isatty()),
                        sweep_done=sweep_done, show=True)
