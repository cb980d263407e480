"""Expert-parallel MoE forward: dispatch token slots to the ranks owning their experts, combine back.

Rank r of N owns experts [r E/N, (r+1) E/N). One forward on this rank's tokens x [T, d]:
1. route (every rank has the same router): top-k ids and weights per token;
2. sort the T k slots by expert (stable); as experts are contiguous per rank, the sorted slots
   are grouped by destination rank too: send_splits[q] = slots for rank q's experts;
3. all_to_all_single of the per-expert counts [E] (E/N each way): rank q learns, per source s,
   how many rows it receives for each of its own experts (recv_counts [N, E/N]);
4. all_to_all_single of the slot rows x[token_of] with those split sizes; the received rows are
   source-major (within a source, expert-major): permute them expert-major, run each local
   expert on its rows, permute back;
5. all_to_all_single of the results back (splits reversed); the source multiplies each row by
   its router weight and adds it into its token (index_add), plus the shared experts, which every
   rank holds whole and runs on its own tokens.
A token whose k slots go to one rank is sent k times (no deduplication).
The pure steps (plan_send, recv_layout, run_local_experts, combine) need no process group.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from perfkit.workloads.models.moe_layer import MoEFeedForward


@dataclass(frozen=True)
class SendPlan:
    order: Tensor  # [T k] slot index (t k + j) in send order: sorted by expert, stable
    token_of: Tensor  # [T k] token of each slot in send order
    expert_counts: Tensor  # [E] int64: slots routed to each expert
    send_splits: list[int]  # [N] rows sent to each rank


@dataclass(frozen=True)
class RecvLayout:
    to_expert_major: Tensor  # received (source-major) rows -> expert-major: rows[to_expert_major]
    back: Tensor  # its inverse: expert_major[back] is source-major again
    local_counts: list[int]  # rows for each local expert
    recv_splits: list[int]  # rows from each source rank


def owned_experts(rank: int, n_experts: int, ep: int) -> range:
    per = n_experts // ep
    return range(rank * per, (rank + 1) * per)


def plan_send(ids: Tensor, n_experts: int, ep: int) -> SendPlan:
    """ids [T, k] expert of each slot -> the send order and the rows for each destination rank."""
    flat = ids.flatten()
    order = torch.argsort(flat, stable=True)
    counts = torch.bincount(flat, minlength=n_experts)
    splits = [int(c) for c in counts.view(ep, n_experts // ep).sum(dim=1).tolist()]
    return SendPlan(order=order, token_of=order // ids.shape[1], expert_counts=counts, send_splits=splits)


def recv_layout(recv_counts: Tensor) -> RecvLayout:
    """recv_counts [N, L]: rows from source s for local expert j, laid out source-major."""
    n, local = recv_counts.shape
    flat = recv_counts.flatten().to(torch.int64)
    block = torch.repeat_interleave(torch.arange(n * local, device=flat.device), flat)  # s L + j per row
    to_expert_major = torch.argsort(block % local, stable=True)  # stable: source order kept per expert
    back = torch.empty_like(to_expert_major)
    back[to_expert_major] = torch.arange(to_expert_major.numel(), device=flat.device)
    return RecvLayout(to_expert_major=to_expert_major, back=back,
                      local_counts=[int(c) for c in recv_counts.sum(dim=0).tolist()],
                      recv_splits=[int(c) for c in recv_counts.sum(dim=1).tolist()])


def run_local_experts(layer: MoEFeedForward, experts: range, rows: Tensor, local_counts: list[int]) -> Tensor:
    """rows [R, d] expert-major (local_counts[j] rows for expert experts[j]) -> expert outputs [R, d]."""
    out = torch.empty_like(rows)
    start = 0
    for e, n in zip(experts, local_counts, strict=True):
        if n:
            out[start:start + n] = layer._expert(e, rows[start:start + n])
            start += n
    return out


def combine(returned: Tensor, plan: SendPlan, weights: Tensor, x: Tensor) -> Tensor:
    """returned [T k, d] expert outputs in send order -> sum over each token's slots, weighted."""
    ys = returned * weights.flatten()[plan.order, None].to(x.dtype)
    return torch.zeros_like(x).index_add_(0, plan.token_of, ys)


def ep_forward(layer: MoEFeedForward, x: Tensor, rank: int, ep: int, group: object = None) -> Tensor:
    """The whole expert-parallel layer on this rank's tokens x [T, d] (every rank calls it)."""
    import torch.distributed as dist

    e_total = layer.n_experts
    weights, ids = layer.route(x)
    plan = plan_send(ids, e_total, ep)
    recv_counts = torch.empty_like(plan.expert_counts)
    dist.all_to_all_single(recv_counts, plan.expert_counts, group=group)
    layout = recv_layout(recv_counts.view(ep, e_total // ep).cpu())
    dev = x.device
    received = x.new_empty(sum(layout.recv_splits), x.shape[1])
    dist.all_to_all_single(received, x[plan.token_of], layout.recv_splits, plan.send_splits, group=group)
    rows = received[layout.to_expert_major.to(dev)]
    done = run_local_experts(layer, owned_experts(rank, e_total, ep), rows, layout.local_counts)
    returned = x.new_empty(plan.order.numel(), x.shape[1])
    dist.all_to_all_single(returned, done[layout.back.to(dev)], plan.send_splits, layout.recv_splits, group=group)
    y = combine(returned, plan, weights, x)
    if layer.shared is not None:
        y = y + layer.shared(x)
    return y
