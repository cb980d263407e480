"""An input path perfkit cannot read to its end: a named pipe (FIFO) waits forever for a writer,
a device (/dev/zero, /dev/urandom) never ends, a socket cannot be opened. Each is refused, before
it is opened, as one line naming it; a missing path or a symlink loop is left to the opener's
own error (the CLI's one line for an OSError). A pipe handed over by the shell (`/dev/stdin`,
`/dev/fd/N`, `/proc/self/fd/N`: `cat x | perfkit ingest /dev/stdin`, `<(...)`) has its writer
attached and is read like a file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from perfkit.core.errors import PerfkitError

SQLITE_PREFIXES = ("sqlite:///", "sqlite+pysqlite:///")
SHELL_STREAMS = ("/dev/stdin", "/dev/fd/", "/proc/self/fd/")


def special_kind(path: str | Path) -> str | None:
    """'a named pipe (FIFO)' / 'a device' / 'a socket' for such a path (links followed), else None."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):  # missing, a loop, a NUL in the name: the opener says so
        return None
    if stat.S_ISFIFO(mode):
        return None if str(path).startswith(SHELL_STREAMS) else "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return None


def check_not_special(path: str | Path, error: type[PerfkitError] = PerfkitError) -> None:
    """Raise `error` (one line) when `path` is a FIFO, a device or a socket."""
    kind = special_kind(path)
    if kind is not None:
        raise error(f"{path}: {kind}, not a file; pass the file itself")


def input_path_of(value: str) -> str:
    """The file a command-line value names: a SQLite URL's file, else the value itself."""
    for prefix in SQLITE_PREFIXES:
        if value.startswith(prefix):
            return value[len(prefix):].split("?", 1)[0]
    return value


def why_not_a_file(path: str | Path) -> str:
    """Why `path`, which is not a regular file, cannot be read as one: 'is a directory' / 'no such
    file' / 'a named pipe (FIFO), not a file' / ... (for the one line of an input that must be a file)."""
    p = Path(path)
    if p.is_dir():
        return "is a directory, not a file"
    kind = special_kind(p)
    if kind is not None:
        return f"{kind}, not a file"
    if p.is_symlink() and not p.exists():
        return "a link to nothing (or a link loop)"
    return "no such file"
