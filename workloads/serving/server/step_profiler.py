"""torch.profiler around the batcher's engine steps: the server side of POST /start_profile.

Commands come from the event loop (`start`, `stop`) and are applied by the batcher thread at a
step boundary, so a window holds whole steps only. While a window is open every engine step runs
inside one record_function range named

    perfkit_step#<n> <prefill|decode|mixed> bs=<B> tokens=<T>

(n counts the server's steps since it started; prefill: prompts only, decode: no prompt, mixed:
both; B the requests in the step, T the tokens it computes: prompt tokens + one per decoded row).
Inside it, `perfkit_prefill` ranges (one per prompt) and one `perfkit_decode` range, and inside
the model's layers `perfkit_attention` / `perfkit_mlp` ranges. With `num_steps` the window closes
itself after that many steps. Closing writes `<trace_dir>/<host>_<pid>.<ms>.pt.trace.json.gz`
(torch's tensorboard_trace_handler, as vLLM's) before the command's future resolves, so a
client that got the answer finds the file complete.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from perfkit.profiler.trace_capture import profiler_activities

PREFILL, DECODE, MIXED = "prefill", "decode", "mixed"
STEP_PREFIX = "perfkit_step#"
ATTENTION_RANGE, MLP_RANGE = "perfkit_attention", "perfkit_mlp"
PREFILL_RANGE, DECODE_RANGE = "perfkit_prefill", "perfkit_decode"


class ProfileStateError(Exception):
    """A start while a window is open, or a stop while none is."""


def step_name(n: int, prompts: int, decoded_before: int, prompt_tokens: int) -> str:
    """The record_function name of engine step `n` (see the module's docstring)."""
    kind = MIXED if prompts and decoded_before else PREFILL if prompts else DECODE
    bs = prompts + decoded_before
    return f"{STEP_PREFIX}{n} {kind} bs={bs} tokens={prompt_tokens + bs}"


class StepProfiler:
    def __init__(self, trace_dir: Path, device: str) -> None:
        self.trace_dir = trace_dir
        self.device = device
        self.steps = 0  # engine steps since the server started
        self._prof: Any = None
        self._left: int | None = None  # steps left in a window with num_steps
        self._commands: list[tuple[Callable[[], Any], Future[Any]]] = []
        self._lock = threading.Lock()
        self.wake: Callable[[], None] = lambda: None  # set by the batcher: wake its thread

    @property
    def active(self) -> bool:
        return self._prof is not None

    @property
    def pending(self) -> bool:
        return bool(self._commands)

    # -- from the event loop ------------------------------------------------------------------
    def start(self, num_steps: int | None = None) -> Future[None]:
        return self._post(lambda: self._start(num_steps))

    def stop(self) -> Future[list[str]]:
        return self._post(self._stop)

    def _post(self, fn: Callable[[], Any]) -> Future[Any]:
        done: Future[Any] = Future()
        with self._lock:
            self._commands.append((fn, done))
        self.wake()
        return done

    # -- in the batcher thread ------------------------------------------------------------------
    def boundary(self) -> None:
        """Apply the commands posted since the last boundary, in order."""
        with self._lock:
            commands, self._commands = self._commands, []
        for fn, done in commands:
            try:
                done.set_result(fn())
            except Exception as exc:  # handed to the caller, never kills the batcher
                done.set_exception(exc)

    @contextlib.contextmanager
    def step(self, prompts: int, decoded_before: int, prompt_tokens: int) -> Iterator[None]:
        """One engine step: under its named range while a window is open."""
        self.steps += 1
        if self._prof is None:
            yield
            return
        from torch.profiler import record_function

        with record_function(step_name(self.steps, prompts, decoded_before, prompt_tokens)):
            yield
        if self._left is not None:
            self._left -= 1
            if self._left <= 0:
                self._stop()

    def close(self) -> None:
        """The server is stopping: a window still open is closed and written."""
        self.boundary()
        if self._prof is not None:
            self._stop()

    def _start(self, num_steps: int | None) -> None:
        if self._prof is not None:
            raise ProfileStateError("the profiler is already running; POST /stop_profile first")
        from torch.profiler import profile, tensorboard_trace_handler

        self.trace_dir.mkdir(parents=True, exist_ok=True)
        prof = profile(activities=profiler_activities(self.device), record_shapes=True,
                       on_trace_ready=tensorboard_trace_handler(str(self.trace_dir), use_gzip=True))
        prof.start()
        self._prof, self._left = prof, num_steps

    def _stop(self) -> list[str]:
        if self._prof is None:
            raise ProfileStateError("the profiler is not running; POST /start_profile first")
        before = set(self.trace_dir.glob("*.pt.trace.json.gz"))
        prof, self._prof, self._left = self._prof, None, None
        if self.device.startswith("cuda"):
            import torch

            torch.cuda.synchronize()
        prof.stop()  # on_trace_ready writes the file
        return sorted(str(p) for p in set(self.trace_dir.glob("*.pt.trace.json.gz")) - before)


def layer_range(profiler: StepProfiler | None, name: str) -> contextlib.AbstractContextManager[Any]:
    """A record_function range inside a layer while a window is open; nothing otherwise."""
    if profiler is None or not profiler.active:
        return contextlib.nullcontext()
    from torch.profiler import record_function

    return record_function(name)
