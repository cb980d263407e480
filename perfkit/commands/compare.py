"""`perfkit compare BASE CAND`: per measurement (one row per point: its time, flop/s and bytes/s
are one measurement) the values, their change, its interval, a p-value and a verdict
(regressed, improved, unchanged, noisy, suspect, inconclusive, incomparable, with the reason).

BASE and CAND are run directories, stored run ids (or unique prefixes), commits (or unique
prefixes), or BRANCH@GPU for the latest stored run of a branch on a GPU of CAND's spec other
than CAND (e.g. main@H100; BRANCH@GPU:SPEC names another spec). `perfkit runs` lists runs. The
store's history of each metric gives the baseline's level and the run-to-run spread, so two
runs made at different times do not look like a change. `--format json` and `--format csv` give
every row (values as numbers and as the text the table shows); every view of the pair (gate,
report --vs, perfkit.api.compare, the dashboard) gives the same answer. Exit 0 (compare reports; `perfkit gate`
decides), 2 on bad input (also: BASE and CAND are the same run, or have nothing in common).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from perfkit.commands._store_args import add_comparison_options, add_db, add_format
from perfkit.commands._types import run_selector


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "compare", help="compare two runs metric by metric (ratio, interval, p-value, verdict)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("base", metavar="BASE", type=run_selector,
                   help="baseline: run directory, run id, commit, or BRANCH@GPU[:SPEC] (its latest run of "
                        "CAND's spec, or of SPEC, other than CAND)")
    p.add_argument("cand", metavar="CAND", type=run_selector, help="candidate: run directory, run id, commit, or BRANCH@GPU[:SPEC]")
    add_db(p)
    add_format(p, extra=("csv",))
    add_comparison_options(p)
    return p


def run(args: argparse.Namespace) -> int:
    from perfkit.commands._store_args import compare_from_args, render
    from perfkit.core.errors import EXIT_OK

    result = compare_from_args(args.base, args.cand, args)
    sys.stdout.write(render(result, args.format))
    return EXIT_OK
