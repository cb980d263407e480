"""Token times from TTFT and gaps (or evenly spaced), the stage's time axis, statistic names."""

from __future__ import annotations

import pytest

from perfkit.ingest.serving.rebuild import NO_TOKEN_TIMES, RawRequest, rebuild, split_tokens
from perfkit.ingest.serving.stage import definitions_for, stage_name, stat_name


def test_chunk_gaps_on_the_stage_axis() -> None:
    out = rebuild([RawRequest("a", sent=100.5, scheduled=100.25, ttft=0.5, gaps=(0.25, 0.25)),
                   RawRequest("b", sent=100.0, ttft=0.125, gaps=())], sort=False)
    a, b = out.records
    assert (a.index, a.scheduled_s, a.sent_s) == (0, 0.25, 0.5)  # t0: the earliest arrival, b's
    assert a.token_times_s == (1.0, 1.25, 1.5) == a.chunk_times_s
    assert a.chunk_tokens == (1, 1, 1) and a.output_tokens == 3 and a.end_s == 1.5
    assert (b.scheduled_s, b.sent_s, b.token_times_s) == (0.0, 0.0, (0.125,))
    assert out.notes("x") == []


def test_sorting_by_arrival() -> None:
    out = rebuild([RawRequest("late", sent=5.0, ttft=0.1, gaps=()),
                   RawRequest("early", sent=4.0, scheduled=3.0, ttft=0.1, gaps=())], sort=True)
    assert [r.sent_s for r in out.records] == [1.0, 2.0]
    assert [r.index for r in out.records] == [0, 1]


def test_even_spacing_from_tpot_or_from_the_end() -> None:
    out = rebuild([RawRequest("a", sent=0.0, ttft=0.2, tpot=0.05, output_tokens=4),
                   RawRequest("b", sent=0.0, ttft=0.2, output_tokens=3, end=0.6)], sort=False)
    a, b = out.records
    assert a.token_times_s == pytest.approx((0.2, 0.25, 0.3, 0.35))
    assert b.token_times_s == pytest.approx((0.2, 0.4, 0.6))
    assert "2 requests without per-token times" in out.notes("guidellm")[0]


def test_not_streamed_all_tokens_at_the_end() -> None:
    out = rebuild([RawRequest("a", sent=0.0, output_tokens=5, end=2.0)], sort=False)
    [r] = out.records
    assert r.token_times_s == (2.0,) * 5 and r.chunk_times_s == (2.0,) and r.chunk_tokens == (5,)
    assert r.ttft_s == 2.0 and "1 request not streamed" in out.notes("aiperf")[0]


def test_no_token_data_and_errors() -> None:
    out = rebuild([RawRequest("a", sent=0.0),
                   RawRequest("b", sent=1.0, error="boom", input_tokens=7),
                   RawRequest("c", sent=None)], sort=False)
    a, b, c = out.records
    assert a.error == NO_TOKEN_TIMES and not a.ok
    assert (b.error, b.sent_s, b.input_tokens, b.token_times_s) == ("boom", 1.0, 7, ())
    assert c.error == "never sent" and c.sent_s is None


def test_more_tokens_than_chunks_are_spread_over_the_later_chunks() -> None:
    out = rebuild([RawRequest("a", sent=0.0, ttft=0.1, gaps=(0.1,), output_tokens=4)], sort=False)
    [r] = out.records
    assert r.token_times_s == pytest.approx((0.1, 0.2, 0.2, 0.2)) and r.chunk_tokens == (1, 3)
    assert r.chunk_times_s == pytest.approx((0.1, 0.2)) and r.output_tokens == 4
    assert "more tokens than chunks" in out.notes("vllm")[0]


def test_fewer_tokens_than_chunks_keep_the_chunk_times_and_the_tools_count() -> None:
    out = rebuild([RawRequest("a", sent=0.0, ttft=0.1, gaps=(0.1, 0.1), output_tokens=2)], sort=False)
    [r] = out.records
    assert len(r.token_times_s) == 3 and r.output_tokens == 2
    assert "token count is below" in out.notes("vllm")[0]


@pytest.mark.parametrize(("n", "chunks", "want"), [(1, 1, (1,)), (5, 1, (5,)), (13, 4, (1, 4, 4, 4)),
                                                   (12, 10, (1, 2, 2, 1, 1, 1, 1, 1, 1, 1)), (3, 3, (1, 1, 1))])
def test_split_tokens(n: int, chunks: int, want: tuple[int, ...]) -> None:
    assert split_tokens(n, chunks) == want and sum(want) == n


@pytest.mark.parametrize("given, want", [
    ("avg", "mean"), ("mean", "mean"), ("median", "p50"), ("p50", "p50"), ("std_dev", "std"),
    ("std", "std"), ("min", "min"), ("p99", "p99"), ("p99.9", "p99_9"), ("p99.90", "p99_9"),
    ("p100", "p100"), ("p0.1", "p0_1"), ("count", None), ("p", None), ("px", None), ("p9.x", None),
])
def test_stat_names(given: str, want: str | None) -> None:
    assert stat_name(given) == want


def test_stage_names_and_definitions() -> None:
    assert stage_name("poisson", 8, 4.0, 1.0) == "poisson rate=4/s concurrency=8"
    assert stage_name("gamma", None, 2.5, 0.5) == "gamma rate=2.5/s burstiness=0.5"
    assert stage_name(None, None, None) == "stage"
    defs = definitions_for({"token_itl_p99_s": 1.0, "tpot_p50_s": 1.0, "e2e_from_schedule_p50_s": 1.0},
                           {"token_itl": "chunk gaps", "e2e_from_schedule": "queue too"})
    assert defs == {"e2e_from_schedule_p50_s": "queue too", "token_itl_p99_s": "chunk gaps"}
