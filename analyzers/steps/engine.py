"""Engine steps of a server trace: one row per forward, labelled prefill / decode / mixed.

Three methods, the first that finds steps wins, and the result says which:

1. the engine's own step ranges (engine_names.py): the engine with the most ranges in the trace
   (a trace can carry two families, e.g. SGLang's `step[...]` beside an attention backend's
   `execute_...`); nested ranges of the same family keep the outermost;
2. torch.profiler's ProfilerStep#N windows (kind unknown);
3. the structure of the op stream: GPU ops (CPU ops where the trace has no GPU work) merged per
   rank, split where the stream is idle for more than GAP_FACTOR x the median gap and at least
   MIN_GAP_NS (kind unknown).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd

from perfkit.analyzers.event_table import EventTable, Kind
from perfkit.analyzers.intervals import merge
from perfkit.analyzers.steps.engine_names import ENGINES, UNKNOWN, StepName, parse_step_name
from perfkit.analyzers.steps.profiler_steps import step_windows

GAP_FACTOR = 10.0
MIN_GAP_NS = 20_000
STEP_COLUMNS = ("step", "kind", "batch", "tokens", "rank", "pid", "tid", "ts_ns", "end_ns", "row", "name")
METHOD_PROFILER = "ProfilerStep ranges"
METHOD_GAPS = "gaps in the op stream"


@dataclass(frozen=True)
class EngineSteps:
    frame: pd.DataFrame  # STEP_COLUMNS, one row per step, by (rank, ts_ns); batch / tokens -1: not in the trace
    method: str  # "<engine> step ranges", METHOD_PROFILER or "gaps in the op stream (> X us)"
    engine: str = ""  # perfkit serve | vLLM | SGLang | TensorRT-LLM ("" when not from ranges)

    def __len__(self) -> int:
        return len(self.frame)


def _empty() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype="object" if c in ("kind", "name") else "int64") for c in STEP_COLUMNS})


def _outermost(df: pd.DataFrame) -> pd.DataFrame:
    """Drop ranges nested inside an earlier range of the same thread."""
    keep = []
    for _, g in df.groupby(["rank", "pid", "tid"], sort=False):
        g = g.sort_values("ts_ns", kind="stable")
        run_end = np.maximum.accumulate(g["end_ns"].to_numpy())
        inside = np.zeros(len(g), dtype=bool)
        inside[1:] = g["ts_ns"].to_numpy()[1:] < run_end[:-1]
        keep.append(g[~inside])
    return pd.concat(keep) if keep else df


def _from_ranges(table: EventTable) -> EngineSteps | None:
    parsed: dict[int, StepName] = {}
    for i, n in enumerate(table.names):
        s = parse_step_name(n) if n[:1] in "pes[" or "_forward_step" in n else None
        if s is not None:
            parsed[i] = s
    if not parsed:
        return None
    rows = np.flatnonzero(table.mask_kind(Kind.USER_ANNOTATION) & np.isin(table["name_id"], list(parsed)))
    if not len(rows):
        return None
    engines = Counter(parsed[int(i)].engine for i in table["name_id"][rows])
    engine = min(engines, key=lambda e: (-engines[e], ENGINES.index(e)))
    rows = np.array([r for r in rows if parsed[int(table["name_id"][r])].engine == engine], dtype=np.int64)
    names = [parsed[int(i)] for i in table["name_id"][rows]]
    df = pd.DataFrame({
        "kind": [s.kind for s in names],
        "batch": [-1 if s.batch is None else s.batch for s in names],
        "tokens": [-1 if s.tokens is None else s.tokens for s in names],
        "rank": table["rank"][rows].astype(np.int64),
        "pid": table["pid"][rows].astype(np.int64),
        "tid": table["tid"][rows].astype(np.int64),
        "ts_ns": table["ts_ns"][rows].astype(np.int64),
        "end_ns": (table["ts_ns"][rows] + table["dur_ns"][rows]).astype(np.int64),
        "row": rows,
        "name": table.name_of(table["name_id"][rows]),
    })
    return EngineSteps(_numbered(_outermost(df)), f"{engine} step ranges", engine)


def _numbered(df: pd.DataFrame) -> pd.DataFrame:
    df = df.sort_values(["rank", "ts_ns"], kind="stable").reset_index(drop=True)
    df.insert(0, "step", np.arange(len(df), dtype=np.int64))
    return df[list(STEP_COLUMNS)]


def _from_profiler_steps(table: EventTable) -> EngineSteps | None:
    w = step_windows(table)
    if w.empty:
        return None
    df = w.drop(columns=["step"]).assign(kind=UNKNOWN, batch=-1, tokens=-1)
    df["name"] = table.name_of(table["name_id"][w["row"].to_numpy()])
    return EngineSteps(_numbered(df), METHOD_PROFILER)


def _from_gaps(table: EventTable, gap_factor: float, min_gap_ns: int) -> EngineSteps:
    gpu = table.gpu_mask()
    sel = gpu if gpu.any() else table.mask_kind(Kind.CPU_OP)
    frames, thresholds = [], []
    for r in np.unique(table["rank"][sel]):
        rows = np.flatnonzero(sel & (table["rank"] == r))
        s, e = merge(table["ts_ns"][rows], table["ts_ns"][rows] + table["dur_ns"][rows])
        gaps = s[1:] - e[:-1]
        cut = max(float(np.median(gaps)) * gap_factor, float(min_gap_ns)) if len(gaps) else np.inf
        thresholds.append(cut)
        brk = np.flatnonzero(gaps > cut)
        first = np.concatenate([[0], brk + 1])
        last = np.concatenate([brk, [len(s) - 1]])
        frames.append(pd.DataFrame({"kind": UNKNOWN, "batch": -1, "tokens": -1, "rank": int(r), "pid": -1, "tid": -1,
                                    "ts_ns": s[first], "end_ns": e[last], "row": -1, "name": ""}))
    if not frames:
        return EngineSteps(_empty(), METHOD_GAPS)
    cut_us = min(thresholds) / 1e3
    return EngineSteps(_numbered(pd.concat(frames)), f"{METHOD_GAPS} (> {cut_us:.0f} us)")


def engine_steps(table: EventTable, gap_factor: float = GAP_FACTOR, min_gap_ns: int = MIN_GAP_NS) -> EngineSteps:
    """The engine steps of `table` (see the module docstring for the methods, first wins)."""
    return _from_ranges(table) or _from_profiler_steps(table) or _from_gaps(table, gap_factor, min_gap_ns)
