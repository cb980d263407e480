"""Per-turn, per-session and prompt-cache numbers (measurements/sessions.py) from hand-built
records; a plain stage gets none of them."""

from __future__ import annotations

import dataclasses

import pytest

from perfkit.core.metric_defs import BY_KEY
from perfkit.workloads.serving.measurements.sessions import cache_metrics, session_metrics
from perfkit.workloads.serving.measurements.summary import summarize
from perfkit.workloads.serving.records import RequestRecord
from tests.helpers.serving_records import rec


def _turn(index: int, sid: int, turn: int, sent: float, ttft: float, prompt: int, cached: int | None,
          error: str | None = None) -> RequestRecord:
    times = () if error else (sent + ttft, sent + ttft + 0.01)
    r = rec(index, sent, sent, times=times, input_tokens=prompt, error=error,
            end=sent + 0.5 if error else None)
    return dataclasses.replace(r, session_id=sid, turn=turn, cached_tokens=cached)


# session 0: three turns; session 1: two turns, the second failed; session 2: one turn
RECORDS = [
    _turn(0, 0, 0, 0.0, 0.10, 10, 0),
    _turn(1, 1, 0, 0.0, 0.20, 12, 0),
    _turn(2, 0, 1, 1.0, 0.30, 30, 10),
    _turn(3, 1, 1, 1.2, 0.0, 40, None, error="HTTP 500: boom"),
    _turn(4, 2, 0, 1.5, 0.40, 8, None),
    _turn(5, 0, 2, 2.0, 0.50, 50, 30),
]


def test_session_numbers_are_hand_counts() -> None:
    m = session_metrics(RECORDS)
    assert m["sessions"] == 3.0 and m["session_turns_mean"] == pytest.approx((3 + 1 + 1) / 3)
    # spans: s0 0 -> 2.51, s1 0 -> 1.7 (its failed turn's end), s2 1.5 -> 1.91
    spans = [2.51, 1.7, 0.41]
    assert m["session_table"] == {"session": [0.0, 1.0, 2.0], "turns_ok": [3.0, 1.0, 1.0],
                                  "duration_s": pytest.approx(spans),
                                  "ttft_mean_s": pytest.approx([0.3, 0.2, 0.4])}
    assert m["session_duration_p50_s"] == pytest.approx(1.7)
    assert m["session_duration_mean_s"] == pytest.approx(sum(spans) / 3)
    assert m["session_ttft_mean_p50_s"] == pytest.approx(0.3)
    t = m["turn_table"]
    assert t["turn"] == [0.0, 1.0, 2.0] and t["requests"] == [3.0, 2.0, 1.0] and t["requests_ok"] == [3.0, 1.0, 1.0]
    assert t["ttft_p50_s"] == pytest.approx([0.2, 0.3, 0.5])
    assert t["input_tokens_mean"] == pytest.approx([10.0, 30.0, 50.0])
    assert t["cached_tokens_mean"] == pytest.approx([0.0, 10.0, 30.0])  # of the requests that said it


def test_cache_share_counts_only_the_requests_that_said_it() -> None:
    m = cache_metrics(RECORDS)
    # said: 10/0, 12/0, 30/10, 50/30 (the failed one and the silent one left out)
    assert m == {"prompt_cache_reported": 4.0, "prompt_cached_tokens": 40.0,
                 "prompt_cache_share": pytest.approx(40 / 102)}


def test_a_plain_stage_has_none_of_them() -> None:
    plain = [dataclasses.replace(r, session_id=None, turn=None, cached_tokens=None) for r in RECORDS]
    assert session_metrics(plain) == {} and cache_metrics(plain) == {}
    m = summarize(plain, duration_s=3.0)
    assert not any(k.startswith(("session", "prompt_cache", "prompt_cached")) or k.endswith("_table") for k in m)
    full = summarize(RECORDS, duration_s=3.0)
    assert full["sessions"] == 3.0 and full["prompt_cache_share"] == pytest.approx(40 / 102)
    described = [k for k, v in full.items() if isinstance(v, float) and k not in m]
    assert described and all(k in BY_KEY for k in described)
