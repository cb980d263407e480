"""The HTML building blocks of the reports' pages: tables, sections, inline figures. Every value
is escaped (`perfkit.reports.html.text.esc`) unless it is `Html` built here from escaped parts."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import plotly.graph_objects as go

from perfkit.reports.html.text import esc

PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}


class Html(str):
    """A string that is already HTML (built here from escaped parts): not escaped again."""


def cell(value: Any) -> str:
    return value if isinstance(value, Html) else esc(value)


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], numeric: Sequence[int] = ()) -> Html:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for row in rows:
        tds = "".join(
            f'<td class="num">{cell(v)}</td>' if i in numeric else f"<td>{cell(v)}</td>" for i, v in enumerate(row)
        )
        body.append(f"<tr>{tds}</tr>")
    return Html(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")


def code(text: Any) -> Html:
    return Html(f"<code>{esc(text)}</code>")


def not_available(reason: str) -> Html:
    return Html(f'<p class="na">Not available for this run: {esc(reason)}</p>')


def figure_div(fig: go.Figure | None) -> Html:
    if fig is None:
        return Html("")
    return Html('<div class="figure">' + fig.to_html(full_html=False, include_plotlyjs=False, config=PLOTLY_CONFIG) + "</div>")


def section(anchor: str, title: str, body: Iterable[str]) -> Html:
    return Html(f'<section id="{anchor}"><h2>{esc(title)}</h2>{"".join(body)}</section>')
