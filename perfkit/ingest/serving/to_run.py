"""A vLLM / AIPerf / GuideLLM result file -> ONE perfkit run of serving points
(`perfkit ingest --format vllm|aiperf|guidellm|serving FILE`).

Each stage of the file is a point `serving/<name>/<load>` (points.py: params and metrics), so
compare, gate, history, reports and the dashboard's Serving page read it like a run of
`perfkit serve-bench`. The run:

- id `<source>-<sha256 of the bytes of every file read>` (AIPerf: the records and the summary,
  whichever was passed): ingesting the same file again is skipped as already stored, whatever
  the options;
- spec {kind: serving, source, name, model, stages: [{load, params}]}: the benchmark's setup,
  never the file's path, so two runs of one setup share the spec hash and are each other's
  baseline (the path is the run's `spec_path` and `env.source.path`);
- created: the file's own start time (vLLM `date`, taken as UTC; AIPerf / GuideLLM
  `start_time`), else the file's modification time;
- env: the GPU label given (default "unknown GPU": the file does not say what served it),
  commit and branch given, `source` {format: the tool, path, version}; device "external".
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from perfkit.core.env import Env, GitState, GpuState, Source
from perfkit.core.record import RUN_COMPLETE, STATUS_FAILED, STATUS_OK, PointResult, Run
from perfkit.ingest.serving.boundary import ServingResultsError, fail
from perfkit.ingest.serving.dispatch import read_serving_results
from perfkit.ingest.serving.points import failed_reason, stage_metrics, stage_params
from perfkit.ingest.serving.stage import SOURCES, IngestedStage
from perfkit.workloads.base import point_key
from perfkit.workloads.serving.measurements.cost import Price

KIND = "serving"
UNKNOWN_GPU = "unknown GPU"
DEVICE = "external"  # as the other ingesters: measured elsewhere
TOOL_NAMES = {"vllm": "vllm bench serve", "aiperf": "AIPerf", "guidellm": "GuideLLM"}
VLLM_DATE = "%Y%m%d-%H%M%S"


@dataclass(frozen=True)
class IngestOptions:
    name: str | None = None  # the workload and spec name (None: the source, "vllm")
    gpu: str | None = None  # the GPU label (None: UNKNOWN_GPU)
    commit: str | None = None
    branch: str | None = None
    price: Price | None = None  # gives the usd_per_1m_* metrics
    expected: str | None = None  # the source the file must be (None: any of SOURCES)


def read_serving_run(path: str | Path, options: IngestOptions = IngestOptions()) -> Run:
    """The run of one result file; ServingResultsError (one located line, exit 2) if it is not
    one of the expected tool's, or cannot be read."""
    stages = read_serving_results(path)
    source = stages[0].source
    if options.expected is not None and source != options.expected:
        fail(str(path), f"a {TOOL_NAMES[source]} result, not {TOOL_NAMES[options.expected]}'s; "
             f"pass --format {source} (or --format serving to detect it)")
    files = sorted({f for s in stages for f in s.files} or {str(path)})
    return stages_to_run(stages, digest=content_digest(files), created=created_time(stages, path),
                         path=str(path), options=options)


def content_digest(files: list[str]) -> str:
    """sha256 over the bytes of the files (in the order given)."""
    h = hashlib.sha256()
    for f in files:
        try:
            h.update(Path(f).read_bytes())
        except OSError as exc:
            fail(f, f"cannot read ({exc.strerror}); check the file")
        h.update(b"\x00")
    return h.hexdigest()


def _parse_time(text: str) -> datetime | None:
    for parse in (lambda t: datetime.strptime(t, VLLM_DATE),
                  lambda t: datetime.fromtimestamp(float(t), tz=timezone.utc),
                  lambda t: datetime.fromisoformat(t.replace("Z", "+00:00"))):
        try:
            when = parse(text.strip())
        except (ValueError, OverflowError, OSError):
            continue
        return when if when.tzinfo else when.replace(tzinfo=timezone.utc)
    return None


def created_time(stages: list[IngestedStage], path: str | Path) -> str:
    """The earliest start time the stages' info gives (ISO 8601 UTC), else the file's mtime."""
    found = [when for s in stages for key in ("date", "start_time")
             if key in s.info and (when := _parse_time(s.info[key])) is not None]
    if found:
        return min(found).astimezone(timezone.utc).isoformat()
    try:
        mtime = Path(path).stat().st_mtime
    except OSError as exc:
        raise ServingResultsError(f"{path}: cannot read ({exc.strerror}); check the file") from None
    return datetime.fromtimestamp(mtime, tz=timezone.utc).isoformat()


def spec_of(stages: list[IngestedStage], name: str, params: list[dict[str, Any]]) -> dict[str, Any]:
    """The benchmark's setup: what two runs of one setup share (no path, no date, no result)."""
    model = next((m for s in stages for k in ("model_id", "model") if (m := s.info.get(k))), None)
    spec: dict[str, Any] = {"kind": KIND, "name": name, "source": stages[0].source}
    if model is not None:
        spec["model"] = model
    spec["stages"] = [{"load": s.name, "params": p} for s, p in zip(stages, params, strict=True)]
    return spec


def spec_hash(spec: dict[str, Any]) -> str:
    """As RunSpec.hash: sha256 of the sorted compact JSON, 16 hex digits."""
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _unique_params(stages: list[IngestedStage]) -> tuple[list[dict[str, Any]], dict[int, str]]:
    """Each stage's params; a stage whose load repeats an earlier one's gets `stage=<index>` too
    (one key per point), with a note."""
    out: list[dict[str, Any]] = []
    notes: dict[int, str] = {}
    seen: dict[str, int] = {}
    for s in stages:
        params = stage_params(s)
        key = json.dumps(params, sort_keys=True)
        if key in seen:
            notes[s.index] = (f"the same load as stage {seen[key]} of the file: this point is "
                              f"stage={s.index}")
            params = {**params, "stage": s.index}
        seen.setdefault(key, s.index)
        out.append(params)
    return out, notes


def _point(stage: IngestedStage, name: str, params: dict[str, Any], price: Price | None,
           note: str | None) -> PointResult:
    metrics = stage_metrics(stage, price)
    if note is not None:
        metrics["serving_notes"].append(note)
    error = failed_reason(stage, metrics)
    return PointResult(key=point_key(KIND, name, params), kind=KIND, workload=name, params=params,
                       status=STATUS_FAILED if error else STATUS_OK, error=error, metrics=metrics)


def stages_to_run(stages: list[IngestedStage], *, digest: str, created: str, path: str,
                  options: IngestOptions = IngestOptions()) -> Run:
    """The run of a file's stages (pure: no file is read)."""
    if not stages or any(s.source not in SOURCES for s in stages):
        raise ValueError("stages_to_run needs the stages of one vLLM, AIPerf or GuideLLM file")
    source = stages[0].source
    name = options.name or source
    params, notes = _unique_params(stages)
    points = tuple(_point(s, name, p, options.price, notes.get(s.index))
                   for s, p in zip(stages, params, strict=True))
    spec = spec_of(stages, name, params)
    info = stages[0].info
    env = Env(git=GitState(commit=options.commit, branch=options.branch),
              gpus=(GpuState(name=options.gpu or UNKNOWN_GPU),),
              source=Source(format=source, path=path,
                            version=info.get(f"{source}_version")))
    return Run(run_id=f"{source}-{digest[:20]}", created=created, status=RUN_COMPLETE, spec=spec,
               spec_hash=spec_hash(spec), spec_path=path, device=DEVICE, env=env, points=points,
               finished=created)
