"""The checks of the world-size-1 NCCL probe, run inside its one torchrun rank
(benchmarks/gpu_validate_nccl_probe.py starts it): NCCL init, the lock-step and nccl-tests
timers, every collective's numerics, EP with ep = 1, tp = 1 all_reduce hooks captured in a CUDA
graph, NCCL kernels in the Kineto trace. On a CPU (the dry run) the same code runs on gloo where
it can; what needs CUDA is reported as skipped with what it would run.
"""

from __future__ import annotations

import gzip
import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.gpu_validate_probe_io import check

COLLECTIVE_BYTES = 1 << 20  # the timers' all_reduce message
NUMERICS_BYTES = 4096


def init(cuda: bool) -> tuple[dict[str, Any], Any]:
    """init_process_group (nccl on a GPU, gloo otherwise) and a gloo control group."""
    import torch
    import torch.distributed as dist

    t0 = time.perf_counter()
    backend = "nccl" if cuda else "gloo"
    if cuda:
        torch.cuda.set_device(0)
    dist.init_process_group(backend)
    control = dist.new_group(backend="gloo") if cuda else None
    t = torch.ones(8, device="cuda" if cuda else "cpu")
    dist.all_reduce(t)  # NCCL makes its communicator on the first collective
    if cuda:
        torch.cuda.synchronize()
    nccl = ".".join(map(str, torch.cuda.nccl.version())) if cuda else None
    value = f"{backend}, world size {dist.get_world_size()}, first all_reduce after {time.perf_counter() - t0:.2f} s"
    ok = dist.get_world_size() == 1 and float(t[0]) == 1.0
    return check("init", "ok" if ok else "fail", value + (f", NCCL {nccl}" if nccl else ""), backend=backend,
                 nccl=nccl), control


def timers(device: str, control: Any) -> dict[str, Any]:
    import torch
    import torch.distributed as dist

    from perfkit.core.timing import TimingConfig
    from perfkit.pipeline.ranks.nccl_timer import time_back_to_back
    from perfkit.pipeline.ranks.timer import time_lockstep

    t = torch.ones(COLLECTIVE_BYTES // 4, device=device)
    config = TimingConfig(warmup_s=0.02, budget_s=0.2, min_reps=10, max_reps=200, target_rel_ci=0.05)
    lock = time_lockstep(lambda: dist.all_reduce(t), device, config, control).merged
    b2b = time_back_to_back(lambda: dist.all_reduce(t), device, config, control).merged
    good = all(math.isfinite(m.median_s) and m.median_s > 0 for m in (lock, b2b))
    value = (f"all_reduce {COLLECTIVE_BYTES} B: lock step {lock.median_s * 1e6:.1f} us ({len(lock.samples_s)} samples), "
             f"nccl-tests {b2b.median_s * 1e6:.1f} us per call ({len(b2b.samples_s)} x {b2b.calls_per_sample})")
    return check("timers", "ok" if good else "fail", value, lockstep_median_s=lock.median_s,
                 nccl_tests_median_s=b2b.median_s, nccl_tests_max_rank_median_s=b2b.extra["max_over_ranks_median_s"])


def collectives_numerics(device: str) -> dict[str, Any]:
    from perfkit.core.timing import TimingConfig
    from perfkit.workloads.base import Point, RunContext
    from perfkit.workloads.collectives.cost import OPS
    from perfkit.workloads.collectives.runner import prepare
    from perfkit.workloads.collectives.spec import CollectivesSpec

    spec = CollectivesSpec(kind="collectives", ops=OPS, size_bytes=(NUMERICS_BYTES,), dtypes=("fp32", "bf16"))
    wrong, done = [], []
    for params in spec.sweep():
        prepared = prepare(Point(spec=spec, params=params, timing=TimingConfig()), RunContext(device=device, seed=0))
        assert prepared.check is not None
        numerics = prepared.check()
        done.append(f"{params['op']}/{params['dtype']}")
        if numerics is None or not numerics.ok:
            wrong.append(f"{params['op']}/{params['dtype']}")
    value = f"{len(done) - len(wrong)} of {len(done)} exact" + (f"; wrong: {', '.join(wrong)}" if wrong else "")
    return check("collectives_numerics", "fail" if wrong else "ok", value, checked=done, wrong=wrong)


def ep_one(device: str) -> dict[str, Any]:
    import torch

    from perfkit.workloads.moe.cost import MoEShape
    from perfkit.workloads.moe.ep import ep_forward
    from perfkit.workloads.moe.layer import build_layer, loop_reference

    shape = MoEShape(dim=64, expert_ffn_dim=128, experts=4, top_k=2, shared_experts=1, shared_ffn_dim=64)
    layer = build_layer(shape, "fp32", device, seed=0)
    x = torch.randn(32, shape.dim, generator=torch.Generator().manual_seed(1)).to(device)
    with torch.no_grad():
        weights, ids = layer.route(x)
        got = ep_forward(layer, x, rank=0, ep=1)
    ref = loop_reference(layer, x, weights, ids)
    err = float((got.double().cpu() - ref.cpu()).norm() / ref.norm())
    return check("ep1", "ok" if err < 1e-4 else "fail", f"ep_forward on 1 rank (3 all_to_all_single) vs the float64 "
                 f"loop: relative error {err:.2e}", rel_err=err)


def tp_one_graph(device: str) -> dict[str, Any]:
    """A tiny decoder with tp's all_reduce hooks (tp = 1) against the same model without them; on a
    GPU one decode step with the hooks is captured in a CUDA graph and replayed."""
    import torch

    from perfkit.workloads.decode.tp import add_reduce_hooks, all_reduce_sum
    from perfkit.workloads.models.build import build_model
    from perfkit.workloads.models.presets import PRESETS
    from perfkit.workloads.models.stepper import Stepper

    cfg = PRESETS["tiny"]
    calls = [0]

    def reduce(t: Any) -> Any:
        calls[0] += 1
        return all_reduce_sum(t)

    mode = "cuda_graph" if device.startswith("cuda") else "eager"
    logits = []
    for hooked in (False, True):
        model = build_model(cfg, "fp32", device, seed=0)
        if hooked:
            model = add_reduce_hooks(model, reduce)
        model.setup_caches(1, 16)
        stepper = Stepper(model, 1, device, mode)
        stepper.set_tokens(torch.tensor([[3]], device=device))
        out = []
        for pos in range(4):
            stepper.set_pos(pos)
            out.append(stepper.run().float().cpu().clone())
        logits.append(torch.stack(out))
    same = bool(torch.allclose(logits[0], logits[1], rtol=1e-5, atol=1e-5))
    value = (f"{mode}: {calls[0]} all_reduce hook calls while building / capturing ({2 * cfg.n_layers} per step), "
             f"logits {'equal' if same else 'DIFFER'} to the model without hooks over 4 steps")
    status = "ok" if same and calls[0] >= 2 * cfg.n_layers else "fail"
    return check("tp1_graph" if mode == "cuda_graph" else "tp1_eager", status, value, hook_calls=calls[0], mode=mode)


def nccl_kernels_in_trace(device: str, work: Path) -> dict[str, Any]:
    import torch
    import torch.distributed as dist

    from perfkit.analyzers.categories import category_of
    from perfkit.profiler.trace_capture import capture_trace

    t = torch.ones(COLLECTIVE_BYTES // 4, device=device)
    u = torch.ones(COLLECTIVE_BYTES // 4, device=device)
    path = work / "nccl_probe_trace.json.gz"

    def step() -> None:  # SUM in place, and AVG (a scaling NCCL must do even on one rank)
        dist.all_reduce(t)
        if device.startswith("cuda"):
            dist.all_reduce(u, op=dist.ReduceOp.AVG)

    capture_trace(step, device, path, iters=3, record_shapes=False, label="nccl-probe")
    events = json.loads(gzip.decompress(path.read_bytes())).get("traceEvents", [])
    all_kernels = sorted({str(e.get("name")) for e in events if e.get("cat") == "kernel"})
    kernels = [k for k in all_kernels if category_of(k) == "communication"]  # the analyzers' own call
    ops = sorted({str(e.get("name")) for e in events if "allreduce" in str(e.get("name")).lower().replace("_", "")})
    if not device.startswith("cuda"):
        return check("nccl_trace", "skipped", f"dry run on gloo: no kernels; would look for ncclDevKernel_* in the "
                     f"Kineto trace (CPU ops seen: {', '.join(ops[:3]) or 'none'})", cpu_ops=ops)
    world = dist.get_world_size()
    if kernels:
        return check("nccl_trace", "ok", f"{len(kernels)} NCCL kernel names in the trace: {', '.join(kernels[:3])}",
                     kernels=kernels, all_kernels=all_kernels[:20], cpu_ops=ops)
    if world == 1 and ops:  # NCCL's one-rank path: an in-place SUM is a no-op, no kernel to see
        return check("nccl_trace", "ok", f"world size 1: no NCCL kernel (NCCL's one-rank path launches none for these); "
                     f"the collective ops are in the trace: {', '.join(ops[:3])}; kernels: {', '.join(all_kernels[:3]) or 'none'}",
                     kernels=kernels, all_kernels=all_kernels[:20], cpu_ops=ops)
    return check("nccl_trace", "fail", f"0 NCCL kernel names in the trace (world size {world}); CPU ops: "
                 f"{', '.join(ops[:3]) or 'none'}", kernels=kernels, all_kernels=all_kernels[:20], cpu_ops=ops)


def run_all(cuda: bool, work: Path) -> dict[str, Any]:
    """Every check in order; one that raises is a failed check with the error, the rest still run."""
    import torch.distributed as dist

    device = "cuda:0" if cuda else "cpu"
    first, control = init(cuda)
    checks = [first]
    steps: list[Callable[[], dict[str, Any]]] = [
        lambda: timers(device, control), lambda: collectives_numerics(device), lambda: ep_one(device),
        lambda: tp_one_graph(device), lambda: nccl_kernels_in_trace(device, work)]
    names = ["timers", "collectives_numerics", "ep1", "tp1_graph", "nccl_trace"]
    for name, step in zip(names, steps, strict=True):
        try:
            checks.append(step())
        except Exception as exc:  # a probe reports, it does not stop at the first problem
            checks.append(check(name, "fail", f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ''}"))
    if not cuda:
        checks.append(check("tp1_graph", "skipped", "dry run: would capture one decode step of the tiny model "
                            "with tp's all_reduce hooks (NCCL) in a CUDA graph and replay it"))
    dist.destroy_process_group()
    return {"backend": first["backend"], "device": device, "checks": checks}
