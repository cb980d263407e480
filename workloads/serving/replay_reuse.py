"""The prefix reuse a replayed Mooncake trace asked for, beside the reuse the server reported.

Asked (client/hash_prompts.py): the prompt tokens an earlier request of the trace shares with each
request, over the requests the achieved share counts (succeeded ones whose server said its
`cached_tokens`; all succeeded ones when none said), divided by their prompt tokens. Achieved: the
stage's `prompt_cache_share` (measurements/sessions.py). Both go to the stage's notes, and the asked
share to `replay_prefix_reuse_asked`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from perfkit.core.units import fmt_percent
from perfkit.workloads.serving.client.arrivals import order_note, read_replay
from perfkit.workloads.serving.client.hash_prompts import asked_reuse_tokens
from perfkit.workloads.serving.records import RequestRecord
from perfkit.workloads.serving.spec import ServingSpec


def asked_share(asked: Sequence[int], inputs: Sequence[int], records: Sequence[RequestRecord]) -> float | None:
    """Asked reuse over the requests the achieved share counts (request i: asked[i % n] tokens of inputs[i % n])."""
    ok = [r for r in records if r.ok]
    counted = [r for r in ok if r.cached_tokens is not None] or ok
    total = sum(inputs[r.index % len(inputs)] for r in counted)
    return sum(asked[r.index % len(asked)] for r in counted) / total if total else None


def reuse_note(asked: float, achieved: float | None, block_size: int, reported: int, counted: int) -> str:
    said = (f"achieved {fmt_percent(achieved)} (the server's cached_tokens, {reported} of {counted} requests)"
            if achieved is not None else "achieved: not measured (the server said no cached_tokens)")
    return f"prefix reuse: asked {fmt_percent(asked)} of prompt tokens (hash_ids, {block_size}-token blocks), {said}"


def replay_reuse(spec: ServingSpec, params: dict[str, Any], records: Sequence[RequestRecord],
                 achieved: float | None) -> tuple[float | None, list[str]]:
    """(asked share, notes) of a stage that replayed a Mooncake trace; (None, []) for any other stage."""
    path = params.get("replay")
    if path is None:
        return None, []
    arrivals = read_replay(path, spec.load.replay_block_size)
    notes = [n for n in (order_note(path, arrivals),) if n]
    if arrivals[0].hash_ids is None:
        return None, notes
    asked = asked_share(asked_reuse_tokens(arrivals, spec.load.replay_block_size),
                        [a.input_tokens or 0 for a in arrivals], records)
    if asked is None:
        return None, notes
    ok = sum(1 for r in records if r.ok)
    reported = sum(1 for r in records if r.ok and r.cached_tokens is not None)
    return asked, [*notes, reuse_note(asked, achieved, spec.load.replay_block_size, reported, ok)]
