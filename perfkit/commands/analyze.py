"""`perfkit analyze TRACE... [--vs BASE] [--format table|json|csv]`: trace -> tables.

Several TRACE files are the ranks of one job (merged by distributedInfo.rank). With `--vs BASE`
(a baseline trace: the "before" side, as in `perfkit report RUN --vs BASE` and `perfkit compare
BASE CAND`) it prints instead the kernel-level diff of TRACE against BASE: A columns are BASE,
B columns TRACE, delta = B - A, so "slower" / "added" say how TRACE changed.

Notes on what a trace holds (no GPU work, events perfkit does not read, events left out,
loader warnings) go to stderr, one line each, in every format; the json format also carries
them under "notes" when there are any. Names from a trace are printed through the terminal's
escaping rule (perfkit.core.terminal.terminal_safe) and written to CSV through the CSV rule
(perfkit.core.csv_cells: a cell starting with = + - @ gets a leading ').
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfkit.analyzers.analysis_names import ANALYSIS_NAMES
from perfkit.commands._types import non_negative_int, output_dir, regex
from perfkit.core.terminal import terminal_safe

DEFAULT_TOP = 15
DEFAULT_NAME_WIDTH = 40  # characters of a kernel / range name in table format (--name-width), at most
NAME_SHARE = 0.39  # ... and at most this share of the terminal's width (31 of 80 columns: the kernels table's
#   category, count, total, mean and share columns still fit beside it)
SHORT_NAMED = ("kernels", "diff")  # tables whose names are kernels: shown by their base names


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "analyze",
        help="analyze Kineto traces or Nsight Systems exports: kernels, temporal / idle breakdown, launch "
             "overhead, ranges",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("traces", nargs="+", type=Path, metavar="TRACE",
                        help=".json / .json.gz (one per rank), or an nsys .sqlite export / .nsys-rep (every GPU)")
    parser.add_argument("--vs", type=Path, metavar="BASE",
                        help="baseline trace (the before side): print the kernel diff of TRACE against it "
                             "(A = BASE, B = TRACE; 'slower' means TRACE is slower)")
    parser.add_argument("--format", choices=("table", "json", "csv"), default="table")
    parser.add_argument(
        "--only",
        metavar="NAMES",
        help=f"comma-separated analyses ({','.join(ANALYSIS_NAMES)})",
    )
    parser.add_argument("--top", type=non_negative_int, default=DEFAULT_TOP, help="rows per table in table format (0: all)")
    parser.add_argument("--range", dest="range_pattern", metavar="REGEX", type=regex, help="only ranges whose name matches")
    parser.add_argument("--wide", action="store_true",
                        help="table format: every column and whole names (default: fit the terminal's width)")
    parser.add_argument("--name-width", type=non_negative_int, metavar="N",
                        help=f"table format: kernel and range names in N characters (default: 39%% of the terminal, at most "
                             f"{DEFAULT_NAME_WIDTH}; "
                             "0: whole demangled names); kernels show their base name, and distinct names never "
                             "look alike (numbered [1], [2] where they would); JSON and CSV keep whole names")
    parser.add_argument("--out", type=output_dir, metavar="DIR", help="also write one file per table into DIR")
    parser.add_argument("--jobs", type=int, default=None, metavar="N",
                        help="worker processes decoding rank files (default: one per core when the files "
                             "add up to 32 MB or more, else 1)")
    parser.add_argument("--executor", default=None, metavar="local|dask-local|dask://HOST:PORT",
                        help="where rank files are decoded: a local process pool (default), a Dask "
                             "LocalCluster, or a running Dask scheduler (files on a shared file system)")
    return parser


POOL_MIN_BYTES = 32 * 2**20  # below this, starting worker processes costs more than it saves


def executor_for(args: argparse.Namespace, paths: list[Path]) -> Any:
    """The executor of `--jobs` / `--executor`: a local pool only where the files are large
    enough to repay starting it (or where --jobs asks for one)."""
    from perfkit.core.parallel_map import LOCAL, Executor

    ex = Executor.parse(args.executor, args.jobs)
    if ex.kind == LOCAL and args.jobs is None:
        total = sum(p.stat().st_size for p in paths if p.is_file())
        if total < POOL_MIN_BYTES:
            return Executor(LOCAL, 1)
    return ex


@dataclass
class Result:
    tables: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    empty: dict[str, str] = field(default_factory=dict)  # table name -> why it has no rows


def _analyze(args: argparse.Namespace) -> Result:
    from perfkit.analyzers.loaders.trace_files import load_trace_files
    from perfkit.analyzers.suite import ANALYSES, run_analyses
    from perfkit.analyzers.trace_notes import empty_reason, trace_notes
    from perfkit.core.errors import SpecError

    names = [n.strip() for n in args.only.split(",") if n.strip()] if args.only else list(ANALYSES)
    unknown = [n for n in names if n not in ANALYSES]
    if args.vs is None and unknown:
        raise SpecError(f"--only: unknown analyses {unknown}; choose from {','.join(ANALYSES)}")
    table = load_trace_files(args.traces, executor_for(args, args.traces))
    if args.vs is not None:
        from perfkit.analyzers.diff import diff_by_level

        base = load_trace_files([args.vs])
        level, diff, totals = diff_by_level(base, table)  # A = the baseline (before), B = TRACE (after)
        tables = {"diff_totals": totals, "diff": diff}
        notes = [f"BASE {n}" for n in trace_notes(base)] + trace_notes(table)
        if level == "op":
            notes.append("no GPU kernels in TRACE or BASE: the diff is of CPU ops (each op's inclusive time)")
        why = "(no rows: neither TRACE nor BASE has GPU kernels, memcpy, memset or CPU ops)"
        return Result(tables, notes, {n: why for n, df in tables.items() if df.empty})
    tables = run_analyses(table, [n for n in names if n != "ranges"])
    if "ranges" in names:
        from perfkit.analyzers.ranges import range_projection

        tables["ranges"] = range_projection(table, args.range_pattern)
        tables = {n: tables[n] for n in names}
    empty = {n: empty_reason(n, table, args.range_pattern) for n, df in tables.items() if df.empty}
    return Result(tables, trace_notes(table), empty)


def run(args: argparse.Namespace) -> int:
    from perfkit.analyzers.render import format_table, to_csv, to_json_obj
    from perfkit.core.atomic import write_bytes_atomic
    from perfkit.core.csv_cells import csv_frame
    from perfkit.core.terminal import terminal_width

    result = _analyze(args)
    tables = result.tables
    for note in result.notes:
        print(terminal_safe(f"perfkit analyze: {note}"), file=sys.stderr)
    records = to_json_obj(tables) if args.format == "json" else {}
    if args.format == "json":
        doc: dict[str, Any] = dict(records)
        if result.notes:
            doc["notes"] = result.notes
        text = json.dumps(doc, indent=1, allow_nan=False, default=str) + "\n"
    elif args.format == "csv":
        text = to_csv(tables)
    else:
        top, width = args.top or None, None if args.wide else terminal_width()
        names = args.name_width if args.name_width is not None else None if width is None \
            else min(DEFAULT_NAME_WIDTH, int(width * NAME_SHARE))
        text = "\n\n".join(
            f"## {name}\n{_wrap(result.empty.get(name), width) or format_table(df, top, width, names, bool(names) and name in SHORT_NAMED)}"
            for name, df in tables.items()) + "\n"
    sys.stdout.write(text)
    if args.out is not None:
        for name, df in tables.items():
            if args.format == "json":
                data = json.dumps(records[name], indent=1, allow_nan=False, default=str)
                write_bytes_atomic(args.out / f"{name}.json", data.encode() + b"\n")
            else:
                write_bytes_atomic(args.out / f"{name}.csv", csv_frame(df).to_csv(index=False).encode())
    return 0


def _wrap(text: str | None, width: int | None) -> str | None:
    """Why a table is empty (it may quote the --range pattern), escaped and wrapped for the terminal."""
    if not text:
        return text
    return "\n".join(textwrap.wrap(terminal_safe(text), width, break_on_hyphens=False)) if width else terminal_safe(text)
