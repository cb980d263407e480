"""The one entry point of perfkit's child processes: `python -m perfkit.pipeline.worker TASK_FILE`.

TASK_FILE (perfkit.pipeline.worker_task) holds the validated spec and the role: a torchrun rank
(perfkit.pipeline.ranks.worker), or the ncu / nsys pass (the sweep again under the tool, no
timing, no traces, nothing stored; it prints its run directory). Errors read as the `perfkit`
command's: one `perfkit: error: ...` line and the exit code of docs (DESIGN.md).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from perfkit.core.errors import EXIT_BAD_INPUT, EXIT_OK, exit_code_of
from perfkit.pipeline.post_run import PostRunOptions
from perfkit.pipeline.profile import profile
from perfkit.pipeline.ranks.worker import work
from perfkit.pipeline.sweep import ProfileOptions
from perfkit.pipeline.worker_task import ROLE_NCU, ROLE_NSYS, WORKER_MODULE, WorkerTask, read_task


def run_task(task: WorkerTask) -> int:
    if task.role not in (ROLE_NCU, ROLE_NSYS):  # one rank under torchrun
        return work(task.spec, task.run_dir, task.quick, task.device, task.tool_pass)
    options = ProfileOptions(out_dir=task.out_dir, device=task.device, quick=task.quick)
    outcome = profile(task.spec, Path(task.spec_path), options, PostRunOptions(analyze=False, store=False),
                      ncu_pass=task.role == ROLE_NCU, nsys_pass=task.role == ROLE_NSYS)
    print(outcome.run_dir)
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print(f"usage: python -m {WORKER_MODULE} TASK_FILE (written by `perfkit profile`)", file=sys.stderr)
        return EXIT_BAD_INPUT
    return exit_code_of(lambda: run_task(read_task(Path(args[0]))))


if __name__ == "__main__":
    raise SystemExit(main())
