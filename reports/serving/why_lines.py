"""The serving attribution of a comparison (perfkit.regression.serving_why.ServingWhy) as lines
of plain text: one per stage, `label: text`, the same words in the terminal, the gate's Markdown
and the reports. Computes nothing: each format applies its own escaping rule to these lines."""

from __future__ import annotations

from collections.abc import Sequence

from perfkit.regression.serving_why import ServingWhy

TITLE = "why (serving stages)"


def why_lines(why: Sequence[ServingWhy]) -> list[str]:
    """`label: text` per serving stage compared."""
    return [f"{w.label}: {w.text}" for w in why]
