"""Runner of `kind: custom`: import the user's factory, build the case, cost and numerics check.

The factory (`entry:`) is called with the keyword arguments it accepts out of the point's
parameters (shape and tune axes), `device` ("cpu" / "cuda") and `seed`, after
`torch.manual_seed(seed)`. It returns what to time:
  - a callable `fn` (timed as `fn()`), or
  - `(fn, args)` / `(fn, args, kwargs)`: timed as `fn(*args, **kwargs)`; the reference
    (`reference:`) is called with the same inputs and both outputs are compared in float64.

Triton on a CPU device: before any user module is imported, TRITON_INTERPRET=1 is set in this
process (Triton decides between compiling and interpreting when `@triton.jit` runs, i.e. at
import), so Triton kernels run under Triton's interpreter: their numerics are checked and
their timing is skipped with the reason recorded. The variable stays set for the rest of the
process (a run uses one device).
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from perfkit.core.cost import Cost
from perfkit.core.record import Numerics
from perfkit.workloads.base import Point, Prepared, RunContext
from perfkit.workloads.custom.entry import (
    EntryError,
    call_ref,
    import_module,
    import_ref,
    innermost_kernel,
    short_error,
    triton_objects,
)
from perfkit.workloads.custom.spec import CustomSpec
from perfkit.workloads.dtypes import REL_TOL, canonical
from perfkit.workloads.expr import ExprError, evaluate_number, parse_expr

DEFAULT_TOL = 1e-4
INTERPRET_ENV = "TRITON_INTERPRET"
CPU_TRITON_REASON = (
    "Triton kernels run under Triton's interpreter on cpu (TRITON_INTERPRET=1): numerics checked, "
    "timing skipped because the interpreter's speed says nothing about the kernel; run on a "
    "CUDA device to time it"
)
GPU_INTERPRET_REASON = (
    "TRITON_INTERPRET is set, so Triton kernels run in the interpreter: timing skipped; "
    "unset it to time the compiled kernel"
)


@dataclass(frozen=True)
class Case:
    """What the factory returned: the function and the inputs it is timed on."""

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] | None = None
    bare: bool = True  # a zero-argument callable: no inputs to give a reference

    def call(self) -> Any:
        return self.fn(*self.args, **(self.kwargs or {}))

    def timed(self) -> Callable[[], Any]:
        if self.bare:
            return self.fn
        fn, args, kwargs = self.fn, self.args, self.kwargs or {}
        return lambda: fn(*args, **kwargs)


def interpret_enabled() -> bool:
    return os.environ.get(INTERPRET_ENV, "").strip().lower() in ("1", "true", "on", "yes")


def prepare(point: Point, ctx: RunContext) -> Prepared:
    spec = cast(CustomSpec, point.spec)
    on_cpu = not ctx.device.startswith("cuda")
    if spec.backend == "pallas":
        return prepare_pallas(spec, point, ctx, on_cpu)
    if on_cpu:
        os.environ[INTERPRET_ENV] = "1"  # before the user's modules run @triton.jit
    factory = import_ref(spec.entry, "entry", spec.where("entry"))
    import torch

    torch.manual_seed(ctx.seed)
    available = {**point.params, "device": ctx.device, "seed": ctx.seed}
    case = as_case(call_ref(factory, available, "entry", spec.entry, spec.where("entry")), spec)
    is_triton = _is_triton(spec, on_cpu)  # after the call: factories may import kernels lazily
    cost = point_cost(spec, point.params)
    check = make_check(spec, case, tolerance(spec, point.params)) if spec.reference else None
    skip = None
    if is_triton:
        skip = CPU_TRITON_REASON if on_cpu else (GPU_INTERPRET_REASON if interpret_enabled() else None)
    return Prepared(fn=case.timed(), cost=cost, check=check, skip_timing=skip)


def prepare_pallas(spec: CustomSpec, point: Point, ctx: RunContext, on_cpu: bool) -> Prepared:
    """A Pallas point (workloads/custom/pallas.py): interpreted and untimed on a CPU."""
    from perfkit.workloads.custom import pallas

    pallas.import_jax(spec.where("entry"))
    factory = import_ref(spec.entry, "entry", spec.where("entry"))
    available = {**point.params, "device": ctx.device, "seed": ctx.seed, "interpret": on_cpu}
    case = as_case(call_ref(factory, available, "entry", spec.entry, spec.where("entry")), spec)
    timed = case.fn if case.bare else pallas.blocking(case.fn, case.args, case.kwargs or {})
    check = None
    if spec.reference:
        ref_name, where, tol = str(spec.reference), spec.where("reference"), tolerance(spec, point.params)

        def check() -> Numerics:
            expected = reference_output(ref_name, where, case)
            return compare_outputs(pallas.to_float64(timed(), where), pallas.to_float64(expected, where), tol,
                                   f"reference {ref_name}", where)

    return Prepared(fn=timed, cost=point_cost(spec, point.params), check=check,
                    skip_timing=pallas.CPU_PALLAS_REASON if on_cpu else None)


def _is_triton(spec: CustomSpec, on_cpu: bool) -> bool:
    """Whether the entry's module holds Triton kernels (or the spec says so)."""
    module = sys.modules[spec.entry.partition(":")[0]]
    kernels = triton_objects(module)
    if on_cpu:
        compiled = [k for k in kernels if type(innermost_kernel(k)).__name__ == "JITFunction"]
        if compiled:
            raise EntryError(
                f"{spec.where('entry')}: module '{module.__name__}' was imported before "
                f"{INTERPRET_ENV}=1 was set, so its Triton kernels cannot run on cpu; run perfkit "
                f"in a fresh process or set {INTERPRET_ENV}=1 before importing it"
            )
    return spec.triton if spec.triton is not None else bool(kernels)


def as_case(result: Any, spec: CustomSpec) -> Case:
    where = spec.where("entry")
    if isinstance(result, tuple) and len(result) in (2, 3) and callable(result[0]):
        args, kwargs = result[1], result[2] if len(result) == 3 else {}
        if isinstance(args, tuple | list) and isinstance(kwargs, dict):
            return Case(fn=result[0], args=tuple(args), kwargs=dict(kwargs), bare=False)
    elif callable(result):
        if spec.reference:
            raise EntryError(
                f"{where}: entry '{spec.entry}' returned a bare callable, so the reference has no "
                "inputs; return (fn, args) or (fn, args, kwargs)"
            )
        return Case(fn=result)
    raise EntryError(
        f"{where}: entry '{spec.entry}' returned {type(result).__name__}; return the callable to "
        "time, (fn, args) or (fn, args, kwargs)"
    )


def tolerance(spec: CustomSpec, params: dict[str, Any]) -> float:
    """The spec's tolerance, else the REL_TOL of the point's `dtype` parameter, else 1e-4."""
    if spec.tolerance is not None:
        return spec.tolerance
    dtype = params.get("dtype")
    if isinstance(dtype, str):
        try:
            return REL_TOL[canonical(dtype)]
        except ValueError:
            pass
    return DEFAULT_TOL


def point_cost(spec: CustomSpec, params: dict[str, Any]) -> Cost:
    cost = spec.cost
    if cost is not None and cost.function is None:
        names = list(params)
        where = spec.where("cost")
        values: dict[str, float] = {}
        for key in ("flop", "bytes"):
            try:
                values[key] = evaluate_number(parse_expr(str(getattr(cost, key)), names), params)
            except ExprError as exc:
                raise EntryError(f"{where}: cost {key}: {exc}") from None
            if values[key] < 0:
                raise EntryError(f"{where}: cost {key} is negative ({values[key]:g}); fix the expression")
        return Cost(flop=values["flop"], bytes=values["bytes"])
    if cost is not None and cost.function is not None:
        ref, where = cost.function, spec.where("cost")
        fn = import_ref(ref, "cost", where)
    else:
        ref, where = spec.entry, spec.where("entry")
        module = import_module(ref, "entry", where)
        found = getattr(module, "cost", None)
        if not callable(found):
            raise EntryError(
                f"{where}: workload '{spec.label}' has no cost; add cost: {{flop: ..., bytes: ...}} "
                f"or define cost(**params) in module '{module.__name__}'"
            )
        ref, fn = f"{module.__name__}:cost", found
    return as_cost(call_ref(fn, params, "cost", ref, where), ref, where)


def as_cost(value: Any, ref: str, where: str) -> Cost:
    """A Cost from what a cost function returned: Cost-like, {flop, bytes}, or (flop, bytes)."""
    try:
        if isinstance(value, dict):
            flop, nbytes = value["flop"], value["bytes"]
        elif isinstance(value, tuple | list) and len(value) == 2:
            flop, nbytes = value
        else:
            flop, nbytes = value.flop, value.bytes
        out = Cost(flop=float(flop), bytes=float(nbytes))
    except (AttributeError, KeyError, TypeError, ValueError):
        raise EntryError(f"{where}: cost '{ref}' returned {type(value).__name__}; return "
                         "Cost(flop, bytes), {'flop': ..., 'bytes': ...} or (flop, bytes)") from None
    if not (math.isfinite(out.flop) and math.isfinite(out.bytes)):
        raise EntryError(f"{where}: cost '{ref}' returned a cost that is not finite ({out.flop}, {out.bytes}); fix it")
    if out.flop < 0 or out.bytes < 0:
        raise EntryError(f"{where}: cost '{ref}' returned a negative cost; fix it")
    return out


def make_check(spec: CustomSpec, case: Case, tol: float) -> Callable[[], Numerics]:
    ref_name = str(spec.reference)
    where = spec.where("reference")

    def check() -> Numerics:
        expected = reference_output(ref_name, where, case)
        return compare_outputs(case.call(), expected, tol, f"reference {ref_name}", where)

    return check


def reference_output(ref_name: str, where: str, case: Case) -> Any:
    """The reference's output on the case's inputs; a reference that raises is one EntryError line."""
    reference = import_ref(ref_name, "reference", where)
    try:
        return reference(*case.args, **(case.kwargs or {}))
    except Exception as exc:
        raise EntryError(f"{where}: reference '{ref_name}' raised {short_error(exc)}; fix the reference") from exc


def compare_outputs(out: Any, expected: Any, tol: float, name: str, where: str) -> Numerics:
    """Compare tensors (or equal-length tuples/lists of tensors) in float64; worst part wins."""
    import torch

    from perfkit.workloads.numerics import compare

    if out is None:
        raise EntryError(f"{where}: the kernel returned None; return its output so it can be "
                         "compared with the reference")
    outs = list(out) if isinstance(out, tuple | list) else [out]
    refs = list(expected) if isinstance(expected, tuple | list) else [expected]
    if len(outs) != len(refs):
        raise EntryError(f"{where}: the kernel returned {len(outs)} outputs and the reference "
                         f"{len(refs)}; return the same structure")
    parts: list[Numerics] = []
    for i, (o, r) in enumerate(zip(outs, refs, strict=True)):
        try:
            parts.append(compare(torch.as_tensor(o), torch.as_tensor(r, device=torch.as_tensor(o).device),
                                 tol, name))
        except (TypeError, ValueError, RuntimeError) as exc:
            part = f" (output {i})" if len(outs) > 1 else ""
            raise EntryError(f"{where}: cannot compare the kernel's output{part} with the reference: "
                             f"{short_error(exc)}") from exc
    worst = max(parts, key=lambda n: n.rel_err)
    return Numerics(reference=name, rel_err=worst.rel_err,
                    max_abs_err=max(p.max_abs_err for p in parts), tol=tol,
                    ok=all(p.ok for p in parts))
