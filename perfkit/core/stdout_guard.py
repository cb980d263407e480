"""Standard output that cannot be written (closed with `>&-`, or a pipe whose reader is gone, as in
`perfkit ... | head -1`) never turns the command's work into an error: what is printed there is
dropped and the command ends with the exit code of what it did (runs stored: 0).

`guard_stdout()` is called once by the `perfkit` command before it runs a command.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import Any, TextIO

_LOST = (errno.EPIPE, errno.EBADF)


class _GuardedStdout:
    """sys.stdout, but a write or flush that fails because the other end is gone sends it (the
    file descriptor too, so the interpreter's last flush succeeds) to the null device."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.lost = False

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as exc:
            self._lose(exc)
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            self._lose(exc)
            self._stream.flush()  # the buffered text goes to the null device now

    def _lose(self, exc: OSError) -> None:
        if exc.errno not in _LOST:
            raise exc
        self.lost = True
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, self._stream.fileno())
        except (OSError, ValueError):
            self._stream = open(os.devnull, "w")  # noqa: SIM115 -- lives as long as the process
        finally:
            os.close(null)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def guard_stdout() -> None:
    """Install the guard on sys.stdout (a closed file descriptor 1 at start: the null device)."""
    if sys.stdout is None:  # fd 1 was closed before Python started: print() would be a silent no-op,
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 -- sys.stdout.write an AttributeError
        return
    if not isinstance(sys.stdout, _GuardedStdout):
        sys.stdout = _GuardedStdout(sys.stdout)  # type: ignore[assignment]
