"""What a child process of `perfkit profile` runs: one task file, written by the parent.

The parent validates the spec once; each child (a torchrun rank, the ncu pass, the nsys pass)
gets it as data in `RUN/worker.<role>.json` (written atomically) and starts as
`python -m perfkit.pipeline.worker TASK_FILE` (perfkit.pipeline.worker). No child reads the
YAML again: the spec it runs is the one the parent validated, even if the file changed since.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from perfkit.core.atomic import write_json_atomic
from perfkit.core.errors import SpecError
from perfkit.core.run_layout import NCU_DIR, NSYS_DIR, RunDir
from perfkit.pipeline.spec import RunSpec
from perfkit.workloads.base import FrozenModel

WORKER_MODULE = "perfkit.pipeline.worker"
Role = Literal["rank", "ncu", "nsys"]
ROLE_RANK: Role = "rank"  # one rank of a `launch: {nproc: N}` sweep, under torchrun
ROLE_NCU: Role = "ncu"  # the sweep again under Nsight Compute: one call per point
ROLE_NSYS: Role = "nsys"  # the sweep again under Nsight Systems: each point's calls in its NVTX range


class WorkerTask(FrozenModel):
    role: Role
    spec: RunSpec  # as the parent validated it (RunSpec dumps and validates back to an equal spec)
    spec_path: str  # the model.yaml the parent read (recorded in the child's run, never read)
    run_dir: Path  # the parent's run directory (a rank records into its run.partial.json)
    device: str
    quick: bool = False
    # a rank of the nsys pass of a multi-rank spec (torchrun under nsys): the pass's calls, no timing
    tool_pass: Literal["nsys"] | None = None

    @property
    def out_dir(self) -> Path:
        """Where the ncu / nsys pass makes its own run directory."""
        return RunDir(self.run_dir).child_runs(NCU_DIR if self.role == ROLE_NCU else NSYS_DIR)


def write_task(task: WorkerTask) -> Path:
    """RUN/worker.<role>.json, atomically; its path."""
    path = RunDir(task.run_dir).worker_task(task.role)
    write_json_atomic(path, task.model_dump(mode="json"))
    return path


def read_task(path: Path) -> WorkerTask:
    """The task the parent wrote; SpecError (one line, exit 2) for a file that is not one."""
    try:
        return WorkerTask.model_validate(json.loads(path.read_text()))
    except json.JSONDecodeError as exc:
        raise SpecError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg}); "
                        "a worker task is written by `perfkit profile`") from None
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "task"
        raise SpecError(f"{path}: not a perfkit worker task ({where}: {err['msg']}); "
                        "a worker task is written by `perfkit profile`") from None


def worker_command(task_path: Path) -> list[str]:
    """The command line of a child process (ncu / nsys run it as their target)."""
    return [sys.executable, "-m", WORKER_MODULE, str(task_path)]
