"""`perfkit runs [--branch B] [--gpu G] [--spec NAME] [--commit PREFIX] [--status S]`: the stored
runs, newest first (20 unless --limit says otherwise): run id, time (UTC), branch, commit, GPU,
spec name, status, points ok/failed ("-": an ingested run holds metrics, no points) and source
(run dir, csv, pytest-benchmark). The run id picks a run for compare / gate / report. `--format
json` gives every field (the full commit, the spec hash, points per status). Exit 0 (also when no
run matches); 2 when there is no store or on bad input.
"""

from __future__ import annotations

import argparse
from typing import Any

from perfkit.commands._store_args import add_db
from perfkit.commands._types import positive_int
from perfkit.core.terminal import terminal_width

DEFAULT_LIMIT = 20


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "runs", help="list stored runs (id, time, branch, commit, GPU, spec, status), newest first",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--branch", default=None, help="only runs of this branch")
    p.add_argument("--gpu", default=None, help="only this GPU (exact label or a part of it)")
    p.add_argument("--spec", default=None, help="only runs of the spec of this name")
    p.add_argument("--commit", default=None, metavar="PREFIX", help="only runs of commits starting with PREFIX")
    p.add_argument("--status", default=None, help="only runs of this status (complete, interrupted, ...)")
    p.add_argument("--limit", type=positive_int, default=DEFAULT_LIMIT, metavar="N",
                   help=f"the newest N runs (default {DEFAULT_LIMIT})")
    p.add_argument("--format", choices=("table", "json"), default="table", help="output format (default: table)")
    add_db(p)
    return p


def run(args: argparse.Namespace) -> int:
    import sys

    from perfkit.core.errors import EXIT_OK, StoreError
    from perfkit.core.terminal import terminal_safe
    from perfkit.reports import runs_render
    from perfkit.store.api import open_existing_store
    from perfkit.store.engine import describe
    from perfkit.store.run_list import RunQuery, run_listing
    from perfkit.store.url import normalize_db_url

    engine = open_existing_store(args.db)
    if engine is None:
        raise StoreError(f"{normalize_db_url(args.db)}: no store there; store runs with `perfkit ingest` "
                         "or pass --db / PERFKIT_DB")
    query = RunQuery(branch=args.branch, gpu=args.gpu, spec=args.spec, commit=args.commit, status=args.status,
                     limit=args.limit)
    try:
        with engine.connect() as conn:
            runs = run_listing(conn, query)
        where = describe(engine)
    finally:
        engine.dispose()
    if args.format == "json":
        sys.stdout.write(runs_render.render_json(runs))
    elif not runs:
        print(terminal_safe(f"no runs{_filters_text(args)} in {where}"))
    else:
        sys.stdout.write(runs_render.render_table(runs, terminal_width()))
    return EXIT_OK


def _filters_text(args: argparse.Namespace) -> str:
    from perfkit.core.errors import shorten

    given = [f"--{name} {shorten(value)}" for name in ("branch", "gpu", "spec", "commit", "status")
             if (value := getattr(args, name)) is not None]
    return f" matching {' '.join(given)}" if given else ""
