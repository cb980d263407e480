"""Atomic file writes: write a temp file beside the target, fsync, rename over it.

The file gets the mode `open(path, "w")` would give it: a new file 0666 less the user's umask
(0644 under umask 022, 0600 under 077), an existing target keeps its mode. The temp file is
created with `os.open(..., 0o666)`, so the kernel applies the umask itself (no process-global
`os.umask` read, which would race other threads); `tempfile.mkstemp` would leave it 0600.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
from pathlib import Path
from typing import Any

NEW_FILE_MODE = 0o666  # what open() asks for; the umask takes its bits off
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
_NAME_TRIES = 100


def _create_temp(target: Path) -> tuple[int, Path]:
    """A new, exclusive temp file beside `target`: (fd, path), mode 0666 less the umask."""
    for _ in range(_NAME_TRIES):
        tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, _CREATE_FLAGS, NEW_FILE_MODE), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"{target.parent}: no free temporary name for {target.name}")


def _keep_existing_mode(fd: int, target: Path) -> None:
    """Overwriting keeps the target's permission bits, as open(path, "w") does."""
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        return
    os.fchmod(fd, mode)


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _create_temp(target)
    try:
        with os.fdopen(fd, "wb") as fh:
            _keep_existing_mode(fh.fileno(), target)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_json_atomic(path: str | Path, obj: Any) -> None:
    text = json.dumps(obj, indent=1, sort_keys=False, allow_nan=True, default=str)
    write_bytes_atomic(path, text.encode("utf-8") + b"\n")
