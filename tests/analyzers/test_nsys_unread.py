"""Timed tables of an nsys export that perfkit does not read are counted in a note, not lost silently."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from perfkit.analyzers.loaders.nsys.sqlite import load_nsys
from perfkit.analyzers.trace_notes import trace_notes

REPO = Path(__file__).resolve().parents[2]
EXPORT = REPO / "tests" / "data" / "nsys" / "nsys_ai"


def _export() -> Path:
    found = sorted(EXPORT.glob("*.sqlite"))
    if not found:
        pytest.skip("no small nsys export under tests/data/nsys/nsys_ai")
    return found[0]


def test_unread_timed_tables_are_counted_as_sql_counts_them(tmp_path: Path) -> None:
    path = tmp_path / "e.sqlite"
    shutil.copy(_export(), path)
    with sqlite3.connect(path) as conn:  # a timed table perfkit does not read, with 3 rows
        conn.execute("CREATE TABLE OSRT_API (start INTEGER, end INTEGER, globalTid INTEGER, nameId INTEGER)")
        conn.executemany("INSERT INTO OSRT_API VALUES (?, ?, 0, 0)", [(1, 2), (3, 4), (5, 6)])
        conn.execute("CREATE TABLE EMPTY_EVENTS (start INTEGER, end INTEGER)")
        expected = {}
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            cols = {r[1] for r in conn.execute(f'PRAGMA table_info("{name}")')}
            rows = conn.execute(f'SELECT COUNT(*) FROM "{name}"').fetchone()[0]
            read = name in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                            "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS")
            if {"start", "end"} <= cols and rows and not read:
                expected[name] = rows
    table = load_nsys(path)
    assert dict(table.meta[0].unknown_categories) == expected and expected["OSRT_API"] == 3
    note = next(n for n in trace_notes(table) if "perfkit does not read" in n)
    assert f"{sum(expected.values()):,} rows of timed tables perfkit does not read" in note and "OSRT_API (3)" in note
