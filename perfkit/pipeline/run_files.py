"""The two writers of a run directory's record: run.partial.json while the sweep runs, run.json once.

Nothing else writes either file (a test greps for it). Both writes are atomic (temp file +
rename); writing run.json removes run.partial.json, so a directory never holds both for long and
a killed process never leaves a run.json that looks complete.
"""

from __future__ import annotations

from pathlib import Path

from perfkit.core.atomic import write_json_atomic
from perfkit.core.codec import to_builtins
from perfkit.core.record import Run
from perfkit.core.run_layout import PARTIAL_FILE, RUN_FILE


def write_partial(run_dir: Path, run: Run) -> None:
    """Record the points done so far (status "running")."""
    write_json_atomic(run_dir / PARTIAL_FILE, to_builtins(run))


def write_final(run_dir: Path, run: Run) -> Path:
    """Write run.json, the finished record, and drop run.partial.json; return run.json's path."""
    path = run_dir / RUN_FILE
    write_json_atomic(path, to_builtins(run))
    (run_dir / PARTIAL_FILE).unlink(missing_ok=True)
    return path
