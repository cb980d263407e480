"""CSV of a gate / compare result (`perfkit compare --format csv`): the JSON's rows, one per
measurement, with the values as numbers and as the text every other view shows
(perfkit.core.units), each cell through the CSV format's escaping rule (perfkit.core.csv_cells).
An unknown number (the other views' `-`) is an empty cell."""

from __future__ import annotations

import csv
import io

from perfkit.core.csv_cells import csv_cell
from perfkit.regression.gate.compare import GateResult
from perfkit.reports.gate.format import fmt_change, fmt_interval, sort_key
from perfkit.reports.gate.text import row_obj

UNKNOWN = "-"  # how perfkit.core.units writes a number it does not know
COLUMNS = ("label", "point", "metric", "also", "verdict", "unit", "baseline", "candidate", "baseline_text",
           "candidate_text", "change", "change_text", "test_interval_low", "test_interval_high", "test_interval_text",
           "p_value", "reason", "noisy_runs", "noise_reputation")


def render_csv(result: GateResult) -> str:
    """One row per measurement, in the table's order (worst verdict first)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for c in sorted(result.rows, key=sort_key):
        r = row_obj(c, result)
        low, high = r["test_interval"]
        cells = {**r, "also": " ".join(r["also"]), "unit": c.unit, "change_text": fmt_change(c),
                 "test_interval_low": low, "test_interval_high": high, "test_interval_text": fmt_interval(c),
                 "p_value": c.p_value if c.p_value == c.p_value else None}
        writer.writerow([_cell(cells[k]) for k in COLUMNS])
    return out.getvalue()


def _cell(value: object) -> object:
    return "" if value is None or value == UNKNOWN else csv_cell(value)
