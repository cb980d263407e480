"""The shapes and dtypes an op ran with in a trace, as a workload entry of a model.yaml.

`--op NAME`: the CPU op's own `Input Dims` / `Input type` / `Concrete Inputs` (record_shapes), or,
for a range (record_function / NVTX, e.g. `perfkit_attention`), the op that names its class inside
it (replay/ranges.py). `--kernel NAME`: the op that launched the kernel (its External id), whose
shapes those are. The most frequent entry wins (its count is reported). GEMM ops become
`kind: gemm` (gemm.py), attention ops `kind: attention` (attention.py), norms and the small ops
`kind: kernels` (norms.py), fused experts and MoE ranges `kind: moe` (moe.py). Where the trace does
not say a field, or the op is of a class no kind runs, the entry holds the FILL placeholder there
and names the field; the spec loader refuses it at that line: never a guess.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perfkit.analyzers.event_table import EventTable, Kind
from perfkit.analyzers.replay.classify import entry_for
from perfkit.analyzers.replay.op_call import OpCall
from perfkit.analyzers.replay.ranges import range_entry
from perfkit.core.errors import TraceError


@dataclass(frozen=True)
class Replay:
    op: str  # the op (or range) whose shapes these are
    entry: dict[str, Any]  # one item of `workloads:`
    calls: int  # calls of the op found
    same_shape: int  # of them with the entry written
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


def _json(table: EventTable, col: str, row: int) -> tuple[Any, ...]:
    i = int(table[col][row])
    value = json.loads(table.args_text[i]) if i >= 0 else None
    return tuple(value) if isinstance(value, list) else ()


def op_call(table: EventTable, row: int) -> OpCall:
    return OpCall(table.names[int(table["name_id"][row])], _json(table, "dims_id", row),
                  _json(table, "types_id", row), _json(table, "concrete_id", row))


def replay_entry(table: EventTable, name: str, kernel: bool) -> Replay:
    """The workload entry that runs op or range (or the op launching kernel) `name` with its trace shapes."""
    if kernel:
        rows = _launching_ops(table, _rows_named(table, name, (Kind.KERNEL,)))
        rows = rows[rows >= 0]
        if not len(rows):
            raise TraceError(f"{name}: no launching CPU op of this kernel in the trace (a CUDA-graph replay?); "
                             "replay the op instead with --op NAME")
    else:
        rows = _rows_named(table, name, (Kind.CPU_OP, Kind.USER_ANNOTATION))
        if not len(rows):
            raise TraceError(f"{name}: a name in the trace, but of no CPU op or range; "
                             "for a GPU kernel use --kernel NAME")
    op = str(Counter(table.names[int(table["name_id"][r])] for r in rows).most_common(1)[0][0])
    rows = np.array([r for r in rows if table.names[int(table["name_id"][r])] == op], dtype=np.int64)
    if int(table["kind"][rows[0]]) == Kind.USER_ANNOTATION:
        built = [range_entry(table, int(r), op_call) for r in rows]
    else:
        built = [entry_for(op_call(table, int(r))) for r in rows]
    counts = Counter(json.dumps(b.entry, sort_keys=True) for b in built)
    best, same = counts.most_common(1)[0]
    b = next(x for x in built if json.dumps(x.entry, sort_keys=True) == best)
    slug = op.split("::")[-1].strip("_") or "op"
    entry = {"kind": b.entry["kind"], "name": f"replay-{slug}", **{k: v for k, v in b.entry.items() if k != "kind"}}
    calls = [op_call(table, int(r)) for r in rows[:1]]
    notes = list(b.notes)
    if calls and not calls[0].dims and int(table["kind"][rows[0]]) == Kind.CPU_OP:
        notes.insert(0, "the trace has no shapes (record_shapes off): fill the FILL fields")
    if len(counts) > 1:
        notes.append(f"{len(counts) - 1} other shape(s) of {op} in the trace; this is the most frequent")
    return Replay(op, entry, len(rows), int(same), tuple(b.missing), tuple(notes))
