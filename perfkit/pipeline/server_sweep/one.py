"""One configuration of a server sweep: start the server (its own process group, output in
logs/NNN.log), wait until it is ready (the start-up time), ask its version, then per repeat POST
the cache reset and run the workload against it (the profile pipeline, as serve-bench), and stop
it in every case (SIGTERM to the group, SIGKILL after server.stop_timeout_s). A server that cannot
be started, exits or is never ready is the configuration's `failed` record, with the reason and
the last lines of its output; the sweep goes on."""

from __future__ import annotations

import shlex
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfkit.pipeline.post_run import PostRunOptions
from perfkit.pipeline.profile import ProfileHooks, profile
from perfkit.pipeline.server_sweep.state import DONE, FAILED
from perfkit.pipeline.spec import RunSpec
from perfkit.pipeline.sweep import ProfileOptions
from perfkit.workloads.serving.client.models import served_models
from perfkit.workloads.serving.launch import process
from perfkit.workloads.serving.launch.grid import Config, argv_of, endpoint_of, env_of, url_on
from perfkit.workloads.serving.launch.ready import (
    DEFAULT_READY,
    StartFailed,
    reset_cache,
    server_version,
    wait_ready,
)
from perfkit.workloads.serving.measurements.sweep_front import stages_of
from perfkit.workloads.serving.spec import ServingSpec


@dataclass(frozen=True)
class SweepOptions:
    sweep_dir: Path
    spec_path: Path
    profile: ProfileOptions
    post: PostRunOptions
    say: Callable[[str], None] = lambda _: None
    sweep_id: str = ""  # state.sweep_id: recorded in every run's server_launch


class SweepInterrupted(KeyboardInterrupt):
    """A run of the sweep was interrupted (Ctrl-C, SIGTERM): the sweep stops, the state says where."""

    def __init__(self, exit_code: int) -> None:
        super().__init__("interrupted")
        self.exit_code = exit_code


def free_port(host: str) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def run_config(spec: RunSpec, index: int, config: Config, opts: SweepOptions) -> dict[str, Any]:
    """The configuration's record (status done or failed, launch, runs, stages)."""
    w = spec.workloads[0]
    assert isinstance(w, ServingSpec) and w.server is not None
    server = w.server
    port = server.port or free_port(server.host)
    argv, env = argv_of(server, config, port), env_of(server, config, port)
    endpoint = endpoint_of(server, port)
    log = opts.sweep_dir / "logs" / f"{index:03d}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    launch: dict[str, Any] = {"config": config.name, "command": shlex.join(argv), "endpoint": endpoint}
    if opts.sweep_id:
        launch["sweep"] = opts.sweep_id
    if env:
        launch["env"] = env
    record: dict[str, Any] = {"name": config.name, "params": config.params, "launch": launch,
                              "log": str(log.relative_to(opts.sweep_dir)), "runs": [], "stages": []}
    try:
        proc = process.start(argv, env, log)
    except OSError as exc:
        return {**record, "status": FAILED, "error": f"cannot run {argv[0]!r}: {exc.strerror or exc}; "
                                                     "check server.command"}
    try:
        ready = [url_on(endpoint, server.ready_url)] if server.ready_url else [url_on(endpoint, u) for u in DEFAULT_READY]
        launch["start_time_s"] = round(wait_ready(proc, ready, server.start_timeout_s), 3)
        launch["version"] = server_version(endpoint)
        opts.say(f"{config.name}: ready in {launch['start_time_s']:.1f} s at {endpoint}")
        for repeat in range(server.repeats):
            if server.reset_cache_url:
                problem = reset_cache(url_on(endpoint, server.reset_cache_url))
                if problem:
                    launch.setdefault("notes", []).append(f"cache reset: {problem}")
            _one_run(spec, w, config, endpoint, {**launch, "repeat": repeat + 1}, repeat, record, opts)
    except StartFailed as exc:
        record.update(status=FAILED, error=str(exc), log_tail=process.tail(log))
        opts.say(f"{config.name}: failed: {exc}")
        return record
    finally:
        launch["stopped"] = process.stop(proc, server.stop_timeout_s)
    record["status"] = DONE
    return record


def _one_run(spec: RunSpec, w: ServingSpec, config: Config, endpoint: str, launched: dict[str, Any],
             repeat: int, record: dict[str, Any], opts: SweepOptions) -> None:
    assert w.server is not None
    one = {**w.server.model_dump(mode="json", exclude_none=True), "launched": launched,
           "grid": {k: [v] for k, v in config.params.items()}}
    workload = {**w.model_dump(mode="json", exclude_none=True), "endpoint": endpoint, "server": one}
    if "model" not in w.model_fields_set:  # as serve-bench: the one model the server lists
        models = served_models(endpoint)
        if models and len(models) == 1:
            workload["model"] = models[0]
    raw = {**spec.model_dump(mode="json", exclude_none=True), "device": "cpu", "workloads": [workload],
           "description": f"server sweep {spec.name}: {config.name}"[:2000],
           "profile": {"torch_profiler": False, "nvtx": False, "analyze": False}}
    run_spec = RunSpec.model_validate(raw)
    outcome = profile(run_spec, opts.spec_path, opts.profile, opts.post, ProfileHooks())
    run = outcome.run
    record["runs"].append({"run_id": run.run_id, "run_dir": str(outcome.run_dir), "status": run.status,
                           "stored": outcome.stored})
    record["stages"].extend(stages_of(run.points, config.name, repeat))
    if run.status == "interrupted":
        raise SweepInterrupted(outcome.signal_exit_code or 130)
