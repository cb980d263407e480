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
(the name torch's tensorboard_trace_handler gives, as vLLM's) on a writer thread, atomically;
POST /stop_profile is answered once the file is in place.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from perfkit.core.atomic import write_bytes_atomic
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
        self._prof: Any = None  # the profiler's config while a window is open
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
                _chain(fn(), done)
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
                self._stop()  # the file appears when written; nobody waits on it here

    def close(self) -> None:
        """The server is stopping: a window still open is closed and written."""
        self.boundary()
        if self._prof is not None:
            self._stop().result(timeout=120)

    def _start(self, num_steps: int | None) -> None:
        if self._prof is not None:
            raise ProfileStateError("the profiler is already running; POST /stop_profile first")
        from torch.autograd import profiler as autograd_profiler

        config = autograd_profiler.ProfilerConfig(
            autograd_profiler.ProfilerState.KINETO, True, False, False, False, False,
            autograd_profiler._ExperimentalConfig())
        activities = set(profiler_activities(self.device))
        autograd_profiler._prepare_profiler(config, activities)
        autograd_profiler._enable_profiler(config, activities)
        self._prof, self._left = config, num_steps

    def _stop(self) -> Future[list[str]]:
        """Close the window on this (the batcher's) thread, where it was opened (torch's profiler
        records the thread that enabled it); the trace is written on a thread of its own, so
        the engine steps on meanwhile. The future resolves once the file is in place."""
        if self._prof is None:
            raise ProfileStateError("the profiler is not running; POST /start_profile first")
        from torch.autograd import profiler as autograd_profiler

        self._prof, self._left = None, None
        if self.device.startswith("cuda"):
            import torch

            torch.cuda.synchronize()
        results = autograd_profiler._disable_profiler()
        written: Future[list[str]] = Future()
        path = self.trace_dir / f"{socket.gethostname()}_{os.getpid()}.{time.time_ns()}.pt.trace.json.gz"
        threading.Thread(target=_write, args=(results, path, written), name="perfkit-serve-trace",
                         daemon=True).start()
        return written


def _chain(value: Any, done: Future[Any]) -> None:
    """Resolve `done` with `value`, or when `value` is a future, with its result once it has one."""
    if isinstance(value, Future):
        value.add_done_callback(lambda f: done.set_exception(e) if (e := f.exception()) else done.set_result(f.result()))
    else:
        done.set_result(value)


def _write(results: Any, path: Path, written: Future[list[str]]) -> None:
    """Save the profiler's results as `path` (gzip, atomically: a reader never sees half a file)."""
    try:
        with tempfile.TemporaryDirectory(dir=path.parent, prefix=".perfkit-trace-") as tmp:
            raw = Path(tmp) / "trace.json"
            results.save(str(raw))
            write_bytes_atomic(path, gzip.compress(raw.read_bytes(), compresslevel=1))
        written.set_result([str(path)])
    except Exception as exc:
        written.set_exception(exc)


def layer_range(profiler: StepProfiler | None, name: str) -> contextlib.AbstractContextManager[Any]:
    """A record_function range inside a layer while a window is open; nothing otherwise."""
    if profiler is None or not profiler.active:
        return contextlib.nullcontext()
    from torch.profiler import record_function

    return record_function(name)
