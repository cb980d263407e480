"""`perfkit report RUN [--vs BASE] --format html|md`: a run's report.

html: one self-contained file (plotly.js and every figure inline; opens offline), written to
RUN/report.html unless --out names another path. md: a short GitHub-flavoured summary for CI,
printed (or written to --out). With --vs BASE the report opens with the gate's comparison of
RUN (the candidate, after) against BASE (the baseline, before), as `perfkit compare BASE RUN`
gives it: per point and metric a ratio RUN / BASE, its interval, p-value and verdict, with the
run-to-run spread of each metric from the store's history when there is a store. BASE is a run
directory, a stored run id, a commit, or BRANCH@GPU[:SPEC] (the latest stored run of RUN's spec,
or of SPEC); BASE with nothing in common with RUN is an error (exit 2). Traces and tables that
run.json names are read only inside RUN: a path leading outside it (absolute, `../..`) is not
read, with a warning on stderr and a note in the report.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from perfkit.commands._store_args import add_comparison_options, add_db
from perfkit.commands._types import run_path, run_selector
from perfkit.core.errors import EXIT_OK


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "report",
        help="write a run's report: self-contained HTML or a Markdown summary",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("run_dir", metavar="RUN", type=run_path, help="run directory (or its run.json)")
    p.add_argument("--vs", metavar="BASE", default=None, type=run_selector,
                   help="baseline (the before side; RUN is the candidate): run directory, stored run id, commit, "
                        "or BRANCH@GPU[:SPEC] (its latest run of RUN's spec, or of SPEC)")
    p.add_argument("--format", choices=("html", "md"), default="html", help="report format (default: html)")
    p.add_argument("--out", type=Path, default=None,
                   help="output file (default: RUN/report.html for html, standard output for md)")
    p.add_argument("--no-kernels", action="store_true", help="skip the kernel tables (no trace is read)")
    add_db(p)
    add_comparison_options(p)
    return p


def run(args: argparse.Namespace) -> int:
    from perfkit.commands._out_file import checked_out_file
    from perfkit.core.atomic import write_bytes_atomic
    from perfkit.core.record import load_run
    from perfkit.core.terminal import terminal_safe
    from perfkit.reports.html.data import gather, run_directory

    if args.out is not None:
        kind = (".md", ".markdown", ".txt") if args.format == "md" else (".html", ".htm")
        args.out = checked_out_file("--out", args.out, f"report{kind[0]}", kind)
    cand = load_run(args.run_dir)
    cand_dir = run_directory(args.run_dir)
    base = None
    pairs = None
    note = ""
    why: tuple[Any, ...] = ()
    answer = ("", "")
    if args.vs is not None:
        base, pairs, note, why, answer = _compare(args)
    data = gather(cand, cand_dir, base=base, comparisons=pairs, compare_note=note, serving_why=why,
                  answer=answer, with_kernels=not args.no_kernels)
    if "tune" in data.notes:  # a damaged tune.json: the report says so in its section, and so does this line
        print(terminal_safe(f"perfkit: warning: tune winners not shown: {data.notes['tune']}"), file=sys.stderr)
    if "outside" in data.notes:  # run.json names a trace or table outside the run directory
        print(terminal_safe(f"perfkit: warning: {data.notes['outside']}"), file=sys.stderr)
    if args.format == "md":
        from perfkit.reports.markdown.run import render_markdown

        text = render_markdown(data)
        if args.out is None:
            sys.stdout.write(text)
        else:
            write_bytes_atomic(args.out, text.encode("utf-8"))
            print(args.out)
        return EXIT_OK
    from perfkit.reports.html.page import render_html

    out = args.out or cand_dir / "report.html"
    write_bytes_atomic(out, render_html(data).encode("utf-8"))
    print(out)
    return EXIT_OK


def _compare(args: argparse.Namespace) -> tuple[Any, list[tuple[str, Any]], str, tuple[Any, ...], tuple[str, str]]:
    """The baseline Run, the gate's (key, Comparison) pairs, a note on what was not compared,
    the serving stages' attribution and the answer (headline, why)."""
    from perfkit.commands._store_args import compare_from_args
    from perfkit.comparison.selectors import is_run_path
    from perfkit.core.record import load_run
    from perfkit.reports.html.compare import gate_pairs
    from perfkit.store.api import load_stored_run

    result = compare_from_args(str(args.vs), str(args.run_dir), args)
    base = load_run(args.vs) if is_run_path(args.vs) else load_stored_run(result.base.run_id, args.db)
    from perfkit.regression.gate.headline import headline

    pairs, note = gate_pairs(result)
    head = headline(result)
    return base, pairs, note, result.why, (head.text, head.why)
