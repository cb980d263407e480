"""Event tables of an nsys export that perfkit does not read, with their row counts.

An export holds more timelines than perfkit's tables use (CUDA synchronization waits, CUPTI
overhead, OS runtime calls, cuBLAS / cuDNN ranges, scheduling, GPU metrics, ...). Nothing is
lost silently: every table with a start and an end column that the loader does not read, and
that has rows, is counted and shown as a note (`TraceMeta.unknown_categories`, as Kineto's
categories perfkit does not read are).
"""

from __future__ import annotations

from collections.abc import Collection

from perfkit.analyzers.loaders.nsys.schema import Export


def unread_event_tables(export: Export, read: Collection[str]) -> tuple[tuple[str, int], ...]:
    """(table, rows) of every timed table (start and end columns) not in `read` that has rows."""
    out = []
    for name, columns in sorted(export.tables.items()):
        if name in read or not {"start", "end"} <= set(columns):
            continue
        rows = export.count(name)
        if rows:
            out.append((name, int(rows)))
    return tuple(out)
