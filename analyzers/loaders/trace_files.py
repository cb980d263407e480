"""Load trace files of any supported format into one `EventTable`, chosen by content.

    from perfkit.analyzers.loaders.trace_files import load_trace_file, load_trace_files
    table = load_trace_files(["report.sqlite"])            # Nsight Systems export: every GPU
    table = load_trace_files(["rank0.json", "rank1.json"])  # Kineto: one file per rank

- a file starting with the SQLite header, or named .sqlite / .sqlite3 / .db: an Nsight Systems
  export (analyzers.loaders.nsys.sqlite; a file so named that is not SQLite is an error);
- .nsys-rep: exported to SQLite beside it first (analyzers.loaders.nsys.export; needs nsys);
- .xplane.pb, or a JSON trace naming XLA planes ("/host:CPU", "/device:GPU:0"): a JAX / XLA
  profile (analyzers.loaders.xla.files; several files are one job, devices numbered on);
- a JSON starting `{"rocprofiler-sdk-tool"`: rocprofv3 (analyzers.loaders.rocprof.load; several
  files, one per process, are one job: ranks numbered on);
- a file of a neighbouring tool (a rocprof or ncu CSV, a .qdstrm, a Perfetto protobuf, a pickle):
  refused with what reads it (analyzers.loaders.other_tools);
- anything else: a Kineto trace (analyzers.loaders.kineto.load.load_traces).
Several exports are one job: their GPUs are numbered one after another (ranks 0..n-1 of the
first, then n.. of the next). Kineto traces and nsys exports cannot be mixed in one table.
A file given twice (the same path, a link to it, a copy with the same bytes, or a .nsys-rep
beside its own export) is refused with one line: it would double every count.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from perfkit.analyzers.event_table import EventTable, concat_tables
from perfkit.analyzers.loaders.nsys.schema import is_sqlite
from perfkit.analyzers.loaders.other_tools import other_tool_hint
from perfkit.analyzers.loaders.rocprof.schema import is_rocprof_json
from perfkit.analyzers.loaders.xla.files import load_xla_files, xla_format
from perfkit.core.errors import TraceError
from perfkit.core.parallel_map import Executor

SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")
REPORT_SUFFIX = ".nsys-rep"


def trace_format(path: str | Path) -> str:
    """"nsys-rep", "nsys" (an SQLite export), "xplane" / "jax-json" (JAX / XLA), "rocprofv3" or "kineto"."""
    path = Path(path)
    if path.name.endswith(REPORT_SUFFIX):
        return "nsys-rep"
    if path.suffix.lower() in SQLITE_SUFFIXES or is_sqlite(path):
        return "nsys"
    return "rocprofv3" if is_rocprof_json(path) else xla_format(path) or "kineto"


def _exported(path: Path) -> Path:
    """The SQLite export of a .nsys-rep (made once with nsys), any other file itself."""
    if trace_format(path) == "nsys-rep":
        from perfkit.analyzers.loaders.nsys.export import export_report

        return export_report(path)
    return path


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def refuse_repeats(paths: Sequence[Path], given: Sequence[str | Path] | None = None) -> None:
    """TraceError when two of `paths` are one file (same resolved path) or hold the same bytes
    (compared by SHA-256 only among files of equal size). `given`: the names to print."""
    shown = list(given) if given is not None else list(paths)
    seen: dict[Path, int] = {}
    sizes: dict[int, list[int]] = {}
    for i, p in enumerate(paths):
        try:
            real, size = p.resolve(), p.stat().st_size
        except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
            continue  # the loader names a missing or unreadable file itself
        if real in seen:
            raise TraceError(f"{shown[i]}: the same file as {shown[seen[real]]} (given twice); pass each trace "
                             "once: a file given twice doubles every count")
        seen[real] = i
        sizes.setdefault(size, []).append(i)
    for group in (g for g in sizes.values() if len(g) > 1):
        digests: dict[str, int] = {}
        for i in group:
            try:
                d = _digest(paths[i])
            except OSError:
                continue
            if d in digests:
                raise TraceError(f"{shown[i]}: the same bytes as {shown[digests[d]]} (a copy); pass each trace "
                                 "once: a file given twice doubles every count")
            digests[d] = i


def _load_rocprof(paths: Sequence[str | Path], formats: list[str]) -> EventTable:
    from perfkit.analyzers.loaders.rocprof.load import load_rocprof

    other = next((p for p, f in zip(paths, formats, strict=True) if f != "rocprofv3"), None)
    if other is not None:
        raise TraceError(f"{other}: not a rocprofv3 JSON among rocprofv3 files; analyze them separately")
    refuse_repeats([Path(p) for p in paths], paths)
    tables: list[EventTable] = []
    for p in paths:
        tables.append(load_rocprof(p, max((r for t in tables for r in t.ranks), default=-1) + 1))
    return tables[0] if len(tables) == 1 else concat_tables(tables)


def _refuse_other_tools(paths: Sequence[str | Path]) -> None:
    """A file of a neighbouring tool (rocprof CSV, ncu CSV, .qdstrm, ...) named as such, with what reads it."""
    for p in paths:
        hint = other_tool_hint(p)
        if hint:
            raise TraceError(f"{p}: not a trace perfkit analyzes: {hint}")


def load_trace_file(path: str | Path) -> EventTable:
    """One file of any supported format (a Kineto trace keeps the rank it names)."""
    return load_trace_files([path])


def load_trace_files(paths: Sequence[str | Path], executor: Executor | None = None) -> EventTable:
    """The files of one job in one table (raises TraceError with one line on bad input).
    Kineto rank files are decoded on the executor's workers when one is given."""
    if not paths:
        raise TraceError("no trace files given; pass Kineto traces (.json / .json.gz) or nsys exports (.sqlite)")
    formats = [trace_format(p) for p in paths]
    xla = [f in ("xplane", "jax-json") for f in formats]
    if any(xla):
        if not all(xla):
            other = next(p for p, is_xla in zip(paths, xla, strict=True) if not is_xla)
            raise TraceError(f"{other}: not a JAX / XLA trace among JAX / XLA traces; analyze them separately")
        refuse_repeats([Path(p) for p in paths], paths)
        return load_xla_files(paths)
    if "rocprofv3" in formats:
        return _load_rocprof(paths, formats)
    nsys = [f != "kineto" for f in formats]
    if not any(nsys):
        from perfkit.analyzers.loaders.kineto.load import load_traces

        _refuse_other_tools(paths)
        refuse_repeats([Path(p) for p in paths], paths)
        return load_traces(paths, executor)
    if not all(nsys):
        kineto = next(p for p, is_nsys in zip(paths, nsys, strict=True) if not is_nsys)
        raise TraceError(f"{kineto}: a Kineto trace among nsys exports; analyze them separately "
                         "(an nsys export already holds every GPU of its host)")
    from perfkit.analyzers.loaders.nsys.sqlite import load_nsys

    given = [Path(p) for p in paths]
    refuse_repeats(given, paths)  # before any export is made
    files = [_exported(p) for p in given]
    if files != given:
        refuse_repeats(files, paths)  # a report and its own export
    tables = []
    offset = 0
    for p in files:
        table = load_nsys(p, offset)
        tables.append(table)
        offset = max(table.ranks, default=offset - 1) + 1
    return tables[0] if len(tables) == 1 else concat_tables(tables)
