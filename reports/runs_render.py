"""Table and JSON of `perfkit runs`: stored runs, newest first.

The table fits its width: one line per run when every column fits, else two (the run's id, time,
status, points and source; then its branch, commit, GPU and spec, indented). The run id is never
shortened (it is what a user copies); branch, GPU and spec names are shortened in the middle when
the width asks for it (the JSON has them whole). Every user string is escaped for the terminal.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import asdict

from perfkit.core.terminal import terminal_safe
from perfkit.reports.gate.text import shorten
from perfkit.store.run_list import RunListing

FIRST = ("run id", "time (UTC)", "status", "ok/failed", "source")
SECOND = ("branch", "commit", "GPU", "spec")
SHRINKABLE = ("branch", "GPU", "spec")  # columns shortened (in the middle) to fit the width
SOURCES = {"perfkit": "run dir", "csv": "csv", "pytest-benchmark": "pytest"}
INDENT = "    "
GAP = "  "
MIN_WIDTH = 6  # a shortened column keeps this many characters


def render_json(runs: Sequence[RunListing]) -> str:
    return json.dumps({"runs": [asdict(r) for r in runs]}, indent=1) + "\n"


def _time(r: RunListing) -> str:
    return dt.datetime.fromtimestamp(r.created_epoch, dt.UTC).strftime("%Y-%m-%d %H:%M")


def cells(r: RunListing) -> dict[str, str]:
    """The table's cells of one run, every user string escaped for the terminal."""
    points = f"{r.points.get('ok', 0)}/{r.points.get('failed', 0)}" if r.points else "-"  # csv: metrics only
    return {"run id": terminal_safe(r.run_id), "time (UTC)": _time(r), "status": terminal_safe(r.status),
            "ok/failed": points, "source": terminal_safe(SOURCES.get(r.source, r.source)),
            "branch": terminal_safe(r.branch or "-"), "commit": terminal_safe((r.commit or "-")[:10]),
            "GPU": terminal_safe(r.gpu), "spec": terminal_safe(r.spec or "-")}


def _widths(rows: Sequence[dict[str, str]], columns: Sequence[str], width: int) -> list[int] | None:
    """Each column's width, the shrinkable ones shortened so a line fits `width`; None if it cannot."""
    widths = {c: max(len(row[c]) for row in rows) for c in columns}
    over = sum(widths.values()) + len(GAP) * (len(columns) - 1) - width
    for c in sorted((c for c in columns if c in SHRINKABLE), key=lambda c: -widths[c]):
        if over <= 0:
            break
        cut = min(over, max(widths[c] - MIN_WIDTH, 0))
        widths[c] -= cut
        over -= cut
    return None if over > 0 else [widths[c] for c in columns]


def _line(row: dict[str, str], columns: Sequence[str], widths: Sequence[int], prefix: str = "") -> str:
    return (prefix + GAP.join(shorten(row[c], w).ljust(w) for c, w in zip(columns, widths, strict=True))).rstrip()


def render_table(runs: Sequence[RunListing], width: int) -> str:
    """Runs in `width` columns (one line per run, or two when one does not fit)."""
    header = {c: c for c in (*FIRST, *SECOND)}
    rows = [header, *(cells(r) for r in runs)]
    one = (*FIRST[:2], "branch", "commit", "GPU", "spec", *FIRST[2:])
    widths = _widths(rows, one, width)
    if widths is not None:
        return "\n".join(_line(row, one, widths) for row in rows) + "\n"
    first = _widths(rows, FIRST, width) or [max(len(row[c]) for row in rows) for c in FIRST]
    second = _widths(rows, SECOND, width - len(INDENT)) or [MIN_WIDTH] * len(SECOND)
    lines = []
    for row in rows:
        lines += [_line(row, FIRST, first), _line(row, SECOND, second, INDENT)]
    return "\n".join(lines) + "\n"
