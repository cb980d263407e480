"""One error hierarchy for perfkit; the CLI maps every subclass to a one-line message."""

from __future__ import annotations

import errno
import sys
from collections.abc import Callable

from perfkit.core.terminal import terminal_safe

EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_BAD_INPUT = 2
EXIT_POINTS_FAILED = 3
EXIT_INTERRUPTED = 130


class PerfkitError(Exception):
    """Base of every error perfkit raises on purpose.

    The message is one line: where (file, line/column, event index or key), what is wrong,
    and what to do about it.
    """

    exit_code = EXIT_BAD_INPUT


class SpecError(PerfkitError):
    """A model.yaml / gate policy that cannot be used."""


class TraceError(PerfkitError):
    """A trace file that cannot be read (truncated, not JSON, foreign format)."""


class StoreError(PerfkitError):
    """A results store or run record that cannot be read or written."""


class DeviceError(PerfkitError):
    """A device that was asked for but is not available."""


ECHO_LIMIT = 80  # characters of a user's value quoted in a message


def shorten(value: object, limit: int = ECHO_LIMIT) -> str:
    """`value` as text for a message: whole when up to `limit` characters, else its start and
    end around an ellipsis with its length, so a 10 KB value never becomes a 10 KB line."""
    text = str(value)
    if len(text) <= limit:
        return text
    tail = max(limit // 4, 1)
    return f"{text[: limit - tail - 1]}…{text[-tail:]} ({len(text)} characters)"


def echo(value: object, limit: int = ECHO_LIMIT) -> str:
    """repr(value) shortened: a quoted user value in a message."""
    return shorten(repr(value), limit)


WORD_LIMIT = 160  # characters of one word (a path, a quoted value) in a printed error line
LINE_LIMIT = 2000  # characters of a printed error line


def capped(message: str) -> str:
    """An error line as printed: on one line, every word over WORD_LIMIT characters shortened,
    the whole at most LINE_LIMIT: the net under every message that quotes a user's value."""
    words = " ".join(terminal_safe(" ".join(message.split())).split()).split(" ")
    line = " ".join(shorten(w, WORD_LIMIT) for w in words)
    return shorten(line, LINE_LIMIT)


def located(path: str, line: int | None, col: int | None, message: str) -> str:
    """Format `FILE:LINE:COL: message` (1-based line and column; parts omitted when unknown)."""
    where = str(path)
    if line is not None:
        where += f":{line}"
        if col is not None:
            where += f":{col}"
    return f"{where}: {message}"


_OS_HINTS = {
    errno.ENOSPC: "free some space and re-run",
    errno.EDQUOT: "free some space and re-run",
    errno.ENOTDIR: "a part of the path is a file; pass a directory",
    errno.EISDIR: "pass a file, not a directory",
    errno.EEXIST: "pass a path that does not exist yet",
    errno.EACCES: "pass a path you can write to",
    errno.EPERM: "pass a path you can write to",
    errno.EROFS: "the file system is read-only; pass a writable path",
    errno.ENOENT: "check the path",
    errno.EPIPE: "the reader at the other end of a pipe or socket went away",
    errno.EBADF: "a file or pipe perfkit writes to was closed",
}


def describe_os_error(exc: OSError) -> str:
    """One line for an OSError the user can act on: the path, what the system said, what to do."""
    where = exc.filename if exc.filename is not None else "perfkit"
    what = exc.strerror or type(exc).__name__
    hint = _OS_HINTS.get(exc.errno or 0, "check the path and the disk")
    return f"{where}: {what}; {hint}"


def exit_code_of(main: Callable[[], int]) -> int:
    """Run a process's work; a PerfkitError, Ctrl-C or OSError becomes one `perfkit: ...` line on
    stderr and its exit code (the `perfkit` command and the child processes it starts alike)."""
    try:
        return int(main())
    except PerfkitError as exc:
        print(f"perfkit: error: {capped(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("perfkit: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as exc:  # a path that is a file, a read-only or full disk: one line, no traceback
        print(f"perfkit: error: {capped(describe_os_error(exc))}", file=sys.stderr)
        return EXIT_BAD_INPUT
