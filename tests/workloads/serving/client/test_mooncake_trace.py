"""Mooncake traces read by read_replay (client/mooncake.py, client/arrivals.py) and the prompts
built from their hash ids (client/hash_prompts.py): a real 40-line excerpt loads, equal leading
ids give exactly equal leading tokens, the asked reuse equals hand counts, out-of-order lines are
sorted with a note."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfkit.core.errors import SpecError
from perfkit.workloads.serving.client.arrivals import Arrival, order_note, read_replay
from perfkit.workloads.serving.client.hash_prompts import (
    asked_reuse_tokens,
    hash_prompt,
    warmup_prompt,
)

SAMPLE = Path(__file__).resolve().parents[3] / "data" / "serving" / "mooncake" / "conversation_trace_head40.jsonl"


def test_the_real_excerpt_loads_with_its_blocks() -> None:
    arrivals = read_replay(SAMPLE)
    assert len(arrivals) == 40 and arrivals[0].time_s == 0.0 and arrivals[-1].time_s == pytest.approx(12.0)
    assert arrivals[0].input_tokens == 6758 and arrivals[0].output_tokens == 500
    assert all(a.hash_ids is not None and a.hash_ids[0] == 0 for a in arrivals)
    assert order_note(SAMPLE, arrivals) is None
    asked = asked_reuse_tokens(arrivals, 512)
    assert asked == [0] + [512] * 39  # every request shares block 0 with the first
    assert sum(asked) / sum(a.input_tokens or 0 for a in arrivals) == pytest.approx(19_968 / 506_280)


def test_the_same_file_at_another_block_size_is_refused_at_its_first_line() -> None:
    with pytest.raises(SpecError, match=rf"{SAMPLE}:1: 14 hash_ids for input_length 6758; 256-token blocks need 27"):
        read_replay(SAMPLE, 256)


def _a(n_in: int, ids: tuple[int, ...], t: float = 0.0, line: int = 0) -> Arrival:
    return Arrival(t, n_in, 1, ids, line)


@pytest.mark.parametrize("token_ids", [True, False])
def test_shared_leading_ids_share_exactly_their_tokens(token_ids: bool) -> None:
    def toks(a: Arrival) -> list[object]:
        text = hash_prompt(a, 8, seed=3, token_ids=token_ids, vocab_size=32000).text
        return list(text) if isinstance(text, list) else text.split(" ")
    a, b, c = toks(_a(20, (1, 2, 3))), toks(_a(24, (1, 2, 4))), toks(_a(12, (1, 2)))
    assert len(a) == 20 and len(b) == 24 and len(c) == 12
    assert a[:16] == b[:16] and a[16] != b[16]  # two blocks, then they part
    assert c == a[:12]  # a prefix cut inside a block
    assert toks(_a(20, (1, 2, 3))) == a  # the same id and seed: the same tokens
    other = hash_prompt(_a(20, (1, 2, 3)), 8, seed=4, token_ids=token_ids, vocab_size=32000).text
    assert (list(other) if isinstance(other, list) else other.split(" ")) != a  # another seed: other tokens


def test_token_ids_stay_inside_the_vocabulary_and_warm_up_shares_nothing() -> None:
    ids = hash_prompt(_a(4096, tuple(range(8))), 512, seed=0, token_ids=True, vocab_size=50).text
    assert isinstance(ids, list) and min(ids) >= 1 and max(ids) <= 49
    warm = warmup_prompt(16, token_ids=True).text
    assert isinstance(warm, list) and set(warm) == {0}


def test_asked_reuse_by_hand() -> None:
    trace = [_a(40, (1, 2, 3)), _a(48, (1, 2, 4)), _a(20, (1, 5)), _a(40, (1, 2, 3)), _a(16, (6,)),
             _a(35, (6, 7, 8)), _a(10, (1,)), _a(48, (1, 2, 4))]
    # 6: inside block 1, longer earlier ones: 10; 7: request 1's prompt again, whole: 48
    assert asked_reuse_tokens(trace, 16) == [0, 32, 16, 40, 0, 16, 10, 48]
    # a block seen before but after a different one is no prefix: nothing reused
    assert asked_reuse_tokens([_a(32, (1, 2)), _a(32, (3, 2))], 16) == [0, 0]
    # an earlier prompt that ended inside the shared block shares only its own length
    assert asked_reuse_tokens([_a(20, (1, 2)), _a(32, (1, 2))], 16) == [0, 20]


def test_lines_out_of_time_order_are_sorted_with_a_note(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    lines = [(0, [1]), (300, [2]), (100, [3])]
    path.write_text("\n".join(json.dumps({"timestamp": t, "input_length": 5, "output_length": 1, "hash_ids": ids})
                              for t, ids in lines) + "\n")
    arrivals = read_replay(path)
    assert [a.hash_ids for a in arrivals] == [(1,), (3,), (2,)] and [a.time_s for a in arrivals] == [0, 0.1, 0.3]
    assert order_note(path, arrivals) == (f"{path}:3: arrives before line 2 above it (times out of order); "
                                          "replayed sorted by time")
