"""The op (and shapes) of each kernel a CUDA / HIP graph replayed, from its capture (graph_capture.py).

A graph launch's kernels (one correlation id, in start order) are matched to one captured graph:
the capture whose kernel names are the same sequence; else the one sharing the most names,
kernels paired by name and order (the k-th replayed kernel of a name with the k-th captured
launch of that name: streams of one graph may run its kernels in another order than they were
captured). Where several captures are the same sequence (vLLM's piecewise graphs: one per
layer), the n-th replay of that sequence takes the n-th such capture, cyclically: the pieces
replay in the order they were captured. A capture without kernel names (CUDA: the launch call
does not name its kernel) matches a replay of as many kernels when it is the only capture of
that length; otherwise the replay stays unattributed. Kernels no capture accounts for keep no op.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from perfkit.analyzers.event_table import EventTable, Kind
from perfkit.analyzers.steps.graph_capture import Capture


@dataclass(frozen=True)
class ReplayOps:
    """Per GPU op of a `gpu_ops` frame: the op and Input Dims of its capture ("" where none)."""

    op: npt.NDArray[np.object_]
    dims: npt.NDArray[np.object_]
    graph: npt.NDArray[np.bool_]  # replayed by a graph launch
    mapped: npt.NDArray[np.bool_]  # ... and given its capture's op


def _pair(replayed: tuple[str, ...], captured: tuple[str, ...]) -> list[int]:
    """Index into `captured` of each replayed kernel (-1 none): by name, k-th with k-th."""
    if replayed == captured:
        return list(range(len(replayed)))
    if not any(captured):  # no names on the capture side: by position, counts equal
        return list(range(len(replayed))) if len(replayed) == len(captured) else [-1] * len(replayed)
    slots: dict[str, list[int]] = defaultdict(list)
    for i, name in enumerate(captured):
        slots[name].append(i)
    taken: dict[str, int] = defaultdict(int)
    out = []
    for name in replayed:
        k = taken[name]
        out.append(slots[name][k] if k < len(slots[name]) else -1)
        taken[name] = k + 1
    return out


class _Matcher:
    def __init__(self, captures: list[Capture]) -> None:
        self.captures = captures
        self.by_seq: dict[tuple[str, ...], list[int]] = defaultdict(list)
        for i, c in enumerate(captures):
            self.by_seq[c.kernels].append(i)
        self.seen: dict[tuple[str, ...], int] = defaultdict(int)
        self.best: dict[tuple[str, ...], tuple[int, list[int]]] = {}

    def match(self, names: tuple[str, ...]) -> tuple[int, list[int]]:
        """(capture index, pairing) of one replay; (-1, []) when none fits."""
        exact = self.by_seq.get(names)
        if exact:
            n = self.seen[names]
            self.seen[names] = n + 1
            return exact[n % len(exact)], list(range(len(names)))
        if names not in self.best:
            self.best[names] = self._closest(names)
        return self.best[names]

    def _closest(self, names: tuple[str, ...]) -> tuple[int, list[int]]:
        unnamed = [i for i, c in enumerate(self.captures) if not any(c.kernels) and len(c.kernels) == len(names)]
        if len(unnamed) == 1:
            return unnamed[0], list(range(len(names)))
        best, pairing, hits = -1, [], 0
        for i, c in enumerate(self.captures):
            if not any(c.kernels):
                continue
            p = _pair(names, c.kernels)
            h = sum(j >= 0 for j in p)
            if h > hits:
                best, pairing, hits = i, p, h
        return best, pairing


def replay_ops(table: EventTable, ops: pd.DataFrame, captures: list[Capture]) -> ReplayOps:
    """The capture's op of every graph-replayed op of `ops` (a `gpu_ops` frame of `table`)."""
    n = len(ops)
    op = np.full(n, "", dtype=object)
    dims = np.full(n, "", dtype=object)
    graph = (ops["api"] == "graph").to_numpy()
    mapped = np.zeros(n, dtype=bool)
    if not captures or not graph.any():
        return ReplayOps(op, dims, graph, mapped)
    pos = np.flatnonzero(graph)
    launch = ops["launch_row"].to_numpy()[pos].astype(np.int64)
    order = np.lexsort((ops["ts_ns"].to_numpy()[pos], launch))  # by launch, then start
    pos, launch = pos[order], launch[order]
    names = table.name_of(ops["name_id"].to_numpy()[pos])
    kind = ops["kind"].to_numpy()[pos]
    names[kind == int(Kind.MEMCPY)] = "Memcpy"  # as graph_capture names a captured copy
    names[kind == int(Kind.MEMSET)] = "Memset"
    cuts = np.flatnonzero(np.diff(launch)) + 1
    m = _Matcher(captures)
    for group in np.split(np.arange(len(pos)), cuts):
        seq = tuple(str(x) for x in names[group])
        ci, pairing = m.match(seq)
        if ci < 0:
            continue
        launches = captures[ci].launches
        for g, j in zip(group, pairing, strict=True):
            if j >= 0 and launches[j].op:
                op[pos[g]] = launches[j].op
                dims[pos[g]] = launches[j].dims
                mapped[pos[g]] = True
    return ReplayOps(op, dims, graph, mapped)
