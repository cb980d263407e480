"""Options shared by ingest / compare / gate / history (`--db`, `--format`), and the run
resolution behind compare and gate. Imports heavy modules inside functions."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from perfkit.commands._types import non_negative_int, seed

FORMATS = ("table", "json", "md")


def add_db(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", metavar="URL", default=None,
                   help="store: a SQLite file, sqlite:///FILE, postgresql://..., duckdb:///FILE or lake:///DIR "
                        "(default: $PERFKIT_DB, else ./perfkit.db)")


def add_format(p: argparse.ArgumentParser, extra: tuple[str, ...] = ()) -> None:
    p.add_argument("--format", choices=(*FORMATS, *extra), default="table", help="output format (default: table)")


def add_comparison_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--policy", metavar="GATE_YAML", default=None,
                   help="thresholds per metric (min_effect, max_p, direction, ...); see docs/ci.md")
    p.add_argument("--metric", metavar="GLOB", default=None, help="compare only metrics matching this glob")
    p.add_argument("--seed", type=seed, default=0, help="seed of the bootstrap and permutations (default 0)")
    p.add_argument("--history", type=non_negative_int, default=30, metavar="N",
                   help="stored runs used for the run-to-run spread of each metric (default 30; 0: none)")
    p.add_argument("--across-specs", action="store_true",
                   help="compare the rows a spec change between the runs touches (default: incomparable)")


def compare_from_args(base_sel: str, cand_sel: str, args: argparse.Namespace) -> Any:
    """The one comparison of the two runs (perfkit.comparison.pair, as compare_pair): a GateResult.
    A note goes to standard error when the spec changed between the runs; StoreError when they
    have nothing in common."""
    from perfkit.comparison.pair import PairOptions, compare_sides
    from perfkit.comparison.selectors import resolve_pair, spec_note
    from perfkit.core.terminal import terminal_safe
    from perfkit.regression.gate.policy import load_policy
    from perfkit.store.api import open_existing_store

    options = PairOptions(load_policy(args.policy), args.seed, args.history, args.metric, args.across_specs)
    engine = open_existing_store(args.db)
    try:
        base, cand = resolve_pair(base_sel, cand_sel, engine)
        note = spec_note(base, cand)
        if note:  # before the comparison, which may find nothing in common
            print(terminal_safe(note), file=sys.stderr)
        return compare_sides(base, cand, engine, options)
    finally:
        if engine is not None:
            engine.dispose()


def render(result: Any, fmt: str) -> str:
    if fmt == "csv":
        from perfkit.reports.gate.as_csv import render_csv

        return render_csv(result)
    if fmt == "json":
        from perfkit.reports.gate.text import render_json

        return render_json(result) + "\n"
    if fmt == "md":
        from perfkit.reports.markdown.gate import render_markdown

        return render_markdown(result)
    from perfkit.reports.gate.text import render_table

    return render_table(result)
