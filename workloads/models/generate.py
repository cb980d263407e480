"""Greedy generation (prefill, then N decode steps) with a timestamp at every output token.

Timestamps: on CUDA an event recorded on the stream after each token's kernels (no host sync
inside the loop, so an eager loop's launch gaps are measured as they happen); on a CPU
time.perf_counter after each token (CPU ops are synchronous). Time 0 is just before prefill
starts, with the prompt already on the device.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
from torch import Tensor

from perfkit.workloads.models.model import Transformer
from perfkit.workloads.models.ranges import DECODE_STEP, PREFILL, phase
from perfkit.workloads.models.stepper import Stepper


class TokenClock:
    """Marks after each output token; `times_s()` returns seconds since `start()`."""

    def __init__(self, device: str) -> None:
        self.cuda = device.startswith("cuda")
        self._start: float = 0.0
        self._marks: list[float] = []
        self._events: list[torch.cuda.Event] = []

    def start(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()
            self._events = [torch.cuda.Event(enable_timing=True)]
            self._events[0].record()
        else:
            self._marks = []
            self._start = time.perf_counter()

    def mark(self) -> None:
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            self._events.append(event)
        else:
            self._marks.append(time.perf_counter() - self._start)

    def times_s(self) -> list[float]:
        if self.cuda:
            torch.cuda.synchronize()
            first = self._events[0]
            return [first.elapsed_time(e) * 1e-3 for e in self._events[1:]]
        return list(self._marks)


@dataclass(frozen=True)
class Generation:
    tokens: Tensor  # [B, 1 + steps] generated token ids (the first from prefill)
    times_s: list[float]  # time of each output token since the start of prefill


@torch.no_grad()
def prefill(model: Transformer, prompt: Tensor) -> Tensor:
    """Run the prompt [B, P] through the model from an empty cache; float32 logits [B, V]."""
    positions = torch.arange(prompt.shape[1], device=prompt.device)
    return model(prompt, positions, prefill=True)


@torch.no_grad()
def generate(model: Transformer, stepper: Stepper, prompt: Tensor, steps: int,
             keep_tokens: bool = False) -> Generation:
    """Prefill `prompt` [B, P], then `steps` greedy decode steps through `stepper`."""
    clock = TokenClock(stepper.device)
    p = prompt.shape[1]
    kept: list[Tensor] = []
    clock.start()
    with phase(PREFILL):
        first = prefill(model, prompt).argmax(dim=-1, keepdim=True)  # [B, 1]
        stepper.set_tokens(first)
    clock.mark()
    if keep_tokens:
        kept.append(first)
    for i in range(steps):
        with phase(DECODE_STEP):
            stepper.set_pos(p + i)
            stepper.run()
        clock.mark()
        if keep_tokens:
            kept.append(stepper.tokens.clone())
    times = clock.times_s()
    tokens = torch.cat(kept, dim=1) if kept else torch.empty(prompt.shape[0], 0, dtype=torch.long)
    return Generation(tokens=tokens, times_s=times)
