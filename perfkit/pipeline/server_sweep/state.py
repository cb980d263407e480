"""sweep.json: what a server sweep has done, rewritten atomically after each configuration.

At the top: `sweep_id` (state.sweep_id: also in every run the sweep stores). Each configuration: `name`, `params`, `status` (pending | done | failed), `launch` (command,
endpoint, start_time_s, version, stopped), `error` and `log_tail` (a failed start), `runs`
(run_id, run_dir, status) and `stages` (per stage point: config, stage, ok, the metrics the front
reads). At the top: the spec's path and hash (a resume checks it), the front and its notes.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from perfkit.core.atomic import write_json_atomic
from perfkit.core.errors import SpecError
from perfkit.core.json_file import load_json

STATE_FILE = "sweep.json"
PENDING, DONE, FAILED = "pending", "done", "failed"
FINISHED = (DONE, FAILED)


def state_path(sweep_dir: Path) -> Path:
    return sweep_dir / STATE_FILE


def sweep_id(name: str, started_epoch_s: float) -> str:
    """The sweep's identity in every run it stores (`server_launch.sweep`): the spec's name and the
    UTC second the sweep began (`chat@2026-11-29T12:50:01Z`); a resume keeps it."""
    stamp = datetime.fromtimestamp(started_epoch_s, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"{name}@{stamp}"


def new_state(spec_path: str, spec_hash: str, name: str, configs: list[tuple[str, dict[str, Any]]],
              started_epoch_s: float) -> dict[str, Any]:
    return {"spec_path": spec_path, "spec_hash": spec_hash, "name": name, "sweep_id": sweep_id(name, started_epoch_s),
            "configs": [{"name": n, "params": p, "status": PENDING} for n, p in configs]}


def load_state(sweep_dir: Path, spec_hash: str) -> dict[str, Any] | None:
    """The state a killed sweep left (None when there is none); SpecError when it is another spec's."""
    path = state_path(sweep_dir)
    if not path.exists():
        return None
    data = load_json(path, "remove it to start the sweep again", SpecError)
    if not isinstance(data, dict) or not isinstance(data.get("configs"), list):
        raise SpecError(f"{path}: not a sweep state; remove it or give another --out")
    if data.get("spec_hash") != spec_hash:
        raise SpecError(f"--resume: {path} is a sweep of another spec ({data.get('spec_path')!s:.200}); give the "
                        "same spec, or another --out for a new sweep")
    return data


def save_state(sweep_dir: Path, state: dict[str, Any]) -> None:
    write_json_atomic(state_path(sweep_dir), state)
