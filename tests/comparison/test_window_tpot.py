"""The step period is set beside the TPOT of the requests the server's trace saw (inside the
profiled window), not the whole stage's: the profiler slows those requests."""

from __future__ import annotations

import math
from types import SimpleNamespace

from perfkit.comparison.server_traces import _client
from perfkit.comparison.trace_paths import window_tpot_of
from perfkit.core.profile_window import WindowOverhead


def _point(key: str, inside: float | None) -> SimpleNamespace:
    window = SimpleNamespace(overhead=WindowOverhead(tpot_p50_inside_s=inside, tpot_p50_outside_s=0.027))
    return SimpleNamespace(key=key, artifacts=SimpleNamespace(profile_window=window))


def test_window_tpot_per_point_and_only_when_measured() -> None:
    points = [_point("a", 0.0599), _point("b", None), _point("c", math.nan), SimpleNamespace(key="d", artifacts=None)]
    assert window_tpot_of(points) == {"a": 0.0599}


def test_the_check_prefers_the_window_and_says_so() -> None:
    inside = _client({"tpot_p50_s": 0.0271}, 0.0632, 0.0599)
    assert inside is not None and inside.inside_window and abs(inside.ratio - 1.055) < 0.01
    stage = _client({"tpot_p50_s": 0.0271}, 0.0632)
    assert stage is not None and not stage.inside_window and stage.ratio > 2
    assert _client({}, 0.0632) is None and _client({"tpot_p50_s": 0.02}, math.nan) is None
