"""Build perfkit's wheel from a copy of the working tree (tracked and new files), so the
repository gets no build/ or egg-info folder; install it by extracting (a pure wheel)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def tree_copy(dest: Path) -> Path:
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=REPO, capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = REPO / rel
        if not os.path.lexists(src):  # deleted in the working tree
            continue
        out = dest / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), out)
        elif src.is_file():
            shutil.copy2(src, out)
    return dest


def build_wheel(tmp: Path) -> Path:
    """perfkit-*.whl built under tmp from a copy of the working tree."""
    src = tree_copy(tmp / "src")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                           str(src), "-w", str(tmp / "dist")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (built,) = (tmp / "dist").glob("perfkit-*.whl")
    return built


def install_wheel(wheel: Path, site: Path) -> Path:
    """The wheel's files in site (a pure wheel: extracting it is installing it, scripts aside)."""
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    return site
