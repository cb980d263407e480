"""`perfkit serve-sweep SPEC`: start the server of SPEC's serving workload per configuration of its
`server:` block (command, env, readiness, grid, cache reset, repeats), run the workload's stages
(or its capacity search) against each start, stop it, and draw the front: output tok/s per GPU
against tok/s per user, every stage of every configuration, the Pareto-optimal ones marked
(docs/serving.md "Sweeps that start the server").

The sweep's state is SWEEP_DIR/sweep.json (rewritten after each configuration); `--resume`
continues a sweep that was stopped or killed with the configurations not finished; `--dry-run`
prints the configurations and their commands and starts nothing. Each run is stored like
serve-bench's; the front is also SWEEP_DIR/front.html.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from perfkit.commands._run_labels import add_labels, add_recording, labels
from perfkit.core.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_POINTS_FAILED


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "serve-sweep", help="start a server per configuration, load-test each, draw the throughput/interactivity front",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("spec", type=Path, help="model.yaml with one `kind: serving` workload that has a server block")
    p.add_argument("--out", type=Path, default=None, help="the sweep's directory (default: runs/sweep-NAME)")
    p.add_argument("--resume", action="store_true",
                   help="continue the sweep in --out: run the configurations not finished, keep the others")
    p.add_argument("--dry-run", action="store_true", help="print the configurations and their commands; start nothing")
    add_recording(p, "the runs")
    p.add_argument("--format", choices=("text", "json"), default="text", help="json: the sweep's state on stdout")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--wide", action="store_true", help="print every column")
    add_labels(p, "the GPU behind the server")
    return p


def run(args: argparse.Namespace) -> int:
    from perfkit.core.atomic import write_bytes_atomic
    from perfkit.core.terminal import terminal_safe, terminal_width
    from perfkit.pipeline.post_run import PostRunOptions
    from perfkit.pipeline.server_sweep.one import SweepInterrupted, SweepOptions
    from perfkit.pipeline.server_sweep.sweep import (
        dry_run_lines,
        run_sweep,
        sweep_dir_default,
        sweep_workload,
    )
    from perfkit.pipeline.spec import load_spec
    from perfkit.pipeline.sweep import ProfileOptions
    from perfkit.reports.serving.sweep_html import sweep_html
    from perfkit.reports.serving.sweep_text import sweep_text

    spec = load_spec(args.spec)
    sweep_workload(spec, str(args.spec))
    if args.dry_run:
        for line in dry_run_lines(spec, str(args.spec)):
            print(terminal_safe(line))
        return EXIT_OK
    if not args.no_store:
        from perfkit.store.url import check_persistent

        check_persistent(args.db)
    sweep_dir = args.out or sweep_dir_default(spec, Path("runs"))
    show = not args.quiet and args.format == "text"

    def say(line: str) -> None:
        if show:
            print(f"perfkit: {terminal_safe(line)}", file=sys.stderr)

    opts = SweepOptions(sweep_dir=sweep_dir, spec_path=args.spec,
                        profile=ProfileOptions(out_dir=sweep_dir / "runs", device="cpu", quick=False, repo=args.repo,
                                               labels=labels(args)),
                        post=PostRunOptions(analyze=False, store=not args.no_store, db_url=args.db), say=say)
    try:
        result = run_sweep(spec, opts, args.resume)
    except KeyboardInterrupt as exc:
        code = exc.exit_code if isinstance(exc, SweepInterrupted) else getattr(exc, "signum", 2) + 128
        print(f"perfkit: sweep interrupted; `perfkit serve-sweep {args.spec} --out {sweep_dir} --resume` "
              "continues it", file=sys.stderr)
        return code if code > 128 else EXIT_INTERRUPTED
    state = result.state
    write_bytes_atomic(sweep_dir / "front.html", sweep_html(state).encode())
    if result.kept:
        say(f"resumed: kept {len(result.kept)} finished configuration(s): {', '.join(result.kept)[:300]}")
    if args.format == "json":
        print(json.dumps(state, indent=1))
    elif not args.quiet:
        print(sweep_text(state, None if args.wide else terminal_width()))
        print(sweep_dir)
    failed = [c for c in state["configs"] if c.get("status") == "failed"]
    if failed:
        print(f"perfkit: {len(failed)} of {len(state['configs'])} configurations failed: "
              f"{terminal_safe(str(failed[0].get('name')))}: {terminal_safe(str(failed[0].get('error')))[:300]}",
              file=sys.stderr)
        return EXIT_POINTS_FAILED
    return EXIT_OK
