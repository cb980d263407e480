"""`kind: custom` — the user's own kernel: a factory named by `entry: package.module:function`.

    - kind: custom
      name: my-rmsnorm
      entry: mykernels.rmsnorm:make_case       # called with the point's parameters and device
      reference: mykernels.rmsnorm:reference   # optional: output compared with the kernel's
      tolerance: 1e-2                          # relative Frobenius error (default: by dtype)
      params: {m: [1, 4096], n: 4096, dtype: [bf16, fp16]}
      cost: {flop: 4*m*n, bytes: sizeof(dtype)*(2*m*n + n)}   # or a `cost` function beside the factory
      tune:                                    # optional autotuning sweep, per shape
        axes: {BLOCK_SIZE: [1024, 2048, 4096], num_warps: [4, 8]}
        where: BLOCK_SIZE >= num_warps * 32

No torch here: the spec is validated (expressions parsed, names checked) before anything runs.
The runner is workloads/custom/runner.py.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    PrivateAttr,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from perfkit.core.errors import located
from perfkit.workloads.base import POSITIONS, RECORD, FrozenModel, WorkloadSpec
from perfkit.workloads.expr import CONSTANTS, FUNCTIONS, ExprError, evaluate, parse_expr
from perfkit.workloads.sweep import cartesian, int_axis

RESERVED_PARAMS = frozenset({"device", "seed"})  # passed to factories by perfkit itself
_REF_RE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")

Scalar = int | float | str | bool


def check_ref(value: str) -> str:
    if not _REF_RE.match(value):
        raise ValueError(f"'{value}' is not 'package.module:function'; write e.g. mykernels.rmsnorm:make_case")
    return value


EntryRef = Annotated[str, AfterValidator(check_ref)]


def value_axis(value: Any) -> tuple[Scalar, ...]:
    """A parameter axis: a scalar, a list of scalars, or an integer range {start, stop, step|mul}."""
    if isinstance(value, Mapping):
        return int_axis(value)
    values = tuple(value) if isinstance(value, Sequence) and not isinstance(value, str) else (value,)
    if not values:
        raise ValueError("empty axis; give at least one value")
    for v in values:
        if not isinstance(v, int | float | str | bool):
            raise ValueError(f"axis values must be numbers, names or true/false, got {v!r}")
    if len(set(map(repr, values))) != len(values):
        raise ValueError("a value is listed twice; list each once")
    return values


ValueAxis = Annotated[tuple[Scalar, ...], BeforeValidator(value_axis)]


def check_param_names(names: Sequence[str], what: str) -> None:
    for name in names:
        if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_"):
            raise ValueError(f"{what} name '{name}' is not a Python identifier; use letters, digits and '_'")
        if name in RESERVED_PARAMS:
            raise ValueError(f"{what} name '{name}' is reserved (perfkit passes it); rename it")
        if name in FUNCTIONS or name in CONSTANTS:
            raise ValueError(f"{what} name '{name}' shadows an expression function or constant; rename it")


def _to_text(value: Any) -> Any:
    if isinstance(value, bool):
        return value  # rejected by the str field
    return str(value) if isinstance(value, int | float) else value


ExprText = Annotated[str, BeforeValidator(_to_text)]


def _cost_shorthand(value: Any) -> Any:
    return {"function": value} if isinstance(value, str) else value


class CostSpec(FrozenModel):
    """`cost:` — expressions over the parameters, or `function: package.module:fn`."""

    flop: ExprText | None = None
    bytes: ExprText | None = None
    function: EntryRef | None = None

    @model_validator(mode="after")
    def _one_form(self) -> CostSpec:
        exprs = (self.flop is not None, self.bytes is not None)
        if self.function is not None and any(exprs):
            raise ValueError("give either flop and bytes expressions or a cost function, not both")
        if self.function is None and not all(exprs):
            raise ValueError("give both flop and bytes (e.g. flop: 2*m*n*k, bytes: 2*(m*k+k*n+m*n))")
        return self


class TuneSpec(FrozenModel):
    """`tune:` — configuration axes timed for every shape; the best per shape is reported."""

    axes: dict[str, ValueAxis] = Field(min_length=1)
    where: ExprText | None = None  # keep only configurations for which this is true

    @field_validator("axes")
    @classmethod
    def _names(cls, axes: dict[str, tuple[Scalar, ...]]) -> dict[str, tuple[Scalar, ...]]:
        check_param_names(list(axes), "tune axis")
        return axes


class CustomSpec(WorkloadSpec):
    kind: Literal["custom"]
    entry: EntryRef
    reference: EntryRef | None = None
    tolerance: float | None = Field(None, gt=0, le=1e6)
    params: dict[str, ValueAxis] = Field(default_factory=dict)
    tune: TuneSpec | None = None
    cost: Annotated[CostSpec | None, BeforeValidator(_cost_shorthand)] = None
    triton: bool | None = None  # None: detected from the entry module (Triton kernels in it)
    # "pallas": a JAX Pallas kernel (workloads/custom/pallas.py); "triton" is `triton: true`
    backend: Literal["torch", "triton", "pallas"] | None = None

    runner: ClassVar[str] = "perfkit.workloads.custom.runner:prepare"

    # "entry" / "reference" / "cost" -> "FILE:LINE:COL" of the key in model.yaml (when loaded
    # from a file); dumped under `yaml_positions` (a child process locates its errors the same
    # way), but not into the run record or the spec hash.
    _where: dict[str, str] = PrivateAttr(default_factory=dict)

    @model_serializer(mode="wrap")
    def _with_positions(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        if self._where and isinstance(data, dict) and not (info.context or {}).get(RECORD):
            data[POSITIONS] = dict(self._where)
        return data

    @model_validator(mode="wrap")
    @classmethod
    def _read_positions(cls, data: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
        """A dump's positions back (never from a YAML file: there the key is unknown)."""
        where = None
        if isinstance(data, dict) and POSITIONS in data and not (info.context or {}).get("yaml"):
            data = dict(data)
            where = data.pop(POSITIONS)
        spec = handler(data)
        if isinstance(where, dict):
            spec._where.update({str(k): str(v) for k, v in where.items()})
        return spec

    @field_validator("params")
    @classmethod
    def _param_names(cls, params: dict[str, tuple[Scalar, ...]]) -> dict[str, tuple[Scalar, ...]]:
        check_param_names(list(params), "parameter")
        return params

    @field_validator("tune")
    @classmethod
    def _tune_names(cls, tune: TuneSpec | None, info: ValidationInfo) -> TuneSpec | None:
        if tune is not None and "params" in info.data:
            clash = sorted(set(tune.axes) & set(info.data["params"]))
            if clash:
                raise ValueError(f"'{clash[0]}' is both a parameter and a tune axis; keep it in one place")
        return tune

    @model_validator(mode="after")
    def _expressions(self, info: ValidationInfo) -> CustomSpec:
        """Parse every expression against the parameter names; record key positions.

        Loaded from a file (perfkit.pipeline.spec passes the YAML document as validation context), an
        error is a SpecError located at the expression itself; otherwise a ValueError.
        """
        ctx = info.context if isinstance(info.context, dict) else {}
        doc, loc = ctx.get("yaml"), ctx.get("loc")
        exprs: list[tuple[tuple[str, str], str | None]] = [
            (("tune", "where"), self.tune.where if self.tune else None),
            (("cost", "flop"), self.cost.flop if self.cost else None),
            (("cost", "bytes"), self.cost.bytes if self.cost else None),
        ]
        names = [*self.params, *self.config_names]
        for path, text in exprs:
            if text is None:
                continue
            try:
                parse_expr(text, names)
            except ExprError as exc:
                message = f"{'.'.join(path)}: {exc}"
                if doc is not None and loc is not None:
                    raise doc.error([*loc, *path], message) from None
                raise ValueError(message) from None
        if doc is not None and loc is not None:
            for key in ("entry", "reference", "cost"):
                if getattr(self, key) is None:
                    continue
                line, col = doc.where([*loc, key], key=True)
                self._where[key] = located(doc.path, line, col, "").removesuffix(": ")
        return self

    def where(self, key: str) -> str:
        """Where `key` of this workload is written: `FILE:LINE:COL`, or the workload's name."""
        return self._where.get(key) or self._where.get("entry") or f"workload '{self.label}'"

    @property
    def shape_names(self) -> tuple[str, ...]:
        return tuple(self.params)

    @property
    def config_names(self) -> tuple[str, ...]:
        return tuple(self.tune.axes) if self.tune else ()

    def sweep(self) -> list[dict[str, Any]]:
        shapes = cartesian(self.params)
        if self.tune is None:
            return shapes
        configs = cartesian(self.tune.axes)
        keep = parse_expr(self.tune.where, [*self.params, *self.tune.axes]) if self.tune.where else None
        out: list[dict[str, Any]] = []
        for shape in shapes:
            chosen = [{**shape, **c} for c in configs]
            if keep is not None:
                try:
                    chosen = [p for p in chosen if evaluate(keep, p)]
                except ExprError as exc:
                    raise ValueError(f"tune.where: {exc}") from None
                if not chosen:
                    shown = ", ".join(f"{k}={v}" for k, v in shape.items())
                    raise ValueError(f"tune.where '{keep}' leaves no configuration for {shown}; loosen it")
            out.extend(chosen)
        return out
