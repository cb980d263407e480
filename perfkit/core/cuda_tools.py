"""Where an NVIDIA command-line tool (ncu, nsys) lives: PATH, then $CUDA_HOME/bin and
$CUDA_PATH/bin, then the usual install folders. No torch, no subprocess."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence


def find_cuda_tool(name: str, usual: Sequence[str] = ()) -> str | None:
    """The executable `name`, or None when it is nowhere perfkit looks."""
    found = shutil.which(name)
    if found:
        return found
    homes = [os.path.join(os.environ[v], "bin", name) for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    for path in [*homes, *usual]:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None
