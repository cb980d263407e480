"""The runner of `kind: collectives`: one torch.distributed collective per point, checked exactly.

Every rank fills its input with small integers that depend on its rank ((i + r) mod 4 for the
reductions, mod 8 otherwise): sums of them are exact in every dtype offered, so the result is
compared with the expected tensor for equality, not within a tolerance. The timed call reuses the
buffers without refilling them (the values of a repeated all_reduce grow; the time does not care).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from perfkit.core.measurement import Measurement
from perfkit.core.record import Numerics
from perfkit.workloads.base import Point, Prepared, RunContext, Unsupported
from perfkit.workloads.collectives.cost import (
    REDUCING,
    algbw_bytes_per_s,
    bus_factor,
    busbw_bytes_per_s,
    collective_cost,
    message_elements,
)
from perfkit.workloads.collectives.spec import COLLECTIVE_DTYPES


def _torch_dtype(name: str) -> Any:
    import torch

    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16,
            "int32": torch.int32, "fp64": torch.float64}[name]


def _pattern(elements: int, rank: int, modulus: int) -> Any:
    import torch

    return (torch.arange(elements, dtype=torch.int64) + rank) % modulus


def prepare(point: Point, ctx: RunContext) -> Prepared:
    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        raise Unsupported("kind 'collectives' runs only under several ranks; add 'launch: {nproc: 2}' to the spec")
    p = point.params
    op, dtype_name = str(p["op"]), str(p["dtype"])
    n, rank = dist.get_world_size(), dist.get_rank()
    esize = COLLECTIVE_DTYPES[dtype_name]
    size_bytes = int(p["size_bytes"]) if "size_bytes" in p else int(p["elements"]) * esize
    elements = message_elements(op, size_bytes, esize, n)
    if elements == 0:
        raise Unsupported(f"{size_bytes} B holds fewer than {n} {dtype_name} elements ({op} splits it per rank)")
    dtype, dev = _torch_dtype(dtype_name), torch.device(ctx.device)
    modulus = 4 if op in REDUCING else 8
    chunk = elements // n
    inputs = [_pattern(elements if op != "all_gather" else chunk, q, modulus) for q in range(n)]
    expected = _expected(op, inputs, rank, n, chunk)
    send = inputs[rank].to(dtype).to(dev)
    recv = send if op in ("all_reduce", "broadcast") else torch.empty(expected.numel(), dtype=dtype, device=dev)
    fn = _call(op, send, recv)
    out = recv  # in place for all_reduce and broadcast
    source = inputs[rank].to(dtype).to(dev)

    def check() -> Numerics:
        send.copy_(source)
        fn()
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        got = out.to("cpu", torch.float64)
        want = expected.to(torch.float64)
        diff = (got - want).abs()
        norm = float(want.norm())
        return Numerics(reference="exact integer-valued expected result", rel_err=float(diff.norm()) / (norm or 1.0),
                        max_abs_err=float(diff.max()) if diff.numel() else 0.0, tol=0.0,
                        ok=bool(torch.equal(got, want)))

    actual_bytes = elements * esize

    def metrics(m: Measurement) -> dict[str, Any]:
        t = m.median_s
        out = {"algbw_bytes_per_s": algbw_bytes_per_s(actual_bytes, t),
               "busbw_bytes_per_s": busbw_bytes_per_s(op, actual_bytes, t, n),
               "bus_factor": bus_factor(op, n), "world_size": n,
               "rank_timing": str(m.extra.get("rank_timing", "lockstep"))}
        slowest = m.extra.get("max_over_ranks_median_s")
        if isinstance(slowest, (int, float)) and slowest > 0:  # nccl_tests: the max over ranks beside the mean
            out["max_rank_time_s"] = float(slowest)
            out["busbw_max_rank_bytes_per_s"] = busbw_bytes_per_s(op, actual_bytes, float(slowest), n)
        return out

    return Prepared(fn=fn, cost=collective_cost(op, actual_bytes, elements, n), check=check, metrics=metrics,
                    params_extra={} if actual_bytes == size_bytes else {"message_bytes": actual_bytes})


def _expected(op: str, inputs: list[Any], rank: int, n: int, chunk: int) -> Any:
    import torch

    if op == "all_reduce":
        return torch.stack(inputs).sum(0)
    if op == "all_gather":
        return torch.cat(inputs)
    if op == "reduce_scatter":
        return torch.stack([x[rank * chunk:(rank + 1) * chunk] for x in inputs]).sum(0)
    if op == "all_to_all":
        return torch.cat([x[rank * chunk:(rank + 1) * chunk] for x in inputs])
    return inputs[0].clone()  # broadcast from rank 0


def _call(op: str, send: Any, recv: Any) -> Callable[[], Any]:
    import torch.distributed as dist

    if op == "all_reduce":
        return lambda: dist.all_reduce(send)
    if op == "all_gather":
        return lambda: dist.all_gather_into_tensor(recv, send)
    if op == "reduce_scatter":
        return lambda: dist.reduce_scatter_tensor(recv, send)
    if op == "all_to_all":
        return lambda: dist.all_to_all_single(recv, send)
    return lambda: dist.broadcast(send, src=0)
