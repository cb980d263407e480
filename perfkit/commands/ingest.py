"""`perfkit ingest RUN_DIR...` stores runs made elsewhere (by `perfkit profile`);
`perfkit ingest --format csv FILE` and `--format pytest-benchmark FILE` store other tools'
results, so history, compare and gate work for any numbers.

CSV header: commit,metric,value,unit,direction,gpu,timestamp (one row per sample; optional
branch column). Each input is one transaction: a bad file stores nothing. Runs already stored
(same run id) are skipped. Each run is printed with its id, commit and branch; `perfkit runs
--commit C` lists it again (with the id that compare / gate / report take).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from perfkit.commands._store_args import add_db

INPUT_FORMATS = ("run", "csv", "pytest-benchmark")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "ingest", help="store runs (run directories, CSV, pytest-benchmark JSON) in the results store",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="+", metavar="PATH", help="run directories, or files of --format")
    p.add_argument("--format", choices=INPUT_FORMATS, default="run",
                   help="what the inputs are (default: run directories)")
    p.add_argument("--branch", default=None, help="branch to record (csv, pytest-benchmark)")
    p.add_argument("--gpu", default=None, help="GPU label (pytest-benchmark; default: the CPU model)")
    p.add_argument("--partial", action="store_true",
                   help="also store runs that never finished (killed: only run.partial.json), with the "
                        "points they recorded, as interrupted")
    add_db(p)
    return p


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from perfkit.core.errors import EXIT_OK
    from perfkit.core.record import load_run
    from perfkit.reports.terminal_text import terminal_safe
    from perfkit.store.api import open_store
    from perfkit.store.engine import describe
    from perfkit.store.ingest_csv import parse_csv
    from perfkit.store.ingest_pytest_benchmark import parse_pytest_benchmark
    from perfkit.store.records import StoredRun, from_run
    from perfkit.store.write import write_runs

    # Parse every input before writing anything.
    batches: list[tuple[str, list[StoredRun]]] = []
    for item in args.inputs:
        if args.format == "csv":
            batches.append((item, parse_csv(item, branch=args.branch)))
        elif args.format == "pytest-benchmark":
            batches.append((item, parse_pytest_benchmark(item, gpu=args.gpu, branch=args.branch)))
        else:
            path = Path(item)
            _refuse_other_format(path)
            batches.append((item, [from_run(load_run(path, partial=args.partial),
                                                     path if path.is_dir() else path.parent)]))
    engine = open_store(args.db)
    try:
        for item, runs in batches:
            written = write_runs(engine, runs)
            for stored, new in zip(runs, written, strict=True):
                state = "stored" if new else "already stored, skipped"
                commit = f"commit {stored.commit}" if stored.commit else "no commit"
                branch = f"branch {stored.branch}" if stored.branch else "no branch"
                print(terminal_safe(f"{item}: run {stored.run_id} ({commit}, {branch}, {stored.gpu}, "
                                    f"{len(stored.metrics)} metrics) {state}"))
                for note in stored.notes:  # an optional table left out: the run is stored without it
                    print(terminal_safe(f"perfkit: note: {item}: {note}"), file=sys.stderr)
        print(f"store: {describe(engine)}")
    finally:
        engine.dispose()
    return EXIT_OK


def _refuse_other_format(path: Path) -> None:
    """A CSV or pytest-benchmark file given without --format: say which flag it needs."""
    from perfkit.core.errors import SpecError
    from perfkit.core.run_layout import RECORD_FILES

    if not path.is_file():
        return
    if path.suffix.lower() == ".csv":
        raise SpecError(f"{path}: a CSV file, not a run directory; pass --format csv")
    if path.suffix.lower() == ".json" and path.name not in RECORD_FILES:
        with path.open("rb") as fh:
            head = fh.read(4096)
        if b'"benchmarks"' in head or b'"machine_info"' in head:
            raise SpecError(f"{path}: a pytest-benchmark file, not a run record; pass --format pytest-benchmark")
