"""Where a command writes one output file (`report --out`, `gate --junit`): checked before any work.

A directory means "put the usual file name in it"; a missing folder, an unwritable one, or an
existing file that is not of the output's kind (a spec, a trace) is one line and exit 2 before
anything is computed, so a typo never costs a long run or overwrites a user's file.
"""

from __future__ import annotations

import os
from pathlib import Path

from perfkit.core.errors import SpecError


def checked_out_file(option: str, path: Path, default_name: str, suffixes: tuple[str, ...]) -> Path:
    """The file to write for `option PATH`; SpecError (exit 2) when it cannot or must not be written."""
    if path.is_dir():
        path = path / default_name
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise SpecError(f"{option} {path}: folder {folder} does not exist; create it or pass another path")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise SpecError(f"{option} {path}: folder {folder} is not writable; pass another path")
    if path.exists():
        if not path.is_file():
            raise SpecError(f"{option} {path}: exists and is not a regular file; pass another path")
        if path.suffix.lower() not in suffixes:
            raise SpecError(f"{option} {path}: exists and is not a {'/'.join(suffixes)} file; "
                            f"refusing to overwrite it, pass a path ending in {suffixes[0]}")
    return path
