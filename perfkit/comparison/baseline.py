"""The baseline of a pytest-plugin session: the points of an earlier run directory (or
run.json) by point key. Imports only perfkit.core, so the plugin stays light to load."""

from __future__ import annotations

from pathlib import Path

from perfkit.core.record import PointResult, load_run


def baseline_points(path: Path) -> dict[str, PointResult]:
    """Point key -> point of the run at `path`; PerfkitError when it cannot be read."""
    return {p.key: p for p in load_run(path).points}
