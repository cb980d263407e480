"""Decode runner: build the model (seeded random weights), then time prefill / decode / generation.

Phases of a point (perfkit/pipeline/point_runner.py calls them in this order):
- build (prepare): forget what earlier points compiled (Dynamo caches and guards, the CUDA-graph
  trees of mode compile, whose memory pools outlive their point); refuse if weights + KV +
  activations cannot fit; build the model, the static
  KV cache of prompt_len + decode_steps tokens, the decode step of the mode (a CUDA graph is
  captured here); record which SDPA backends prefill and decode steps use.
- check: prefill + 2 cached decode steps through the mode's step vs a full recompute of the
  same tokens without the cache (logits, relative error).
- time: the shared timer times `timed`: one decode step at the last position (default), the
  prefill, or a whole generation.
- metrics: one warm generation, then `generate_reps` instrumented ones (per-token CUDA events /
  perf_counter) -> TTFT, TPOT, ITL, tokens/s, analytic bytes and flop per step, MBU, MFU.
"""

from __future__ import annotations

import functools
import importlib.util
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import torch
from torch import Tensor

from perfkit.core.cost import Cost
from perfkit.core.measurement import Measurement
from perfkit.core.memory_budget import ResidentMemory
from perfkit.core.record import Numerics
from perfkit.workloads.attention.sdpa_backends import backends_seen, recording
from perfkit.workloads.base import Point, Prepared, RunContext, Unsupported
from perfkit.workloads.decode.metrics import decode_metrics, tp_decode_metrics
from perfkit.workloads.decode.spec import DecodeSpec, tp_problem
from perfkit.workloads.decode.tp import (
    TPState,
    all_reduce_sum,
    build_shard,
    collective_metrics,
    gather_objects,
    local_config,
    shard_model,
)
from perfkit.workloads.dtypes import DTYPE_BYTES
from perfkit.workloads.models.build import build_model
from perfkit.workloads.models.config import ModelConfig
from perfkit.workloads.models.cost import (
    decode_step_cost,
    kv_token_bytes,
    memory_estimate,
    prefill_cost,
)
from perfkit.workloads.models.fit import check_fits, device_memory, refusal
from perfkit.workloads.models.fuse import fuse_projections, is_fused
from perfkit.workloads.models.generate import generate, prefill
from perfkit.workloads.models.model import KVCache, Transformer
from perfkit.workloads.models.moe_layer import MoEFeedForward
from perfkit.workloads.models.ranges import DECODE_STEP, PREFILL, layer_range, phase
from perfkit.workloads.models.reference import float32_logits
from perfkit.workloads.models.stepper import Stepper, compile_mode, mode_problem
from perfkit.workloads.numerics import compare

# Logits of the cached decode path vs a full recompute, relative Frobenius error. Low-precision
# runs differ by kernel choice and accumulation order over every layer.
DECODE_TOL = {"fp32": 1e-4, "bf16": 5e-2, "fp16": 1e-2}
UNIT_ROUNDOFF = {"bf16": 2.0**-8, "fp16": 2.0**-11}


def decode_tol(dtype: str, n_layers: int) -> float:
    """The check's tolerance for a model of `n_layers` against the float32 recompute: DECODE_TOL,
    or, for a deep low-precision model, 3 unit roundoffs times sqrt(2 x layers) (two rounded
    residual additions per layer, errors adding as a random walk), whichever is larger.
    Measured on an H200 (llama-3.1-8b bf16, 32 layers, 3,970 tokens, random weights): 0.065
    (CUDA graphs) and 0.056 (torch.compile) against float32; the bound is 0.094. A wrong cache
    position or mask gives errors of order 1."""
    base = DECODE_TOL[dtype]
    if dtype not in UNIT_ROUNDOFF:
        return base
    return max(base, 3 * UNIT_ROUNDOFF[dtype] * (2 * max(n_layers, 1)) ** 0.5)
CHECK_STEPS = 2


def support_problem(p: dict[str, Any], device: str, timer_graph: bool, num_splits: int | None = None) -> str | None:
    """Why this point cannot run on `device`, or None."""
    problem = mode_problem(p["mode"], device)
    if problem:
        return problem
    if timer_graph:
        return ("timing.cuda_graph would capture the timed call again; leave it off and use "
                "mode: cuda_graph")
    is_cuda = device.startswith("cuda")
    major, minor = torch.cuda.get_device_capability(torch.device(device)) if is_cuda else (0, 0)
    if is_cuda and p["dtype"] == "bf16" and major < 8:
        return f"bf16 needs compute capability >= 8.0; this GPU is {major}.{minor}"
    if p["decode_attention"] == "varlen":
        if not is_cuda:
            return f"decode_attention varlen is the CUDA flash-attention varlen kernel; use sdpa on {device}"
        if p["dtype"] not in ("bf16", "fp16") or major < 8:
            return "decode_attention varlen needs bf16 / fp16 on compute capability >= 8.0"
        if importlib.util.find_spec("torch.nn.attention.varlen") is None:
            return f"torch {torch.__version__} has no torch.nn.attention.varlen; use sdpa"
        from perfkit.workloads.models.model import varlen_parameters

        if p["batch"] > 1 and "seqused_k" not in varlen_parameters():
            return (f"torch {torch.__version__}'s varlen_attn has no seqused_k, needed for batch > 1; "
                    "use sdpa or batch: 1")
        if num_splits is not None and "num_splits" not in varlen_parameters():
            return f"torch {torch.__version__}'s varlen_attn has no num_splits; remove num_splits from the spec"
    return None


def fresh_compile_state() -> None:
    """Reset Dynamo and the CUDA-graph trees that torch.compile's "reduce-overhead" keeps, so one
    point's compiled graphs, guards and graph memory pools do not carry into the next."""
    torch._dynamo.reset()  # recent torch also resets the CUDA-graph trees here; older ones do not
    if torch.cuda.is_available():
        try:
            from torch._inductor.cudagraph_trees import reset_cudagraph_trees
        except ImportError:  # pragma: no cover - a torch without Inductor's graph trees
            return
        reset_cudagraph_trees()


def device_read_bandwidth(device: str) -> float | None:
    """The measured read-only roof (bytes/s) of `device`, or None (no calibration measured it)."""
    try:
        from perfkit.roofline.ceilings import read_bandwidth

        return read_bandwidth(device)[0]
    except Exception:  # a missing or damaged calibration must not fail the point
        return None


def device_ceiling(device: str, dtype: str) -> tuple[Any, str | None]:
    """(roofline Ceiling, None) or (None, why there is none)."""
    try:
        from perfkit.roofline.ceilings import for_device

        return for_device(device, dtype), None
    except Exception as exc:  # a missing calibration or device table must not fail the point
        return None, f"roofline ceilings unavailable: {type(exc).__name__}: {exc}"


@dataclass
class DecodePoint:
    cfg: ModelConfig
    model: Transformer
    stepper: Stepper
    prompt: Tensor  # [B, P]
    steps: int
    dtype: str
    device: str
    tp: TPState | None = field(default=None)  # tensor parallel: the shard's facts and reference

    @property
    def batch(self) -> int:
        return int(self.prompt.shape[0])

    @property
    def prompt_len(self) -> int:
        return int(self.prompt.shape[1])

    @property
    def cache_len(self) -> int:
        return self.prompt_len + self.steps

    @property
    def b(self) -> int:
        return DTYPE_BYTES[self.dtype][0]

    # --- timed callables --------------------------------------------------------------------
    def timed(self, what: str) -> tuple[Callable[[], Any], Cost]:
        if what == "prefill":
            def run_prefill() -> Tensor:
                with phase(PREFILL):
                    return prefill(self.model, self.prompt)

            return run_prefill, prefill_cost(self.cfg, self.batch, self.prompt_len, self.b).cost
        if what == "generate":
            total = prefill_cost(self.cfg, self.batch, self.prompt_len, self.b).cost
            for i in range(self.steps):
                total = total + decode_step_cost(self.cfg, [self.prompt_len + i + 1] * self.batch, self.b).cost
            return (lambda: generate(self.model, self.stepper, self.prompt, self.steps)), total
        last = self.cache_len - 1

        def step() -> Tensor:
            with phase(DECODE_STEP):
                self.stepper.set_pos(last)
                return self.stepper.run()

        return step, decode_step_cost(self.cfg, [self.cache_len] * self.batch, self.b).cost

    # --- numerics -----------------------------------------------------------------------------
    @torch.no_grad()
    def check(self) -> Numerics | None:
        if self.tp is not None:
            return self.tp_check()
        steps = min(CHECK_STEPS, self.steps)
        logits = prefill(self.model, self.prompt)
        self.stepper.set_tokens(logits.argmax(dim=-1, keepdim=True))
        fed: list[Tensor] = []
        for i in range(steps):
            fed.append(self.stepper.tokens.clone())
            self.stepper.set_pos(self.prompt_len + i)
            logits = self.stepper.run().clone()
        tokens = torch.cat([self.prompt, *fed], dim=1)
        if self.dtype == "fp32":
            reference, what = self.model(tokens), "full recompute"  # no cache
        else:  # a higher-precision reference, not the same rounding path twice
            try:
                reference, what = float32_logits(self.model, tokens), "float32 full recompute"
            except torch.cuda.OutOfMemoryError:  # a model that fills the device: its own precision
                torch.cuda.empty_cache()
                reference, what = self.model(tokens), "full recompute (float32 did not fit)"
        return compare(logits, reference, decode_tol(self.dtype, self.cfg.n_layers),
                       f"{what} of the {self.prompt_len + steps} tokens without the KV cache")

    @torch.no_grad()
    def tp_check(self) -> Numerics | None:
        """Every rank: greedy tokens and prefill logits of the split model vs the one-rank model's;
        then the timed generations (they run collectives, so on every rank, here), gathered.
        Without a reference (shard-only build) only the generations: no numerics."""
        tp = self.tp
        assert tp is not None
        got = generate(self.model, self.stepper, self.prompt, self.steps, keep_tokens=True)
        tp.tokens = got.tokens.tolist()
        if tp.ref_tokens is None or tp.ref_logits is None:  # shard-only build: no reference
            generate(self.model, self.stepper, self.prompt, self.steps)  # warm
            mine = [generate(self.model, self.stepper, self.prompt, self.steps).times_s for _ in range(tp.reps)]
            tp.generations = gather_objects(mine)
            return None
        match = bool(torch.equal(got.tokens, tp.ref_tokens))
        num = compare(prefill(self.model, self.prompt), tp.ref_logits, decode_tol(self.dtype, self.cfg.n_layers),
                      "the one-rank model's prefill logits and greedy tokens (same seed)")
        generate(self.model, self.stepper, self.prompt, self.steps)  # warm
        mine = [generate(self.model, self.stepper, self.prompt, self.steps).times_s for _ in range(tp.reps)]
        everyone = gather_objects((mine, match))
        tp.generations = [e[0] for e in everyone]
        tp.tokens_match = all(bool(e[1]) for e in everyone)
        return replace(num, ok=num.ok and match)

    # --- facts --------------------------------------------------------------------------------
    @torch.no_grad()
    def attention_backends(self) -> dict[str, str]:
        """Which SDPA backend prefill and a decode step dispatch to (one eager pass each)."""
        with recording() as mode:
            prefill(self.model, self.prompt)
        prefill_backend = backends_seen(mode)
        with recording() as mode:
            self.model(self.stepper.tokens, torch.tensor([self.cache_len - 1], device=self.device))
        return {"attention_prefill": prefill_backend, "attention_decode": backends_seen(mode)}

    @torch.no_grad()
    def routing(self) -> list[list[int]]:
        """Tokens per expert of every MoE layer on one eager decode step ([] for dense)."""
        counts: list[list[int]] = []
        hooks = [
            layer.feed_forward.register_forward_pre_hook(
                lambda mod, args: counts.append(mod.tokens_per_expert(args[0])))
            for layer in self.model.layers
            if isinstance(layer.feed_forward, MoEFeedForward)
        ]
        try:
            self.model(self.stepper.tokens, torch.tensor([self.cache_len - 1], device=self.device))
        finally:
            for h in hooks:
                h.remove()
        return counts

    # --- metrics ------------------------------------------------------------------------------
    @torch.no_grad()
    def metrics(self, measurement: Measurement, timed: str, timed_cost: Cost, reps: int) -> dict[str, Any]:
        if self.tp is not None:
            return self.tp_metrics(measurement, timed, timed_cost)
        generate(self.model, self.stepper, self.prompt, self.steps)  # warm (prefill path, allocator)
        generations = [generate(self.model, self.stepper, self.prompt, self.steps).times_s for _ in range(reps)]
        touched: float | None = None
        extra: dict[str, Any] = {}
        if self.cfg.is_moe:
            per_layer = self.routing()
            touched = statistics.fmean(sum(1 for c in layer if c) for layer in per_layer)
            extra["moe"] = {"experts_touched_mean": touched, "tokens_per_expert_by_layer": per_layer,
                            "decode_impl": self._moe_impl()}
        mean_context = self.prompt_len + (self.steps + 1) / 2
        step = decode_step_cost(self.cfg, [mean_context] * self.batch, self.b, experts_touched=touched)  # type: ignore[list-item]
        ceiling, problem = device_ceiling(self.device, self.dtype)
        out = decode_metrics(generations, self.batch, step, (timed_cost.flop, timed_cost.bytes),
                             measurement.median_s if measurement.samples_s else None, ceiling, problem,
                             device_read_bandwidth(self.device))
        out.update(extra)
        out.update(timed=timed, cache_len=self.cache_len, mean_context=mean_context,
                   mode=self.stepper.mode, generations=[list(g) for g in generations])
        if self.stepper.mode == "compile":
            out["compile_mode"] = compile_mode(self.device)
        return out

    def tp_metrics(self, measurement: Measurement, timed: str, timed_cost: Cost) -> dict[str, Any]:
        """Rank 0 only, no collectives: from the generations tp_check gathered."""
        tp = self.tp
        assert tp is not None and tp.generations, "tp_check runs before the metrics"
        mean_context = self.prompt_len + (self.steps + 1) / 2
        local = decode_step_cost(self.cfg, [mean_context] * self.batch, self.b)  # type: ignore[list-item]
        ceiling, problem = device_ceiling(self.device, self.dtype)
        out = tp_decode_metrics(tp.generations, self.batch, local, (timed_cost.flop, timed_cost.bytes),
                                measurement.median_s if measurement.samples_s else None, ceiling, problem)
        if tp.no_reference is None:
            out["tokens_match"] = tp.tokens_match
        else:
            out["numerics_skipped"] = tp.no_reference
        out.update(greedy_tokens=tp.tokens, timed=timed, cache_len=self.cache_len, mean_context=mean_context,
                   mode=self.stepper.mode, generations=[[list(g) for g in gens] for gens in tp.generations])
        return out

    def resident(self) -> ResidentMemory:
        """The measured bytes of the weights and the KV cache, beside the analytic KV estimate."""
        weights = {p.untyped_storage().data_ptr(): p.untyped_storage().nbytes() for p in self.model.parameters()}
        caches = [m for m in self.model.modules() if isinstance(m, KVCache)]
        kv = sum(t.untyped_storage().nbytes() for c in caches for t in (c.k, c.v))
        estimate = memory_estimate(self.cfg, self.batch, self.cache_len, self.prompt_len, self.b)
        return ResidentMemory(weights_bytes=sum(weights.values()), kv_cache_bytes=kv,
                              kv_cache_estimate_bytes=int(estimate.kv_cache_bytes),
                              kv_bytes_per_token=int(kv_token_bytes(self.cfg, self.b)),
                              tokens_per_sequence=self.cache_len, batch=self.batch)

    def _moe_impl(self) -> str:
        for layer in self.model.layers:
            if isinstance(layer.feed_forward, MoEFeedForward):
                return layer.feed_forward.choose(self.batch, static=True)
        return ""


def prepare(point: Point, ctx: RunContext) -> Prepared:
    spec = point.spec
    assert isinstance(spec, DecodeSpec) and spec.model is not None
    p = point.params
    problem = support_problem(p, ctx.device, point.timing.cuda_graph, spec.num_splits)
    if problem:
        raise Unsupported(problem)
    fresh_compile_state()
    cfg = spec.model.config()
    tp = tp_world(spec.tp, cfg)
    dtype, batch, plen, steps = p["dtype"], p["batch"], p["prompt_len"], p["decode_steps"]
    b = DTYPE_BYTES[dtype][0]
    label = f"{cfg.name} {dtype}"
    full_estimate = memory_estimate(cfg, batch, plen + steps, plen, b)
    reference = tp is None or reference_fits(spec.tp_reference, label, full_estimate, ctx.device)
    if reference:
        check_fits(label, full_estimate, ctx.device)
    else:
        assert tp is not None
        check_fits(f"{label} (tp {tp[1]} shard)",
                   memory_estimate(local_config(cfg, tp[1]), batch, plen + steps, plen, b), ctx.device)
    gen = torch.Generator(device=ctx.device).manual_seed(ctx.seed + 1)
    prompt = torch.randint(cfg.vocab_size, (batch, plen), generator=gen, device=ctx.device)
    state = None
    if tp is None:
        model = build_model(cfg, dtype, ctx.device, ctx.seed)
    elif reference:  # the one-rank reference on every rank, then keep this rank's shard
        model = build_model(cfg, dtype, ctx.device, ctx.seed)
        state = reference_run(model, prompt, steps, ctx.device, spec.generate_reps)
        model = shard_model(model, tp[1], tp[0], all_reduce_sum)
    else:  # only this rank's shard, the same weights; no reference to check against
        model = build_shard(cfg, dtype, ctx.device, ctx.seed, tp[1], tp[0], all_reduce_sum)
        state = TPState(ref_tokens=None, ref_logits=None, reps=spec.generate_reps, no_reference=NO_REFERENCE[spec.tp_reference])
    if tp is not None:
        cfg = local_config(cfg, tp[1])
    if spec.fuse:
        fuse_projections(model)
    model.setup_caches(batch, plen + steps)
    splits = spec.num_splits if p["decode_attention"] == "varlen" else None
    model.set_decode_attention(p["decode_attention"], splits)
    dp = DecodePoint(cfg, model, Stepper(model, batch, ctx.device, p["mode"]), prompt, steps, dtype, ctx.device,
                     state)
    facts: dict[str, Any] = {"cache_len": dp.cache_len, "fused_projections": is_fused(model),
                             **dp.attention_backends()}
    if splits is not None:
        facts["num_splits"] = splits
    if tp is not None:
        facts["tp_reference"] = "full" if reference else "none"
    if cfg.is_moe:
        facts["moe_decode_impl"] = dp._moe_impl()
    if spec.layer_ranges and p["mode"] == "eager":
        model.layer_range = layer_range
    fn, cost = dp.timed(p["timed"])
    if tp is not None:  # the work of all ranks together
        cost = Cost(cost.flop * tp[1], cost.bytes * tp[1])
    return Prepared(
        fn=fn,
        cost=cost,
        check=dp.check,
        metrics=lambda m: dp.metrics(m, p["timed"], cost, spec.generate_reps),
        context=torch.no_grad,
        params_extra=facts,
        trace_metrics=functools.partial(collective_metrics, label=point.key) if tp is not None else None,
        resident=dp.resident,
    )


NO_REFERENCE = {  # why a shard-only tp point has no reference check, by tp_reference
    "auto": ("the full model does not fit one device; the reference check runs where it fits, "
             "e.g. examples/tp-decode-cpu.yaml"),
    "none": ("tp_reference: none; the reference check runs with tp_reference full or auto where the "
             "full model fits, e.g. examples/tp-decode-cpu.yaml"),
}


def reference_fits(choice: str, label: str, estimate: Any, device: str) -> bool:
    """Whether a tp point builds the full model as its reference: `full` always (the memory check
    refuses it if it does not fit), `none` never, `auto` when it fits one device."""
    if choice != "auto":
        return choice == "full"
    free, total, where = device_memory(device)
    return refusal(label, estimate, free, total, where) is None


def tp_world(tp: int, cfg: ModelConfig) -> tuple[int, int] | None:
    """(rank, world size) of a `tp: N > 1` point, None for tp 1; refuses a tp that does not fit."""
    if tp == 1:
        return None
    import torch.distributed as dist

    world = dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1
    if world != tp:
        raise Unsupported(f"tp {tp} needs {tp} ranks, this run has {world}; set launch: {{nproc: {tp}}}")
    problem = tp_problem(cfg, tp)
    if problem:
        raise Unsupported(problem)
    return dist.get_rank(), tp


@torch.no_grad()
def reference_run(model: Transformer, prompt: Tensor, steps: int, device: str, reps: int) -> TPState:
    """Greedy tokens and prefill logits of the whole model in this process (no collectives)."""
    model.setup_caches(prompt.shape[0], prompt.shape[1] + steps)
    got = generate(model, Stepper(model, prompt.shape[0], device, "eager"), prompt, steps, keep_tokens=True)
    state = TPState(ref_tokens=got.tokens, ref_logits=prefill(model, prompt), reps=reps)
    for layer in model.layers:  # free the reference's KV cache
        layer.attention.kv_cache = None  # type: ignore[union-attr]
    return state
