"""Load trace files of any supported format into one `EventTable`, chosen by content.

    from perfkit.analyzers.loaders.trace_files import load_trace_file, load_trace_files
    table = load_trace_files(["report.sqlite"])            # Nsight Systems export: every GPU
    table = load_trace_files(["rank0.json", "rank1.json"])  # Kineto: one file per rank

- a file starting with the SQLite header, or named .sqlite / .sqlite3 / .db: an Nsight Systems
  export (analyzers.loaders.nsys.sqlite; a file so named that is not SQLite is an error);
- .nsys-rep: exported to SQLite beside it first (analyzers.loaders.nsys.export; needs nsys);
- anything else: a Kineto trace (analyzers.loaders.kineto.load.load_traces).
Several exports are one job: their GPUs are numbered one after another (ranks 0..n-1 of the
first, then n.. of the next). Kineto traces and nsys exports cannot be mixed in one table.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from perfkit.analyzers.event_table import EventTable, concat_tables
from perfkit.analyzers.loaders.nsys.schema import is_sqlite
from perfkit.core.errors import TraceError

SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")
REPORT_SUFFIX = ".nsys-rep"


def trace_format(path: str | Path) -> str:
    """"nsys-rep", "nsys" (an SQLite export) or "kineto"."""
    path = Path(path)
    if path.name.endswith(REPORT_SUFFIX):
        return "nsys-rep"
    if path.suffix.lower() in SQLITE_SUFFIXES or is_sqlite(path):
        return "nsys"
    return "kineto"


def _load_nsys(path: Path, rank_offset: int) -> EventTable:
    from perfkit.analyzers.loaders.nsys.sqlite import load_nsys

    if trace_format(path) == "nsys-rep":
        from perfkit.analyzers.loaders.nsys.export import export_report

        path = export_report(path)
    return load_nsys(path, rank_offset)


def load_trace_file(path: str | Path) -> EventTable:
    """One file of any supported format (a Kineto trace keeps the rank it names)."""
    return load_trace_files([path])


def load_trace_files(paths: Sequence[str | Path]) -> EventTable:
    """The files of one job in one table (raises TraceError with one line on bad input)."""
    if not paths:
        raise TraceError("no trace files given; pass Kineto traces (.json / .json.gz) or nsys exports (.sqlite)")
    formats = [trace_format(p) for p in paths]
    nsys = [f != "kineto" for f in formats]
    if not any(nsys):
        from perfkit.analyzers.loaders.kineto.load import load_traces

        return load_traces(paths)
    if not all(nsys):
        kineto = next(p for p, is_nsys in zip(paths, nsys, strict=True) if not is_nsys)
        raise TraceError(f"{kineto}: a Kineto trace among nsys exports; analyze them separately "
                         "(an nsys export already holds every GPU of its host)")
    tables = []
    offset = 0
    for p in paths:
        table = _load_nsys(Path(p), offset)
        tables.append(table)
        offset = max(table.ranks, default=offset - 1) + 1
    return tables[0] if len(tables) == 1 else concat_tables(tables)
