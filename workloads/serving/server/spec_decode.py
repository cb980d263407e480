"""Simulated speculative decoding (synthetic mode): how many of k draft tokens a step accepts.

Each decode step proposes k draft tokens; position i (0-based) is accepted with probability
`accept_rate` provided positions 0..i-1 were, so a step emits accepted + 1 tokens (the target
model's own token after the accepted prefix), as vLLM's rejection sampler does. The counters
mirror vLLM's spec_decode_num_drafts / _num_draft_tokens / _num_accepted_tokens /
_num_accepted_tokens_per_pos{position}.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from perfkit.workloads.serving.server.options import SpecDecodeOptions


def accepted_tokens(rng: random.Random, spec: SpecDecodeOptions) -> int:
    accepted = 0
    while accepted < spec.k and rng.random() < spec.accept_rate:
        accepted += 1
    return accepted


@dataclass
class SpecDecodeCounters:
    k: int
    drafts: int = 0
    draft_tokens: int = 0
    accepted_tokens: int = 0
    accepted_per_pos: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.accepted_per_pos = [0] * self.k

    def record(self, accepted: int) -> None:
        self.drafts += 1
        self.draft_tokens += self.k
        self.accepted_tokens += accepted
        for pos in range(accepted):
            self.accepted_per_pos[pos] += 1
