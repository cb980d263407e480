"""The server as a child in its own process group: started with its output in a log file, asked
to stop with SIGTERM to the whole group, killed (SIGKILL) after a timeout. On Linux the child also
gets SIGTERM when perfkit itself dies (PR_SET_PDEATHSIG), so a killed sweep leaves no server."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

TAIL_LINES = 20


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(Exception):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def start(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """Start the server (OSError when its program cannot be run); stdout and stderr go to `log`."""
    with log.open("wb") as out:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                env={**os.environ, **env}, start_new_session=True,
                                preexec_fn=_die_with_parent)


def stop(proc: subprocess.Popen[bytes], timeout_s: float) -> str:
    """SIGTERM to the group, SIGKILL to it after `timeout_s`; how it ended ("exited 0", "killed")."""
    if proc.poll() is not None:
        _kill_group(proc.pid, signal.SIGKILL)  # what it left behind
        return f"had exited {proc.returncode}"
    _kill_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid, signal.SIGKILL)
        proc.wait()
        return f"killed after {timeout_s:g} s"
    _kill_group(proc.pid, signal.SIGKILL)
    return f"exited {proc.returncode}"


def _kill_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def tail(log: Path, lines: int = TAIL_LINES) -> str:
    """The last lines of the server's output (for the record of a failed start)."""
    try:
        with log.open("rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 8192))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])
