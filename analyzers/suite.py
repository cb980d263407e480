"""The standard set of analyses, by name, as one call (used by `perfkit analyze` and profile)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd

from perfkit.analyzers.analysis_names import ANALYSIS_NAMES
from perfkit.analyzers.collectives.analysis import collective_summary
from perfkit.analyzers.event_table import EventTable
from perfkit.analyzers.hlo_ops import hlo_op_summary
from perfkit.analyzers.idle import idle_breakdown
from perfkit.analyzers.kernel_summary import category_summary, kernel_summary
from perfkit.analyzers.launch import launch_summary
from perfkit.analyzers.multirank import comm_overlap, rank_skew
from perfkit.analyzers.op_throughput import op_throughput
from perfkit.analyzers.ranges import range_projection
from perfkit.analyzers.temporal import temporal_breakdown
from perfkit.core.memory import release_freed

ANALYSES: dict[str, Callable[[EventTable], pd.DataFrame]] = {
    "kernels": kernel_summary,
    "categories": category_summary,
    "temporal": temporal_breakdown,
    "idle": idle_breakdown,
    "launch": launch_summary,
    "ranges": range_projection,
    "ops": op_throughput,
    "overlap": comm_overlap,
    "skew": rank_skew,
    "collectives": collective_summary,
    "hlo_ops": hlo_op_summary,
}
if tuple(ANALYSES) != ANALYSIS_NAMES:  # the names a command line lists are the registry's
    raise ImportError(f"perfkit.analyzers.analysis_names lists {ANALYSIS_NAMES}, the registry has {tuple(ANALYSES)}")


def run_analyses(table: EventTable, names: Sequence[str] | None = None) -> dict[str, pd.DataFrame]:
    """{analysis name: DataFrame} for `names` (default: all of ANALYSES, in that order)."""
    chosen = list(ANALYSES) if names is None else list(names)
    unknown = [n for n in chosen if n not in ANALYSES]
    if unknown:
        raise ValueError(f"unknown analyses {unknown}; choose from {list(ANALYSES)}")
    out = {}
    for name in chosen:
        out[name] = ANALYSES[name](table)
        release_freed()  # an analysis' temporaries: returned, so the next one starts lean
    return out
