"""The serving attribution of a comparison (perfkit.regression.serving_why.ServingWhy) as lines
of plain text: one per stage, `label: text`, the same words in the terminal, the gate's Markdown
and the reports. Computes nothing: each format applies its own escaping rule to these lines."""

from __future__ import annotations

from collections.abc import Sequence

from perfkit.regression.serving_why import ServingWhy
from perfkit.reports.serving.kernel_lines import kernel_lines

TITLE = "why (serving stages)"


INDENT = "  "  # the kernel level's lines under their stage's line


def why_lines(why: Sequence[ServingWhy]) -> list[str]:
    """`label: text` per serving stage compared; under it, indented, the kernel level where both
    sides had server traces (reports/serving/kernel_lines.py)."""
    out = []
    for w in why:
        out.append(f"{w.label}: {w.text}")
        if w.kernels is not None:
            out += [INDENT + line for line in kernel_lines(w.kernels)]
    return out
