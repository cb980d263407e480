"""model.yaml -> `RunSpec` (validated, frozen), with located one-line errors.

Every error reads `FILE:LINE:COL: what is wrong; what to do` and raises SpecError (exit 2).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    Field,
    SerializeAsAny,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from perfkit.core.errors import SpecError, echo, shorten
from perfkit.core.fill import FILL, first_fill
from perfkit.core.yaml_source import YamlDoc, load_yaml
from perfkit.workloads.base import RECORD, FrozenModel, Point, TimingSpec, WorkloadSpec
from perfkit.workloads.models.spec import ModelSpec
from perfkit.workloads.registry import KINDS, spec_class


class ProfilePlan(FrozenModel):
    """The `profile:` block: what is recorded around the timed runs."""

    torch_profiler: bool = True  # one extra profiled pass per point, trace saved as .json.gz
    nvtx: bool = True  # NVTX ranges around each point and phase
    profiled_iters: int = Field(3, ge=1, le=1000)
    record_shapes: bool = True
    analyze: bool = True  # run the trace analyzers on the recorded traces
    nsys_osrt: bool = False  # `--nsys` also traces OS runtime calls (heavier; off: cuda and nvtx only)
    memory: bool = False  # a memory pass per point: peaks, fragmentation, the budget (docs/memory-budget.md)
    gpu_memory_utilization: float = Field(0.9, gt=0, le=1)  # the budget's KV what-if (vLLM's meaning)


class LaunchSpec(FrozenModel):
    """The `launch:` block: run the sweep under torchrun with several ranks (docs/multi-gpu.md)."""

    nproc: int = Field(1, ge=1, le=1024)  # ranks on this node (torchrun --nproc-per-node)
    torchrun_args: tuple[str, ...] = ()  # passed to torchrun as they are: --nnodes, --rdzv-endpoint, ...
    point_timeout_s: float = Field(300.0, gt=0, le=86400)  # a point running longer fails (a hung rank)


class RunSpec(FrozenModel):
    name: str = Field(min_length=1, max_length=200)
    description: str = ""
    device: Literal["auto", "cuda", "cpu"] = "auto"
    seed: int = Field(0, ge=0)
    cpu_threads: int | None = Field(None, ge=1, le=1024)  # torch intra-op threads; None: torch's default
    timing: TimingSpec = TimingSpec()
    profile: ProfilePlan = ProfilePlan()
    launch: LaunchSpec | None = None  # several ranks under torchrun; None: one process
    model: ModelSpec | None = None  # shared by the decode / attention / moe workloads without one
    # each workload dumps as its kind's model, and a dumped one validates back by its `kind`, so
    # `RunSpec.model_validate(spec.model_dump(mode="json"))` is the same spec (a child process's)
    workloads: tuple[SerializeAsAny[WorkloadSpec], ...] = Field(min_length=1)

    @field_validator("workloads", mode="before")
    @classmethod
    def _by_kind(cls, value: Any, info: ValidationInfo) -> Any:
        if not isinstance(value, (list, tuple)):
            return value
        return tuple(_workload(w, info.context) for w in value)

    def points(self) -> list[Point]:
        out: list[Point] = []
        for w in self.workloads:
            timing = (w.timing.apply(self.timing) if w.timing else self.timing).to_config()
            out.extend(Point(spec=w, params=p, timing=timing) for p in w.sweep())
        return out

    @property
    def nproc(self) -> int:
        return self.launch.nproc if self.launch else 1

    def to_dict(self) -> dict[str, Any]:
        """The spec as run.json records it and its hash reads (no YAML positions)."""
        data = self.model_dump(mode="json", exclude={"workloads"} | ({"launch"} if self.launch is None else set()))
        data["workloads"] = [w.model_dump(mode="json", exclude_none=True, context={RECORD: True})
                             for w in self.workloads]
        return data

    def hash(self) -> str:
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def _workload(raw: Any, context: Any) -> Any:
    """A dumped workload (a mapping with a known `kind`) as its kind's model; anything else as it is."""
    if not isinstance(raw, dict) or raw.get("kind") not in KINDS:
        return raw
    return spec_class(str(raw["kind"])).model_validate(raw, context=context)


def load_spec(path: str | Path, nproc: int | None = None) -> RunSpec:
    """NPROC (`profile --nproc`) replaces the spec's launch.nproc."""
    doc = load_yaml(path)
    return parse_spec(doc, nproc)


def parse_spec(doc: YamlDoc, nproc: int | None = None) -> RunSpec:
    data = doc.data
    if not isinstance(data, dict):
        raise doc.error([], "the spec must be a mapping with name and workloads; see docs/spec.md")
    raw_workloads = data.get("workloads")
    if "workloads" not in data:
        raise doc.error([], "missing required key 'workloads'; add a list of workloads (docs/spec.md)")
    if not isinstance(raw_workloads, list):
        raise doc.error(["workloads"], "'workloads' must be a list of workloads; write '- kind: gemm ...'")
    if not raw_workloads:
        raise doc.error(["workloads"], "'workloads' is empty; add at least one workload")
    shared_model = _parse_model(doc, data.get("model"))
    workloads = [_parse_workload(doc, i, w, shared_model) for i, w in enumerate(raw_workloads)]
    _check_unique_names(doc, workloads)
    top = {k: v for k, v in data.items() if k != "workloads"}
    if shared_model is not None:
        top["model"] = shared_model
    if nproc is not None:
        launch = top.get("launch")
        top["launch"] = {**(launch if isinstance(launch, dict) else {}), "nproc": nproc}
    try:
        spec = RunSpec.model_validate({**top, "workloads": workloads})
    except ValidationError as exc:
        raise _first_error(doc, exc, RunSpec, prefix=()) from None
    for i, w in enumerate(spec.workloads):
        if w.kind == "collectives" and spec.nproc < 2:
            raise doc.error(["workloads", i, "kind"], "kind 'collectives' needs several ranks; add "
                            "'launch: {nproc: 2}' at the top of the spec (or pass --nproc 2)")
        ep = getattr(w, "ep", None) or 1
        several_nodes = any(a.startswith("--nnodes") for a in (spec.launch.torchrun_args if spec.launch else ()))
        if ep > 1 and (spec.nproc < 2 or (ep != spec.nproc and not several_nodes)):
            raise doc.error(["workloads", i, "ep"], f"ep {ep} must equal the number of ranks (launch.nproc is "
                            f"{spec.nproc}); set 'launch: {{nproc: {ep}}}' (or --nproc {ep}), or ep: 1")
        tp = getattr(w, "tp", 1)
        if tp not in (1, spec.nproc):
            raise doc.error(["workloads", i, "tp"], f"tp {tp} must equal the number of ranks ({spec.nproc}) or be 1; "
                            f"set 'launch: {{nproc: {tp}}}' at the top of the spec (or pass --nproc {tp})")
    for i, w in enumerate(spec.workloads):
        try:
            w.sweep()
        except ValueError as exc:
            raise doc.error(["workloads", i], f"{exc}") from None
    return spec


def _parse_model(doc: YamlDoc, raw: Any) -> ModelSpec | None:
    """The top-level `model:` block, validated first so that its errors point into it."""
    if raw is None:
        return None
    try:
        return ModelSpec.model_validate(raw, context={"yaml": doc, "loc": ("model",)})
    except ValidationError as exc:
        raise _first_error(doc, exc, ModelSpec, prefix=("model",)) from None


def _parse_workload(doc: YamlDoc, index: int, raw: Any, shared_model: ModelSpec | None = None) -> WorkloadSpec:
    loc: list[str | int] = ["workloads", index]
    if not isinstance(raw, dict):
        raise doc.error(loc, "each workload must be a mapping with a 'kind'; write '- kind: gemm'")
    hole = first_fill(raw)
    if hole is not None:
        key = next((p for p in reversed(hole) if isinstance(p, str)), "value")
        raise doc.error([*loc, *hole], f"'{key}' is {FILL}: the trace this spec was written from does not say it; "
                        "write its value (see the comment at the top of the spec)")
    kind = raw.get("kind")
    if kind is None:
        raise doc.error(loc, f"workload has no 'kind'; add one of: {', '.join(sorted(KINDS))}")
    if not isinstance(kind, str) or kind not in KINDS:
        hint = _did_you_mean(str(kind)[:100], KINDS)
        raise doc.error([*loc, "kind"], f"unknown workload kind {echo(kind)}{hint}")
    cls = spec_class(kind)
    try:
        context = {"yaml": doc, "loc": tuple(loc), "model": shared_model}  # kinds may record positions
        return cls.model_validate(raw, context=context)
    except ValidationError as exc:
        raise _first_error(doc, exc, cls, prefix=tuple(loc)) from None


def _check_unique_names(doc: YamlDoc, workloads: Sequence[WorkloadSpec]) -> None:
    seen: dict[str, int] = {}
    for i, w in enumerate(workloads):
        if w.label in seen:
            raise doc.error(
                ["workloads", i, "name" if w.name else "kind"],
                f"workload name '{w.label}' is used twice (also workload {seen[w.label] + 1}); "
                "give each workload a distinct 'name'",
            )
        seen[w.label] = i


def _did_you_mean(word: str, choices: Any) -> str:
    options = sorted(str(c) for c in choices)
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.5)
    if close:
        return f"; did you mean '{close[0]}'?"
    return f"; expected one of: {', '.join(options)}"


def _model_at(cls: type[BaseModel], loc: Sequence[str | int]) -> type[BaseModel] | None:
    """The pydantic model that holds the last element of `loc` (for did-you-mean lists)."""
    current: type[BaseModel] | None = cls
    for part in loc:
        if current is None:
            return None
        if isinstance(part, int):
            continue
        field = current.model_fields.get(part)
        if field is None:
            return None
        current = _first_model(field.annotation)
    return current


def _first_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _first_model(arg)
        if found is not None:
            return found
    return None


_TYPE_WORDS = {
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "string": "a string",
    "dict": "a mapping (key: value)",
    "model": "a mapping (key: value)",
    "list": "a list",
    "tuple": "a list",
}


def _first_error(doc: YamlDoc, exc: ValidationError, cls: type[BaseModel], prefix: tuple[Any, ...]) -> SpecError:
    errors = exc.errors()
    err = errors[0]
    loc = [p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-"))]
    # pydantic adds the union/tagged member name to loc for unions; drop non-YAML parts
    full = [*prefix, *loc]
    name = shorten(loc[-1]) if loc else "value"
    etype = err["type"]
    value = err.get("input")
    ctx = err.get("ctx") or {}
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    if etype == "extra_forbidden":
        model = _model_at(cls, loc[:-1])
        fields = list(model.model_fields) if model else []
        hint = _did_you_mean(name, fields) if fields else ""
        return doc.error(full, f"unknown key '{name}'{hint}{more}", key=True)
    if etype == "missing":
        return doc.error(full[:-1], f"missing required key '{name}'; add it{more}")
    if etype in ("value_error", "assertion_error"):
        message = str(ctx.get("error", err["msg"]))
        return doc.error(full, f"'{name}': {message}{more}" if loc else f"{message}{more}")  # loc (): a model-level check
    if etype == "literal_error":
        return doc.error(full, f"'{name}' is {echo(value)}; expected {ctx.get('expected')}{more}")
    if etype in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        bound = {"greater_than": "> {gt}", "greater_than_equal": ">= {ge}",
                 "less_than": "< {lt}", "less_than_equal": "<= {le}"}[etype].format(**ctx)
        return doc.error(full, f"'{name}' is {echo(value)}; it must be {bound}{more}")
    if etype in ("string_too_long", "too_long"):
        limit = ctx.get("max_length")
        size = f"{len(value)} {'characters' if etype == 'string_too_long' else 'items'}" if hasattr(value, "__len__") \
            else "too long"
        return doc.error(full, f"'{name}' is {size} long; the limit is {limit}, shorten it{more}")
    if etype in ("too_short", "string_too_short"):
        return doc.error(full, f"'{name}' is empty; give at least one value{more}")
    if etype == "string_pattern_mismatch":
        return doc.error(full, f"'{name}' is {echo(value)}; use letters, digits, '_', '-', '.'{more}")
    for word, phrase in _TYPE_WORDS.items():
        if etype.startswith(word):
            return doc.error(full, f"'{name}' must be {phrase}, got {echo(value)}; fix its type{more}")
    return doc.error(full, f"'{name}': {err['msg']}; fix the value{more}")
