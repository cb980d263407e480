"""Where an NVIDIA command-line tool (ncu, nsys) lives: ONE search, used by `perfkit doctor`,
`perfkit profile --ncu / --nsys`, the nsys loader and the GPU validation. No torch, no subprocess.

Places looked at, in this order: PATH, $CUDA_HOME/bin and $CUDA_PATH/bin, then where NVIDIA's
installers put the tool (INSTALL_GLOBS: /opt/nvidia/nsight-systems/<version>/bin,
/opt/nvidia/nsight-systems-cli/<version>/..., /usr/local/cuda*/bin, /opt/nvidia/nsight-compute/
<version>, ...). When several differ, the newest version wins: the version read from the path
(its real path, so a /usr/bin/nsys link to /opt/nvidia/nsight-systems-cli/2024.5.1/... counts as
2024.5.1; a CUDA toolkit folder counts as that toolkit's version); a candidate whose path shows
no version ranks below every versioned one, and ties keep the search order (PATH first).
`ToolSearch.chosen_because` says which was taken and why, for doctor and the validation.
$PERFKIT_TOOL_DIRS, when set, replaces the install folders: glob patterns of folders holding the
tools, separated by the path separator (empty: PATH and $CUDA_HOME / $CUDA_PATH only; the test
suite sets it so, to see only the tools it lays out).
"""

from __future__ import annotations

import glob
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# NVIDIA's install folders of each tool (glob patterns; the version is a folder name in them)
INSTALL_GLOBS: dict[str, tuple[str, ...]] = {
    "nsys": (
        "/opt/nvidia/nsight-systems/*/bin/nsys",
        "/opt/nvidia/nsight-systems-cli/*/bin/nsys",
        "/opt/nvidia/nsight-systems-cli/*/target-linux-x64/nsys",
        "/usr/local/cuda*/bin/nsys",
        "/usr/local/cuda*/nsight-systems-*/bin/nsys",
    ),
    "ncu": (
        "/opt/nvidia/nsight-compute/*/ncu",
        "/opt/nvidia/nsight-compute/ncu",
        "/usr/local/cuda*/bin/ncu",
        "/usr/local/cuda*/nsight-compute-*/ncu",
    ),
}
TOOL_DIRS_ENV = "PERFKIT_TOOL_DIRS"  # replaces INSTALL_GLOBS (module docstring)
_YEAR_VERSION = re.compile(r"(?<![\d.])(20\d\d(?:\.\d+)+)")  # Nsight's own: 2024.5.1
_CUDA_VERSION = re.compile(r"cuda-(\d+(?:\.\d+)+)")  # a toolkit folder: cuda-12.4


@dataclass(frozen=True)
class ToolCandidate:
    path: str
    where: str  # "PATH", "$CUDA_HOME", "$CUDA_PATH" or the install pattern it matched
    version: tuple[int, ...] | None  # read from the (real) path; None: the path shows none

    @property
    def version_text(self) -> str | None:
        return ".".join(str(v) for v in self.version) if self.version else None


@dataclass(frozen=True)
class ToolSearch:
    name: str
    chosen: ToolCandidate | None
    candidates: tuple[ToolCandidate, ...]  # every distinct executable found, in search order
    searched: tuple[str, ...]  # what was looked at (for "not found" messages)

    @property
    def path(self) -> str | None:
        return self.chosen.path if self.chosen else None

    @property
    def chosen_because(self) -> str:
        """One phrase: which candidate was taken and why (or where nothing was found)."""
        if self.chosen is None:
            return f"{self.name} not found in {', '.join(self.searched)}"
        c = self.chosen
        version = f"version {c.version_text} from its path" if c.version_text else "version not in its path"
        if len(self.candidates) == 1:
            return f"{c.path} (from {c.where}; {version}; the only one found)"
        others = ", ".join(o.path for o in self.candidates if o is not c)
        rule = "the newest version" if c.version else "first in search order (no path shows a version)"
        return f"{c.path} (from {c.where}; {version}; {rule} of {len(self.candidates)} found; also {others})"


def path_version(path: str) -> tuple[int, ...] | None:
    """The Nsight version (2024.5.1) or else the CUDA toolkit version (12.4) a path names."""
    for pattern in (_YEAR_VERSION, _CUDA_VERSION):
        found = pattern.findall(path)
        if found:
            return tuple(int(p) for p in found[-1].split("."))
    return None


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def search_cuda_tool(name: str, usual: Sequence[str] = (), env: Mapping[str, str] | None = None,
                     install_globs: Sequence[str] | None = None) -> ToolSearch:
    """Every `name` executable in the places above; the newest chosen (module docstring).
    `usual`: extra fixed paths a caller knows; `env` / `install_globs` replace os.environ and
    INSTALL_GLOBS[name] (tests; $PERFKIT_TOOL_DIRS replaces the latter too)."""
    env = os.environ if env is None else env
    if install_globs is not None:
        patterns = tuple(install_globs)
    elif TOOL_DIRS_ENV in env:
        patterns = tuple(os.path.join(d, name) for d in env[TOOL_DIRS_ENV].split(os.pathsep) if d)
    else:
        patterns = tuple(INSTALL_GLOBS.get(name, ()))
    places: list[tuple[str, list[str]]] = []
    on_path = shutil.which(name, path=env.get("PATH", ""))
    places.append(("PATH", [on_path] if on_path else []))
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if env.get(var):
            places.append((f"${var}", [os.path.join(env[var], "bin", name)]))
    places += [(p, [p]) for p in usual]
    places += [(p, sorted(glob.glob(p))) for p in patterns]
    seen: set[str] = set()
    found: list[ToolCandidate] = []
    for where, paths in places:
        for path in paths:
            real = os.path.realpath(path)
            if real in seen or not _executable(path):
                continue
            seen.add(real)
            found.append(ToolCandidate(path, where, path_version(real) or path_version(path)))
    chosen = None
    if found:
        best = max(c.version or () for c in found)
        chosen = next(c for c in found if (c.version or ()) == best)
    return ToolSearch(name, chosen, tuple(found), tuple(p for p, _ in places))


def find_cuda_tool(name: str, usual: Sequence[str] = ()) -> str | None:
    """The executable `name` (search_cuda_tool's choice), or None when it is nowhere perfkit looks."""
    return search_cuda_tool(name, usual).path
