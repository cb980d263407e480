"""SIGTERM and SIGHUP end a profile like Ctrl-C: the points done are kept, the run is `interrupted`.

Inside `signals_as_interrupts()` those signals raise `Interrupted`, a KeyboardInterrupt, so the
sweep and the post-sweep steps need one handler for all three. The signal received is kept on
the returned record, for the run's artifacts and the exit code (128 + signal number).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import FrameType

HANDLED = (signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """A termination signal turned into an interrupt."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@dataclass
class Received:
    signals: list[int] = field(default_factory=list)

    @property
    def name(self) -> str | None:
        return signal.Signals(self.signals[0]).name if self.signals else None

    @property
    def exit_code(self) -> int | None:
        return 128 + self.signals[0] if self.signals else None


@contextlib.contextmanager
def signals_as_interrupts() -> Iterator[Received]:
    """Within the block, SIGTERM / SIGHUP raise Interrupted; the previous handlers come back after."""
    received = Received()
    if threading.current_thread() is not threading.main_thread():  # handlers live in the main thread
        yield received
        return

    def handler(signum: int, _frame: FrameType | None) -> None:
        received.signals.append(signum)
        if len(received.signals) == 1:  # a second signal while unwinding must not cut the record short
            raise Interrupted(signum)

    previous = {s: signal.signal(s, handler) for s in HANDLED}
    try:
        yield received
    finally:
        for s, old in previous.items():
            signal.signal(s, old)
