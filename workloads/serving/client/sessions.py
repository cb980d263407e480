"""Multi-turn sessions: what each session says, turn by turn, and when (its think times).

A session is a chat conversation: turn k sends the whole history (the earlier turns' prompts as
user messages and the server's answers to them as assistant messages) and then its own prompt;
it is sent `think_s` after the previous turn's answer ended (the first turn: `think_s` after the
session took its place among the stage's concurrent sessions). Synthetic sessions draw each
turn's prompt (common English words, client/prompts.py), its output length and its think time
from the spec's distributions; a session file gives them (client/session_file.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfkit.workloads.serving.client.prompts import Lengths, synthetic


@dataclass(frozen=True)
class ThinkTime:
    """Seconds between an answer and the next turn: fixed, exponential (a mean) or uniform."""

    dist: str = "fixed"  # fixed | exponential | uniform
    value_s: float = 0.0  # fixed; exponential: the mean
    low_s: float = 0.0  # uniform
    high_s: float = 0.0

    def draw(self, rng: np.random.Generator, n: int) -> list[float]:
        if self.dist == "exponential":
            return [float(v) for v in rng.exponential(self.value_s, size=n)] if self.value_s > 0 else [0.0] * n
        if self.dist == "uniform":
            return [float(v) for v in rng.uniform(self.low_s, self.high_s, size=n)]
        return [self.value_s] * n


@dataclass(frozen=True)
class Turn:
    text: str  # the new user prompt of this turn
    input_tokens: int  # the client's count of `text` (the server's usage counts the whole history)
    output_tokens: int  # max_tokens asked for
    think_s: float = 0.0  # the pause before it is sent (after the previous answer ended)


@dataclass(frozen=True)
class Session:
    turns: tuple[Turn, ...]
    adapter: str | None = None  # the LoRA adapter its every turn names (client/lora.py)


def synthetic_sessions(n: int, turns: int, inputs: Lengths, outputs: Lengths, think: ThinkTime,
                       seed: int) -> list[Session]:
    """`n` sessions of `turns` turns each; the first turn of a session starts without a pause."""
    prompts = synthetic(n * turns, inputs, outputs, seed)
    pauses = think.draw(np.random.default_rng([seed, 1]), n * turns)
    out = []
    for s in range(n):
        row = range(s * turns, (s + 1) * turns)
        out.append(Session(tuple(Turn(str(prompts[i].text), prompts[i].input_tokens, prompts[i].output_tokens,
                                      pauses[i] if i % turns else 0.0) for i in row)))
    return out


def total_turns(sessions: list[Session] | tuple[Session, ...]) -> int:
    return sum(len(s.turns) for s in sessions)
