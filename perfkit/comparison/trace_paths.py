"""Where a run's points keep their server traces and the TPOT of their profiled window: read
from the points alone (no trace is loaded here; server_traces.py does the join), so every
comparison of two runs can say what it has without importing the analyzers."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def server_traces_of(points: Sequence[Any], run_dir: str | Path | None) -> dict[str, tuple[str, ...]]:
    """point key -> absolute paths of its server traces (points without any are left out)."""
    if run_dir is None:
        return {}
    out = {}
    for p in points:
        rel = getattr(getattr(p, "artifacts", None), "server_traces", None) or []
        if rel:
            out[str(p.key)] = tuple(str(Path(run_dir) / r) for r in rel)
    return out


def window_tpot_of(points: Sequence[Any]) -> dict[str, float]:
    """point key -> the client's time per token inside its profiled window: the p50 of the token
    gaps whose both tokens arrived inside the window (one engine step apart each), else the TPOT
    p50 of the requests inside it (the profiler slows them, and closing the window pauses the
    engine, so the whole stage's TPOT, or a TPOT spanning the pause, is not their measure)."""
    out = {}
    for p in points:
        window = getattr(getattr(p, "artifacts", None), "profile_window", None)
        overhead = getattr(window, "overhead", None)
        for name in ("itl_p50_inside_s", "tpot_p50_inside_s"):
            value = getattr(overhead, name, None)
            if isinstance(value, (int, float)) and math.isfinite(value) and value > 0:
                out[str(p.key)] = float(value)
                break
    return out
