"""`perfkit store export OUT_DIR` / `perfkit store import IN_DIR`: move a store between backends
(SQLite file <-> PostgreSQL) through a folder of zstd Parquet files, one per table, plus
manifest.json (row counts and checksums; DuckDB and pandas read the files as they are).

export: reads the store (never writes it) at this perfkit's schema version; OUT_DIR must be new
or empty; the folder appears whole or not at all.
import: checks the whole export first (bad input: one line, exit 2, the target untouched), then
writes it in one transaction, reads it back and compares counts and checksums (a mismatch rolls
back). Runs the target already holds are refused unless --skip-existing. Exit 0 on success, 2 on
bad input or a store that cannot be read or written.
compact: a Parquet lake's (--db lake:///DIR) per-run folders merged into one sorted folder per
partition, atomically for readers (docs/store.md, "The Parquet lake").
"""

from __future__ import annotations

import argparse
from typing import Any

from perfkit.commands._store_args import add_db
from perfkit.commands._types import finite_at_least
from perfkit.core.errors import EXIT_BAD_INPUT, EXIT_OK


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "store", help="export a store to Parquet + manifest, import such an export, or compact a Parquet lake",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    export = actions.add_parser("export", help="write every table of the store to OUT_DIR (Parquet + manifest.json)")
    export.add_argument("out", metavar="OUT_DIR", help="a new or empty folder")
    add_db(export)
    imp = actions.add_parser("import", help="write an export (IN_DIR) into the store, checked by counts and checksums")
    imp.add_argument("in_dir", metavar="IN_DIR", help="a folder `perfkit store export` wrote")
    imp.add_argument("--skip-existing", action="store_true",
                     help="leave out the runs the store already holds (default: refuse them)")
    add_db(imp)
    compact = actions.add_parser("compact", help="merge a Parquet lake's per-run files into one sorted file "
                                 "per partition (--db lake:///DIR)")
    compact.add_argument("--grace-s", type=finite_at_least(0.0), default=None, metavar="S",
                         help="keep what a compaction replaced for S seconds before a later one removes it "
                              "(default 600: readers that listed the files just before can still open them)")
    add_db(compact)
    p.set_defaults(_help=p.format_help)
    return p


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from perfkit.core.terminal import terminal_safe

    if args.action == "export":
        from perfkit.store.export import export_store

        manifest = export_store(args.db, Path(args.out))
        rows = {t.name: t.rows for t in manifest.tables}
        print(terminal_safe(f"exported {rows.get('runs', 0)} runs ({_rows_text(rows)}) to {args.out}"))
        return EXIT_OK
    if args.action == "import":
        from perfkit.store.import_ import import_store

        result = import_store(Path(args.in_dir), args.db, skip_existing=args.skip_existing)
        skipped = f", {result.runs_skipped} already there left out" if result.runs_skipped else ""
        shifted = (f"; ids renumbered past the store's own ({', '.join(sorted(result.shifted))})"
                   if result.shifted else "")
        print(terminal_safe(f"imported {result.runs_imported} runs ({_rows_text(result.rows)}) into "
                            f"{result.target}{skipped}; counts and checksums match the export{shifted}"))
        return EXIT_OK
    if args.action == "compact":
        from perfkit.core.errors import StoreError
        from perfkit.store.lake_compact import GRACE_S, compact_lake
        from perfkit.store.lake_layout import is_lake, lake_dir
        from perfkit.store.url import normalize_db_url

        url = normalize_db_url(args.db)
        if not is_lake(url):
            raise StoreError(f"--db {url}: not a Parquet lake; `perfkit store compact` is for lake:///DIR stores")
        done = compact_lake(lake_dir(url), GRACE_S if args.grace_s is None else args.grace_s)
        print(terminal_safe(f"compacted {done.partitions} partitions ({done.folders_merged} folders merged, "
                            f"{done.folders_removed} replaced folders removed) in {lake_dir(url)}"))
        return EXIT_OK
    print(args._help(), end="")
    return EXIT_BAD_INPUT


def _rows_text(rows: dict[str, int]) -> str:
    return ", ".join(f"{n} {name}" for name, n in rows.items() if name not in ("runs", "perfkit_schema"))
