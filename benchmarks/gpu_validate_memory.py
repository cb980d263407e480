"""GPU validation of the memory pass and the inference memory budget (docs/memory-budget.md).

Run:  PYTHONPATH=. python -m benchmarks.gpu_validate_memory --out DIR            (a CUDA GPU)
      PYTHONPATH=. python -m benchmarks.gpu_validate_memory --out DIR --dry-run  (any machine)

A small Llama-shaped decode model (bf16, dim 1024, 8 layers, batch 4, a 576-token cache) is built
through the decode workload, its decode step captured as a CUDA graph (mode cuda_graph), then the
point's memory pass runs exactly as `profile: {memory: true}` runs it (a real
`torch.cuda.memory._record_memory_history` during the graph replays, the snapshot written to DIR).
Checks, each in DIR/report.json with its numbers:
- graph_pools_visible: the snapshot has CUDA-graph private-pool segments (bytes > 0);
- segments_vs_memory_stats: the snapshot's segment bytes equal torch.cuda.memory_stats'
  reserved_bytes.all.current and its active_allocated blocks allocated_bytes.all.current;
- budget_vs_nvml: the budget's terms add up to NVML's used memory, read again after the pass,
  within 2%;
- non_torch_vs_context: the budget's non-PyTorch bytes beside NVML used - torch reserved measured
  before the model was built (the CUDA context and cuBLAS), reported, not judged.
--dry-run: the tiny model on the CPU through the same code (profiler memory events); the GPU
checks are reported as skipped with the reason. Exit 1 when a check failed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

BUDGET_TOLERANCE = 0.02
GPU_SPEC = """\
name: gpu-validate-memory
device: cuda
model: {preset: tiny, dtype: bf16, dim: 1024, n_layers: 8, n_heads: 16, n_kv_heads: 4, head_dim: 64,
        ffn_dim: 2816, vocab_size: 32000}
workloads:
  - kind: decode
    batch: [4]
    prompt_len: [512]
    decode_steps: [64]
    mode: [cuda_graph]
"""
CPU_SPEC = """\
name: gpu-validate-memory-dry-run
device: cpu
model: {preset: tiny, dtype: fp32}
workloads:
  - kind: decode
    batch: [2]
    prompt_len: [16]
    decode_steps: [4]
"""


def _nvml_used(index: int) -> tuple[int, int, str]:
    from perfkit.pipeline.memory_pass import device_used

    return device_used(index)


def _check(name: str, ok: bool | None, **numbers: Any) -> dict[str, Any]:
    status = "skipped" if ok is None else "ok" if ok else "fail"
    return {"name": name, "status": status, **numbers}


def _segments_vs_stats(snapshot: Path, index: int) -> dict[str, Any]:
    import torch

    from perfkit.analyzers.loaders.memory.snapshot import load_snapshot

    snap = load_snapshot(snapshot)
    mine = [s for s in snap.segments if s.device == f"cuda:{index}"]
    stats = torch.cuda.memory_stats(index)
    seg_reserved = sum(s.total_bytes for s in mine)
    seg_allocated = sum(s.allocated_bytes for s in mine)
    torch_reserved = int(stats["reserved_bytes.all.current"])
    torch_allocated = int(stats["allocated_bytes.all.current"])
    return _check("segments_vs_memory_stats", seg_reserved == torch_reserved and seg_allocated == torch_allocated,
                  segment_bytes=seg_reserved, torch_reserved_bytes=torch_reserved,
                  segment_allocated_bytes=seg_allocated, torch_allocated_bytes=torch_allocated)


def validate(out: Path, dry_run: bool) -> dict[str, Any]:
    import torch

    from perfkit.core.codec import to_builtins
    from perfkit.pipeline.memory_pass import point_memory
    from perfkit.pipeline.spec import load_spec
    from perfkit.reports.inference_budget import budget_text
    from perfkit.workloads.base import RunContext
    from perfkit.workloads.registry import runner_for

    torch.set_num_threads(1)
    device = "cpu" if dry_run else "cuda"
    spec_path = out / "spec.yaml"
    spec_path.write_text(CPU_SPEC if dry_run else GPU_SPEC)
    point = load_spec(spec_path).points()[0]
    context: dict[str, Any] = {}
    if not dry_run:
        index = torch.cuda.current_device()
        a = torch.randn(256, 256, device=device)
        (a @ a).sum().item()  # the CUDA context and cuBLAS's workspace, before the model
        used, _, how = _nvml_used(index)
        context = {"used_bytes": used, "reserved_bytes": torch.cuda.memory_reserved(index), "how": how}
    prepared = runner_for(point.spec)(point, RunContext(device=device, seed=0))
    with prepared.context():
        for _ in range(3):  # warm, as the timing would have
            prepared.fn()
        metrics, budget = point_memory(prepared.fn, prepared.resident, device, out, 0, point.key, 3, 0.9)
    assert budget is not None, metrics
    checks = []
    if dry_run:
        reason = "dry run: needs a CUDA GPU"
        checks = [_check(n, None, reason=reason) for n in
                  ("graph_pools_visible", "segments_vs_memory_stats", "budget_vs_nvml", "non_torch_vs_context")]
    else:
        index = torch.cuda.current_device()
        snapshot = out / metrics["memory_artifact"]
        pools = budget.value("graph_pool_bytes") or 0
        checks.append(_check("graph_pools_visible", pools > 0, graph_pool_bytes=pools))
        checks.append(_segments_vs_stats(snapshot, index))
        used, _, how = _nvml_used(index)
        gap = abs(budget.accounted_bytes - used) / used
        checks.append(_check("budget_vs_nvml", gap <= BUDGET_TOLERANCE, budget_bytes=budget.accounted_bytes,
                             nvml_used_bytes=used, relative_gap=gap, how=how))
        checks.append(_check("non_torch_vs_context", True, budget_non_torch_bytes=budget.value("non_torch_bytes"),
                             context_non_torch_bytes=context["used_bytes"] - context["reserved_bytes"]))
    text = budget_text(budget)
    print(text)
    return {"dry_run": dry_run, "device": torch.cuda.get_device_name() if not dry_run else "cpu",
            "point": point.key, "metrics": {k: v for k, v in metrics.items() if k != "memory_samples"},
            "budget": to_builtins(budget), "budget_text": text, "checks": checks}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="folder for report.json and the snapshot")
    parser.add_argument("--dry-run", action="store_true", help="the tiny model on the CPU; GPU checks skipped")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.dry_run:
        import torch

        if not torch.cuda.is_available():
            print("gpu_validate_memory: no CUDA GPU here; run with --dry-run", file=sys.stderr)
            return 2
    report = validate(args.out, args.dry_run)
    (args.out / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    for c in report["checks"]:
        print(f"{c['status']:8} {c['name']}: " + ", ".join(f"{k}={v}" for k, v in c.items() if k not in ("name", "status")))
    return 1 if any(c["status"] == "fail" for c in report["checks"]) else 0


if __name__ == "__main__":
    sys.exit(main())
