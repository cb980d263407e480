"""Tables as the dashboard shows them: every number through perfkit.core.units with its unit, as
text, under a readable column name.

Column names say what a number is by their suffix (the repository's naming rule: time_s, dur_ns,
bytes, share_pct, flop_per_s); `readable` formats each such column and names it in words
("total_ns" -> "total"; "achieved_flop_per_s" -> "achieved flop/s"). Columns it does not know
keep their values; their names lose the underscores. Formatted cells are strings: Streamlit
shows them as they are (no `0.0000`, no `2.2B`), and a dataframe cell is never a link.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from perfkit.core.units import fmt_change, fmt_num, fmt_p, fmt_rate, fmt_time, fmt_value, sig

METRIC_UNITS = {"time_s": "s", "flop_per_s": "flop/s", "bytes_per_s": "B/s"}  # a point's timed metrics


def fmt_ns(value: Any) -> str:
    """A duration in ns: 1500 -> '1.5 us'; '-' when missing."""
    try:
        return fmt_time(float(value) * 1e-9)
    except (TypeError, ValueError):
        return "-"


def fmt_delta_ns(value: Any) -> str:
    """A signed duration in ns: 1500 -> '+1.5 us', -2e6 -> '-2 ms'."""
    text = fmt_ns(value)
    try:
        positive = float(value) > 0
    except (TypeError, ValueError):
        return text
    return "+" + text if positive else text


def fmt_share(value: Any) -> str:
    """A percentage already in percent: 12.345 -> '12.3%'."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        return "-"
    return "-" if math.isnan(x) or math.isinf(x) else f"{sig(x)}%"


def fmt_delta_pct(value: Any) -> str:
    """A change already in percent: 12.3 -> '+12.3%'."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        return "-"
    return fmt_change(1.0 + x / 100.0)


# suffix -> (the name's new ending, the formatter); the first match wins
SUFFIXES: tuple[tuple[str, str, Callable[[Any], str]], ...] = (
    ("delta_ns", "change", fmt_delta_ns),
    ("delta_pct", "change %", fmt_delta_pct),
    ("_flop_per_s", " flop/s", lambda v: fmt_rate(v, "flop/s")),
    ("_bytes_per_s", " bytes/s", lambda v: fmt_rate(v, "B/s")),
    ("flop_per_s", "flop/s", lambda v: fmt_rate(v, "flop/s")),
    ("bytes_per_s", "bytes/s", lambda v: fmt_rate(v, "B/s")),
    ("_ns", "", fmt_ns),
    ("_s", "", fmt_time),
    ("_pct", "", fmt_share),
    ("_bytes", " bytes", lambda v: fmt_rate(v, "B")),
    ("p_value", "p-value", fmt_p),
)
NAMES = {"time_s": "time", "count": "calls", "count_a": "calls before", "count_b": "calls after",
         "total_a_ns": "time before", "total_b_ns": "time after", "mean_a_ns": "mean before",
         "mean_b_ns": "mean after", "run_id": "run", "created_at": "created", "commit_short": "commit",
         "n": "samples", "key": "point"}


def words(column: str) -> str:
    """A column name in words: 'host_wait' -> 'host wait'."""
    return column.replace("_", " ").strip()


def readable_column(column: str, values: pd.Series) -> tuple[str, pd.Series]:
    """(name in words, values as text) of one column, by its name's suffix."""
    name = str(column)
    for suffix, ending, fmt in SUFFIXES:
        if name.endswith(suffix) and pd.api.types.is_numeric_dtype(values):
            return NAMES.get(name) or words(name[: -len(suffix)] + ending), values.map(fmt)
    if pd.api.types.is_float_dtype(values):
        return NAMES.get(name, words(name)), values.map(fmt_num)
    return NAMES.get(name, words(name)), values


def readable(df: pd.DataFrame, names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """`df` with every number formatted by its unit and every column named in words; `names`
    overrides the name of a column (by its original name)."""
    out = {}
    for column in df.columns:
        name, values = readable_column(str(column), df[column])
        out[(names or {}).get(str(column), name)] = values
    return pd.DataFrame(out, index=df.index)


def metric_values(values: pd.Series, metrics: pd.Series, units: Mapping[str, str] | None = None) -> pd.Series:
    """Values of several metrics, each formatted by its metric's unit (time_s as a time, ...)."""
    known = {**METRIC_UNITS, **(units or {})}
    return pd.Series([fmt_value(v, known.get(str(m), "")) for v, m in zip(values, metrics, strict=True)],
                     index=values.index, dtype=object)


def fmt_rel_change(value: Any) -> str:
    """A relative change (0.3 = 30% more): '+30%'; '-' when missing."""
    try:
        return fmt_change(1.0 + float(value))
    except (TypeError, ValueError):
        return "-"


def open_regressions_table(shown: pd.DataFrame) -> pd.DataFrame:
    """Overview's open regressions as shown: changes as percentages, levels in their metric's unit."""
    return pd.DataFrame({
        "GPU": shown["gpu"], "branch": shown["branch"], "point": shown["key"], "metric": shown["metric"],
        "seen by": shown["seen_by"], "change": shown["magnitude"].map(fmt_rel_change), "gate": shown["gate"],
        "gate change": shown["gate_change"].map(fmt_rel_change), "since commit": shown["since_commit"],
        "commits since": shown["commits_since"], "p-value": shown["p_value"].map(fmt_p),
        "before": metric_values(shown["before"], shown["metric"]),
        "after": metric_values(shown["after"], shown["metric"])}, index=shown.index)


def change_points_table(changes: pd.DataFrame, unit: str) -> pd.DataFrame:
    """History's change points as shown: the change as a percentage, levels in the metric's unit."""
    return pd.DataFrame({
        "GPU": changes["gpu"], "previous commit": changes["previous_commit"], "commit": changes["commit"],
        "created": changes["created_at"], "kind": changes["kind"],
        "change": changes["magnitude"].map(fmt_rel_change), "p-value": changes["p_value"].map(fmt_p),
        "before": changes["before"].map(lambda v: fmt_value(v, unit)),
        "after": changes["after"].map(lambda v: fmt_value(v, unit))}, index=changes.index)


def history_runs_table(runs: pd.DataFrame, unit: str) -> pd.DataFrame:
    """History's runs as shown: each run's value in the metric's unit."""
    return pd.DataFrame({
        "run": runs["run_id"], "GPU": runs["gpu"], "created": runs["created_at"], "commit": runs["commit"],
        "branch": runs["branch"], "value": runs["value"].map(lambda v: fmt_value(v, unit)),
        "samples": runs["n"]}, index=runs.index)


def roofline_table(placed: pd.DataFrame, roofs: list[str]) -> pd.DataFrame:
    """Roofline's placed points as shown: rates with SI prefixes, times, percent of each roof."""
    out = readable(placed[[c for c in placed.columns if not c.startswith(("attainable_", "pct_of_roof_", "bound_"))]],
                   {"intensity_dram": "intensity (flop/B, DRAM)"})
    for roof in roofs:
        for column, name, fmt in ((f"attainable_flop_per_s_{roof}", f"attainable flop/s ({roof})",
                                   lambda v: fmt_rate(v, "flop/s")),
                                  (f"pct_of_roof_{roof}", f"% of {roof} roof", fmt_share),
                                  (f"bound_{roof}", f"bound ({roof})", None)):
            if column in placed.columns:
                out[name] = placed[column].map(fmt) if fmt else placed[column]
    return out


# The columns a reader looks for first (what moved, the verdict, by how much) lead every table
# that has them, so they are on screen at 1400 px whatever the point labels' length; long
# columns (point, why) get a bounded width and follow. Each key column says what it is on hover.
KEY_COLUMNS = ("metric", "verdict", "gate", "change")
KEY_HELP = {"metric": "the measurement compared", "verdict": "the gate's verdict on this measurement",
            "gate": "the gate's verdict on the latest run against the last run before the change",
            "change": "candidate / baseline - 1 (after / before)"}


def key_columns_first(columns: list[str], hidden: tuple[str, ...] = ()) -> list[str]:
    """`columns` with KEY_COLUMNS first (in that order), then the rest as they were; `hidden` left out."""
    first = [c for c in KEY_COLUMNS if c in columns]
    return [c for c in first + [c for c in columns if c not in first] if c not in hidden]

