"""Table, JSON and Markdown of change points found by `perfkit history`: per change point the
first commit at the new level (`commit`) and the last one before it (`previous`)."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from perfkit.core.terminal import shorten, terminal_width
from perfkit.regression.changepoint.kind import change_kind

COLUMNS = ("metric", "gpu", "previous commit", "commit", "magnitude", "p", "kind")
LEGEND = "previous commit: the last at the old level; commit: the first at the new level"


@dataclass(frozen=True)
class ChangeRow:
    metric: str
    gpu: str
    commit: str  # first commit at the new level
    previous_commit: str | None
    index: int
    time: str
    magnitude: float  # after / before - 1
    p_value: float
    before: float
    after: float
    direction: str  # of the metric: lower | higher is better
    unit: str

    @property
    def kind(self) -> str:
        return change_kind(self.magnitude, self.direction)

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "gpu": self.gpu, "commit": self.commit,
                "previous_commit": self.previous_commit, "index": self.index, "time": self.time,
                "magnitude": self.magnitude, "p_value": self.p_value, "confidence": 1.0 - self.p_value,
                "before": self.before, "after": self.after, "kind": self.kind, "unit": self.unit}


@dataclass(frozen=True)
class SeriesInfo:
    metric: str
    gpu: str
    commits: int


def render_json(rows: Sequence[ChangeRow], series: Sequence[SeriesInfo]) -> str:
    return json.dumps({"series": [s.__dict__ for s in series], "change_points": [r.to_dict() for r in rows]},
                      indent=1) + "\n"


def render_table(rows: Sequence[ChangeRow], series: Sequence[SeriesInfo]) -> str:
    """Fits the terminal (80 columns when not a tty): long metric and GPU names are shortened in
    the middle (the JSON has them whole)."""
    width = terminal_width()
    lines = [line for s in series for line in textwrap.wrap(f"{s.metric} on {s.gpu}: {s.commits} commits", width,
                                                              subsequent_indent="    ", break_on_hyphens=False)]
    if not rows:
        return "\n".join([*lines, "no change points"]) + "\n"
    table = [COLUMNS]
    for r in rows:
        table.append((r.metric, r.gpu, (r.previous_commit or "-")[:10], r.commit[:10],
                      f"{r.magnitude * 100:+.2f}%", f"{r.p_value:.2g}", r.kind))
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    rest = sum(widths[2:]) + 2 * (len(widths) - 1)
    widths[1] = min(widths[1], 16)
    widths[0] = max(min(widths[0], width - rest - widths[1]), 12)
    lines += ["  ".join(shorten(c, w).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in table]
    return "\n".join([*lines, LEGEND]) + "\n"


def render_markdown(rows: Sequence[ChangeRow], series: Sequence[SeriesInfo]) -> str:
    out = ["### perfkit history: change points", ""]
    out += [f"- `{s.metric}` on {s.gpu}: {s.commits} commits" for s in series]
    out.append("")
    if not rows:
        return "\n".join([*out, "No change points."]) + "\n"
    out += ["| " + " | ".join(COLUMNS) + " |", "|---|---|---|---|---:|---:|---|"]
    for r in rows:
        mark = "❌" if r.kind == "regression" else "✅"
        out.append(f"| `{r.metric}` | {r.gpu} | `{(r.previous_commit or '-')[:12]}` | `{r.commit[:12]}` | "
                   f"{r.magnitude * 100:+.2f}% | {r.p_value:.2g} | {mark} {r.kind} |")
    return "\n".join([*out, "", LEGEND]) + "\n"
