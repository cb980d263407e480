"""`--gpu`, `--branch`, `--commit`, `--label` for every command that makes or ingests a run
(perfkit.core.run_labels: the environment variables that stand in for them), and `--repo`, `--db`,
`--no-store` for the commands that make one (profile, serve-bench, serve-sweep)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the help stays light: no record types imported to build a parser
    from perfkit.core.run_labels import RunLabels

# perfkit.core.run_labels.ENV_VARS (tests/core/test_run_labels.py keeps the two equal)
ENV_VARS = {"gpu": "PERFKIT_GPU", "branch": "PERFKIT_BRANCH", "commit": "PERFKIT_COMMIT", "label": "PERFKIT_LABEL"}


def add_recording(p: argparse.ArgumentParser, runs: str = "the run") -> None:
    """Where a made run is recorded: the repository whose commit it carries and the store."""
    p.add_argument("--repo", type=Path, default=Path("."),
                   help="git repository whose commit is recorded (default: the working directory)")
    p.add_argument("--db", default=None, help="results store URL (default: $PERFKIT_DB, else sqlite:///perfkit.db)")
    p.add_argument("--no-store", action="store_true", help=f"do not store {runs} in the results store")


def add_labels(p: argparse.ArgumentParser, gpu_help: str = "the GPU the run ran on") -> None:
    g = p.add_argument_group("what the run is labelled with (BRANCH@GPU finds it; docs/ci.md \"Labels\")")
    g.add_argument("--gpu", default=None, help=f"{gpu_help} (default ${ENV_VARS['gpu']}, else the GPU seen)")
    g.add_argument("--branch", default=None,
                   help=f"branch to record (default ${ENV_VARS['branch']}, else git's, else $GITHUB_HEAD_REF / "
                        "$GITHUB_REF_NAME)")
    g.add_argument("--commit", default=None,
                   help=f"commit to record (default ${ENV_VARS['commit']}, else git's, else $GITHUB_SHA)")
    g.add_argument("--label", default=None, help=f"a free-text label of the run (default ${ENV_VARS['label']})")


def flags(args: argparse.Namespace) -> RunLabels:
    """The labels given as flags only."""
    from perfkit.core.run_labels import RunLabels

    return RunLabels(args.gpu, args.branch, args.commit, args.label)


def labels(args: argparse.Namespace) -> RunLabels:
    """The labels of the flags, each missing one from its PERFKIT_* variable."""
    from perfkit.core.run_labels import with_environment

    return with_environment(flags(args), os.environ)
