"""What a loaded trace holds, in a few one-line notes, so that empty tables are never silent.

`trace_notes(table)` says when there is no GPU work (a CPU-only trace, or a device perfkit
does not read), when GPU ops cannot be linked to their launches, which event categories the
loader did not read, how many events it left out and why, its located warnings, and when a
large share of GPU time falls in kernels no category rule names. `empty_reason(name, table)`
is the one line to print instead of an empty table.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfkit.analyzers.event_table import EventTable, Kind, TraceMeta
from perfkit.analyzers.kernel_summary import other_share_pct
from perfkit.analyzers.linking import gpu_ops
from perfkit.core.units import fmt_num

OTHER_SHARE_NOTE_PCT = 10.0  # note the "other" category from this share of GPU time on
UNLINKED_NOTE_SHARE = 0.05  # note GPU ops without a launch record from this share of them on
MAX_LISTED = 5  # categories / reasons named per note; the rest are counted


def _subject(table: EventTable) -> str:
    paths = [m.path for m in table.meta]
    if len(paths) == 1:
        return f"{paths[0]}: "
    return f"{len(paths)} files: " if paths else ""


def _counted(pairs: tuple[tuple[str, int], ...]) -> str:
    ordered = sorted(pairs, key=lambda p: (-p[1], p[0]))
    text = ", ".join(f"{name} ({count:,})" for name, count in ordered[:MAX_LISTED])
    more = len(ordered) - MAX_LISTED
    return text + (f" and {more} more" if more > 0 else "")


def _file_notes(meta: TraceMeta) -> list[str]:
    notes = []
    if meta.unknown_categories:
        n = sum(c for _, c in meta.unknown_categories)
        what = "rows of timed tables" if meta.source == "nsys" else "events of categories"
        notes.append(f"{meta.path}: {n:,} {what} perfkit does not read: {_counted(meta.unknown_categories)}")
    if meta.dropped:
        n = sum(c for _, c in meta.dropped)
        notes.append(f"{meta.path}: {n:,} events left out: {_counted(meta.dropped)}")
    if meta.coerced:
        n = sum(c for _, c in meta.coerced)
        notes.append(f"{meta.path}: {n:,} fields of odd type read as numbers or text: {_counted(meta.coerced)}")
    notes.extend(meta.warnings)
    return notes


def _work_notes(table: EventTable) -> list[str]:
    kinds = np.bincount(table["kind"].astype(np.int64), minlength=len(Kind)) if len(table) else np.zeros(len(Kind), np.int64)
    gpu = int(kinds[Kind.KERNEL] + kinds[Kind.MEMCPY] + kinds[Kind.MEMSET])
    cpu_ops = int(kinds[Kind.CPU_OP])
    unread = sum(c for m in table.meta for _, c in m.unknown_categories) or int(kinds[Kind.OTHER])
    who = _subject(table)
    if len(table) == 0:
        return [f"{who}no events perfkit reads: every table is empty"]
    if gpu == 0 and unread:
        return [f"{who}no GPU kernels perfkit reads, but {unread:,} events of categories it does not read "
                f"(another device type?); {cpu_ops:,} CPU ops, the ops table shows those whose cost perfkit computes"]
    if gpu == 0:
        return [f"{who}no GPU kernels: this is a CPU trace with {cpu_ops:,} CPU ops; "
                "the ops table shows those whose cost perfkit computes"]
    return _link_notes(table, who, gpu) + _other_notes(table, who)


def _link_notes(table: EventTable, who: str, gpu: int) -> list[str]:
    ops = gpu_ops(table)
    unlinked = ops["launch_row"].to_numpy() < 0
    n = int(unlinked.sum())
    if n == gpu:
        return [f"{who}none of the {gpu:,} GPU ops is linked to a launch call (no runtime events with their "
                "correlation ids): launch statistics and ranges have no GPU side"]
    if n < UNLINKED_NOTE_SHARE * gpu:
        return []
    return [f"{who}{n:,} of {gpu:,} GPU ops ({fmt_num(100.0 * n / gpu)}%) have no launch record in the trace, "
            f"on {_streams(ops[unlinked], len(table.ranks) > 1)}: launch statistics and ranges do not count them"]


def _streams(ops: pd.DataFrame, ranked: bool) -> str:
    """`stream 7 (1,138), stream 20 (12)`: the streams of `ops`, most ops first (rank-qualified with `ranked`)."""
    counts = ops.groupby(["rank", "stream"], sort=True).size().sort_values(ascending=False, kind="stable")
    keys: list[tuple[int, int]] = list(counts.index)
    named = [((f"rank {r} " if ranked else "") + f"stream {s}", int(c)) for (r, s), c in zip(keys, counts, strict=True)]
    return _counted(tuple(named))


def _other_notes(table: EventTable, who: str) -> list[str]:
    share = other_share_pct(table)
    if share >= OTHER_SHARE_NOTE_PCT:
        return [f"{who}{fmt_num(share)}% of GPU time is in kernels no category rule names (category other); "
                "the kernels table lists them"]
    return []


def trace_notes(table: EventTable) -> list[str]:
    """One-line notes on what the trace holds and what the loader could not read (may be empty)."""
    notes = _work_notes(table)
    for meta in table.meta:
        notes.extend(_file_notes(meta))
    return notes


_SUPPORTED_OPS = "mm, addmm, bmm, baddbmm, matmul, linear or scaled_dot_product_attention"


def _sources(table: EventTable) -> set[str]:
    return {m.source for m in table.meta} or {"kineto"}


def empty_reason(name: str, table: EventTable, range_pattern: str | None = None) -> str:
    """Why the table `name` of `perfkit analyze` is empty, in one line, with advice that fits
    the trace's source (Kineto advice only for Kineto traces)."""
    kinds = set(np.unique(table["kind"]).tolist()) if len(table) else set()
    has_gpu = bool(kinds & {int(Kind.KERNEL), int(Kind.MEMCPY), int(Kind.MEMSET)})
    kineto = "kineto" in _sources(table)
    if len(table) == 0:
        return "(no rows: the trace has no events perfkit reads)"
    if name in ("kernels", "categories", "temporal", "idle", "launch", "overlap", "skew", "diff", "diff_totals") and not has_gpu:
        return "(no rows: the trace has no GPU kernels, memcpy or memset)"
    if name == "ranges":
        if int(Kind.USER_ANNOTATION) not in kinds:
            return ("(no rows: the trace has no user annotations: record_function, ProfilerStep#N)" if kineto
                    else "(no rows: the export has no NVTX ranges (profile with nsys --trace=cuda,nvtx))")
        if range_pattern:
            return f"(no rows: no annotation name matches --range '{range_pattern}')"
    if name == "ops":
        if not kineto:
            return ("(no rows: an Nsight Systems export records no op shapes; the ops table needs a "
                    "torch.profiler trace recorded with record_shapes=True)")
        return f"(no rows: no CPU op {_SUPPORTED_OPS} with recorded shapes (profile with record_shapes=True))"
    if name == "collectives":
        return ("(no rows: no collective calls in the trace: record_param_comms ops, gloo:* annotations "
                "or NCCL / RCCL kernels)" if kineto else "(no rows: no NCCL / RCCL kernels in the export)")
    if name == "skew":
        return "(no rows: no rank has GPU ops)"
    if name == "hlo_ops":
        return ("(no rows: HLO ops come from an XLA / JAX trace (an .xplane.pb from jax.profiler); "
                "this trace names none)")
    return "(no rows)"
