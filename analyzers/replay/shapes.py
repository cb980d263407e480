"""The shapes and dtypes an op ran with in a trace, as a workload entry of a model.yaml.

`--op NAME`: the CPU op's own `Input Dims` / `Input type` (record_shapes). `--kernel NAME`: the op
that launched the kernel (its External id), whose shapes those are. The most frequent shape wins
(its count is reported). GEMM ops (aten::mm / addmm / matmul / linear / bmm) become a `kind: gemm`
entry with m, n, k and the dtype. Where the trace carries no shapes, or the op is of a class with
no replay yet, the entry names the fields to fill with the FILL placeholder, which the spec
rejects (`perfkit profile` stops at that line, naming the field): never a guess.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perfkit.analyzers.event_table import EventTable, Kind
from perfkit.core.errors import TraceError

FILL = "FILL"  # the placeholder of a field the trace does not say
_DTYPES = {"float": "fp32", "c10::BFloat16": "bf16", "c10::Half": "fp16", "double": "fp64",
           "c10::Float8_e4m3fn": "fp8_e4m3"}
_GEMM_OPS = ("aten::mm", "aten::addmm", "aten::matmul", "aten::linear", "aten::bmm", "aten::baddbmm")


@dataclass(frozen=True)
class Replay:
    op: str  # the op whose shapes these are
    entry: dict[str, Any]  # one item of `workloads:`
    calls: int  # calls of the op found
    same_shape: int  # of them with the shape written
    missing: tuple[str, ...] = ()  # fields left FILL
    notes: tuple[str, ...] = field(default_factory=tuple)


def _rows_named(table: EventTable, name: str, kinds: tuple[Kind, ...]) -> np.ndarray:
    ids = [i for i, n in enumerate(table.names) if n == name]
    if not ids:
        raise TraceError(f"{name}: no event of that name in the trace; see `perfkit analyze TRACE` for its kernels and ops")
    return np.flatnonzero(table.mask_kind(*kinds) & np.isin(table["name_id"], ids))


def _launching_ops(table: EventTable, kernel_rows: np.ndarray) -> np.ndarray:
    cpu = np.flatnonzero(table.mask_kind(Kind.CPU_OP) & (table["external_id"] >= 0))
    by_ext = {int(e): int(r) for e, r in zip(table["external_id"][cpu], cpu, strict=True)}
    return np.array([by_ext.get(int(table["external_id"][r]), -1) for r in kernel_rows], dtype=np.int64)


def _text(table: EventTable, col: str, row: int) -> Any:
    i = int(table[col][row])
    return json.loads(table.args_text[i]) if i >= 0 else None


def _gemm(op: str, dims: list[Any], types: list[Any]) -> tuple[dict[str, Any], list[str]]:
    shapes = [d for d in dims if isinstance(d, list) and len(d) >= 1]
    a, b = (shapes[1], shapes[2]) if op in ("aten::addmm", "aten::baddbmm") and len(shapes) >= 3 else [*shapes, [], []][:2]
    entry: dict[str, Any] = {"kind": "gemm"}
    if op == "aten::linear" and len(a) >= 1 and len(b) == 2:
        entry.update(m=int(math.prod(a[:-1])), n=int(b[0]), k=int(b[1]))
    elif len(a) >= 2 and len(b) >= 2:
        entry.update(m=int(math.prod(a[:-1])), n=int(b[-1]), k=int(a[-1]))
    dtype = _DTYPES.get(str(types[0])) if types else None
    entry["dtypes"] = [dtype] if dtype else FILL
    missing = [f for f in ("m", "n", "k") if f not in entry] + ([] if dtype else ["dtypes"])
    for f in ("m", "n", "k"):
        entry.setdefault(f, FILL)
    return entry, missing


def replay_entry(table: EventTable, name: str, kernel: bool) -> Replay:
    """The workload entry that runs op (or the op launching kernel) `name` with its trace shapes."""
    if kernel:
        rows = _launching_ops(table, _rows_named(table, name, (Kind.KERNEL,)))
        rows = rows[rows >= 0]
        if not len(rows):
            raise TraceError(f"{name}: no launching CPU op of this kernel in the trace (a CUDA-graph replay?); "
                             "replay the op instead with --op NAME")
    else:
        rows = _rows_named(table, name, (Kind.CPU_OP,))
    op = str(Counter(table.names[int(table["name_id"][r])] for r in rows).most_common(1)[0][0])
    shapes = Counter((json.dumps(_text(table, "dims_id", int(r))), json.dumps(_text(table, "types_id", int(r))))
                     for r in rows if table.names[int(table["name_id"][r])] == op)
    (dims_s, types_s), same = shapes.most_common(1)[0]
    dims, types = json.loads(dims_s) or [], json.loads(types_s) or []
    slug = op.split("::")[-1].strip("_") or "op"
    if op in _GEMM_OPS:
        entry, missing = _gemm(op, dims, types)
    else:
        entry = {"kind": FILL}
        missing = ["kind"]
    entry = {"kind": entry.pop("kind"), "name": f"replay-{slug}", **entry}
    notes = () if dims else ("the trace has no shapes (record_shapes off): fill the FILL fields",)
    return Replay(op, entry, int(sum(shapes.values())), int(same), tuple(missing), notes)
