"""Continuous batching over the slot decoder, in one background thread.

At each step boundary, waiting requests take free KV-cache rows (first come, first served) and
are prefilled one by one (each prefill gives the request's first token); then one decode step
runs every active row and each gets its next greedy token. A request leaves its row when it has
its max_tokens, or at the next boundary after it was cancelled (its client went away).
`extra_step_s` sleeps after every decode step: a server slowed down on purpose.
One pass of the loop (the prefills of the requests that joined, then the decode step) is one
engine step; with a StepProfiler its commands are applied at the step boundaries and every step
runs under its named range (perfkit.workloads.serving.server.step_profiler).
Tokens are handed to `Job.deliver`, called in the batcher thread: (token id, logprob) per token,
then None at the end, or the exception that stopped the request.
torch releases the GIL in its kernels, so the event loop keeps streaming while a step runs.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from perfkit.workloads.serving.server.slots import SlotDecoder
from perfkit.workloads.serving.server.step_profiler import (
    DECODE_RANGE,
    PREFILL_RANGE,
    StepProfiler,
    layer_range,
)

Delivery = tuple[int, float] | BaseException | None


@dataclass(eq=False)
class Job:
    prompt_ids: tuple[int, ...]
    max_tokens: int
    deliver: Callable[[Delivery], None]
    cancelled: bool = False  # set by the event loop; read by the batcher at step boundaries
    position: int = 0  # cache position of the token fed next
    produced: int = 0
    last_token: int = 0


def greedy(logits: Tensor) -> tuple[list[int], list[float]]:
    """logits [N, V] -> the argmax token of each row and its log-probability."""
    ids = logits.argmax(dim=-1)
    logprobs = torch.log_softmax(logits, dim=-1).gather(-1, ids[:, None])[:, 0]
    return [int(i) for i in ids.tolist()], [float(x) for x in logprobs.tolist()]


class BatchCore:
    """The scheduling state (no thread): which job holds which row, one step at a time."""

    def __init__(self, decoder: SlotDecoder) -> None:
        self.decoder = decoder
        self.rows: list[Job | None] = [None] * decoder.max_batch

    @property
    def free_rows(self) -> int:
        return sum(1 for job in self.rows if job is None)

    @property
    def running(self) -> int:
        return len(self.rows) - self.free_rows

    def used_tokens(self) -> int:
        return sum(job.position for job in list(self.rows) if job is not None)

    def admit(self, job: Job) -> None:
        """Prefill `job` into a free row; it delivers its first token (and may finish at once)."""
        if job.cancelled:
            return
        slot = self.rows.index(None)
        self.rows[slot] = job
        try:
            ids, logprobs = greedy(self.decoder.prefill_slot(slot, job.prompt_ids)[None])
        except Exception as exc:
            self._finish(slot, exc)
            return
        job.position = len(job.prompt_ids)
        self._emit(slot, ids[0], logprobs[0])

    def step(self, fresh: tuple[Job, ...] = ()) -> None:
        """Drop cancelled jobs, then one decode step over every active row except `fresh` (the jobs
        this step prefilled: their next token comes from the next step, as in vLLM and SGLang, so
        the gap after the first token is a whole step, never just one decode)."""
        for slot, job in enumerate(self.rows):
            if job is not None and job.cancelled:
                self._finish(slot, None)
        decoding = [job is not None and not any(job is f for f in fresh) for job in self.rows]
        if not any(decoding):
            return
        device = self.decoder.device
        active = torch.tensor(decoding, device=device)
        tokens = torch.tensor([job.last_token if job else 0 for job in self.rows], device=device)
        positions = torch.tensor([job.position if job else 0 for job in self.rows], device=device)
        try:
            ids, logprobs = greedy(self.decoder.decode_rows(tokens, positions, active))
        except Exception as exc:
            self.finish_all(exc)
            return
        for slot, job in enumerate(self.rows):
            if job is not None and decoding[slot]:
                job.position += 1
                self._emit(slot, ids[slot], logprobs[slot])

    def finish_all(self, error: BaseException | None) -> None:
        for slot in range(len(self.rows)):
            self._finish(slot, error)

    def _emit(self, slot: int, token: int, logprob: float) -> None:
        job = self.rows[slot]
        assert job is not None
        job.last_token = token
        job.produced += 1
        job.deliver((token, logprob))
        if job.produced >= job.max_tokens:
            self._finish(slot, None)

    def _finish(self, slot: int, error: BaseException | None) -> None:
        job = self.rows[slot]
        self.rows[slot] = None
        if job is not None:
            job.deliver(error)


class ContinuousBatcher:
    """BatchCore driven by a background thread; submit() and cancel() from any thread."""

    def __init__(self, decoder: SlotDecoder, extra_step_s: float = 0.0,
                 profiler: StepProfiler | None = None) -> None:
        self.core = BatchCore(decoder)
        self.extra_step_s = extra_step_s
        self.profiler = profiler
        if profiler is not None:
            profiler.wake = self._notify
        self.capacity_tokens = decoder.max_batch * decoder.cache_len
        self._pending: deque[Job] = deque()
        self._wake = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name="perfkit-serve-batcher", daemon=True)

    @property
    def waiting(self) -> int:
        return len(self._pending)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        with self._wake:
            self._stopping = True
            self._wake.notify()
        self._thread.join(timeout=30)

    def _notify(self) -> None:
        with self._wake:
            self._wake.notify()

    def submit(self, job: Job) -> None:
        with self._wake:
            self._pending.append(job)
            self._wake.notify()

    def cancel(self, job: Job) -> None:
        with self._wake:
            job.cancelled = True
            if job in self._pending:
                self._pending.remove(job)
            self._wake.notify()

    def _loop(self) -> None:
        torch.set_grad_enabled(False)
        prof = self.profiler
        while True:
            with self._wake:
                while not (self._stopping or self._pending or self.core.running
                           or (prof is not None and prof.pending)):
                    self._wake.wait()
                if self._stopping:
                    break
                joining = [self._pending.popleft()
                           for _ in range(min(self.core.free_rows, len(self._pending)))]
            if prof is None:
                self._step(joining)
                continue
            prof.boundary()
            if joining or self.core.running:
                with prof.step(len(joining), self.core.running, sum(len(j.prompt_ids) for j in joining)):
                    self._step(joining)
        if prof is not None:
            prof.close()
        stopping = RuntimeError("the server is stopping")
        self.core.finish_all(stopping)
        with self._wake:
            left, self._pending = list(self._pending), deque()
        for job in left:
            job.deliver(stopping)

    def _step(self, joining: list[Job]) -> None:
        """One engine step: prefill the requests that joined, then decode every active row."""
        for job in joining:
            with layer_range(self.profiler, PREFILL_RANGE):
                self.core.admit(job)
        if self.core.running:
            with layer_range(self.profiler, DECODE_RANGE):
                self.core.step(fresh=tuple(joining))
            if self.extra_step_s > 0:
                time.sleep(self.extra_step_s)
