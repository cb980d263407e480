"""Decode metrics from timed generations: TTFT, TPOT, ITL, tokens/s, bandwidth, MBU, MFU.

Pure functions (no torch). Every number is written with its definition beside it
(`definitions` in the metrics dict); the definitions follow vLLM (TPOT, ITL) and Databricks
(MBU), as in REFERENCE.md. All requests of a batch move in lockstep, so per-request and
per-batch latencies coincide.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from perfkit.workloads.models.cost import StepCost

DEFINITIONS: dict[str, str] = {
    "ttft_s": "time to first token: first output token ready (on the device) minus the start of "
    "prefill (prompt already on the device); median over the timed generations",
    "tpot_s": "time per output token (vLLM): (E2E - TTFT) / (output_tokens - 1) per generation; "
    "median over the timed generations",
    "itl_s": "inter-token latency (vLLM): every gap between consecutive output tokens, pooled over "
    "the timed generations (the batch moves in lockstep: one gap per decode step)",
    "e2e_s": "end-to-end latency: last output token minus the start of prefill; median",
    "output_tokens": "tokens generated per sequence: 1 from prefill + decode_steps",
    "tokens_per_s": "batch x output_tokens / E2E (whole generation, prefill included)",
    "decode_tokens_per_s": "batch / TPOT (decode phase only)",
    "weight_bytes_per_step": "analytic weights one decode step reads (experts touched only)",
    "kv_bytes_per_step": "analytic KV cache bytes one decode step reads and writes, at the mean "
    "context of the decode steps",
    "flop_per_step": "analytic flop of one decode step at the mean context (2 per multiply-add)",
    "achieved_bytes_per_s": "(weight_bytes_per_step + kv_bytes_per_step) / TPOT",
    "achieved_flop_per_s": "flop_per_step / TPOT",
    "mbu": "model bandwidth utilization (Databricks): achieved_bytes_per_s / peak memory bandwidth",
    "mfu": "model flop utilization: achieved_flop_per_s / peak flop/s of the dtype",
    "step_mbu": "MBU of the timed callable: its analytic bytes / the timer's median / peak bandwidth",
    "step_mfu": "MFU of the timed callable: its analytic flop / the timer's median / peak flop/s",
    "mbu_read": "achieved_bytes_per_s / the measured read-only bandwidth (perfkit calibrate's dram_read: "
    "a sum over a large buffer); decode mostly reads, and a read stream is faster than a copy, so this "
    "is the stricter MBU; null without a calibration that measured it",
    "step_mbu_read": "the timed callable's analytic bytes / the timer's median / the read-only bandwidth",
    "ceiling": "where the peaks come from (measured calibration preferred, datasheet otherwise)",
}


class CeilingLike(Protocol):
    peak_flop_per_s: float | None
    bandwidth_bytes_per_s: float | None
    source: str


def distribution(values: Sequence[float]) -> dict[str, float]:
    """p50 / p90 / p99 / mean / min / max (nearest-rank percentiles); {} when empty."""
    if not values:
        return {}
    ordered = sorted(values)

    def pct(q: float) -> float:
        rank = max(math.ceil(q / 100.0 * len(ordered)), 1)
        return float(ordered[rank - 1])

    return {
        "p50": pct(50), "p90": pct(90), "p99": pct(99),
        "mean": float(statistics.fmean(ordered)), "min": float(ordered[0]), "max": float(ordered[-1]),
        "n": float(len(ordered)),
    }


def latencies(generations: Sequence[Sequence[float]]) -> dict[str, Any]:
    """TTFT / TPOT / E2E / ITL from each generation's per-token times (seconds since start)."""
    ttft = [g[0] for g in generations if g]
    e2e = [g[-1] for g in generations if g]
    tpot = [(g[-1] - g[0]) / (len(g) - 1) for g in generations if len(g) > 1]
    itl = [b - a for g in generations for a, b in itertools.pairwise(g)]
    return {
        "ttft_s": statistics.median(ttft) if ttft else None,
        "tpot_s": statistics.median(tpot) if tpot else None,
        "e2e_s": statistics.median(e2e) if e2e else None,
        "itl_s": distribution(itl),
    }


def utilization(value_per_s: float | None, peak: float | None) -> float | None:
    if value_per_s is None or peak is None or peak <= 0:
        return None
    return value_per_s / peak


def decode_metrics(
    generations: Sequence[Sequence[float]],
    batch: int,
    step: StepCost,
    timed_cost: tuple[float, float] | None,
    timed_median_s: float | None,
    ceiling: CeilingLike | None,
    ceiling_problem: str | None = None,
    read_bandwidth_bytes_per_s: float | None = None,
) -> dict[str, Any]:
    """Everything the decode workload reports. `step` is the analytic decode step at the mean
    context; `timed_cost` (flop, bytes) the analytic cost of the timed callable;
    `read_bandwidth_bytes_per_s` the measured read-only roof (None: mbu_read is null)."""
    lat = latencies(generations)
    tpot, e2e = lat["tpot_s"], lat["e2e_s"]
    out_tokens = len(generations[0]) if generations else 0
    out: dict[str, Any] = {**lat, "output_tokens": out_tokens}
    out["tokens_per_s"] = batch * out_tokens / e2e if e2e else None
    out["decode_tokens_per_s"] = batch / tpot if tpot else None
    out["weight_bytes_per_step"] = step.weight_bytes
    out["kv_bytes_per_step"] = step.kv_bytes
    out["flop_per_step"] = step.flop
    moved = step.weight_bytes + step.kv_bytes
    out["achieved_bytes_per_s"] = moved / tpot if tpot else None
    out["achieved_flop_per_s"] = step.flop / tpot if tpot else None
    peak_bw = ceiling.bandwidth_bytes_per_s if ceiling else None
    peak_flop = ceiling.peak_flop_per_s if ceiling else None
    out["mbu"] = utilization(out["achieved_bytes_per_s"], peak_bw)
    out["mfu"] = utilization(out["achieved_flop_per_s"], peak_flop)
    if timed_cost is not None and timed_median_s:
        flop, nbytes = timed_cost
        out["step_mbu"] = utilization(nbytes / timed_median_s, peak_bw)
        out["step_mfu"] = utilization(flop / timed_median_s, peak_flop)
        out["step_mbu_read"] = utilization(nbytes / timed_median_s, read_bandwidth_bytes_per_s)
    else:
        out["step_mbu"] = out["step_mfu"] = out["step_mbu_read"] = None
    out["mbu_read"] = utilization(out["achieved_bytes_per_s"], read_bandwidth_bytes_per_s)
    out["ceiling"] = {
        "peak_flop_per_s": peak_flop,
        "bandwidth_bytes_per_s": peak_bw,
        "read_bandwidth_bytes_per_s": read_bandwidth_bytes_per_s,
        "source": ceiling.source if ceiling else (ceiling_problem or "no ceiling"),
    }
    reasons = []
    source = str(out["ceiling"]["source"])
    if peak_bw is None:
        reasons.append(f"mbu is null: no memory-bandwidth ceiling for this device ({_part(source, 'bandwidth')})")
    if peak_flop is None:
        reasons.append(f"mfu is null: no peak flop/s for this device and dtype ({_part(source, 'peak')})")
    if reasons:
        out["null_reasons"] = reasons
    out["definitions"] = dict(DEFINITIONS)
    return out


TP_DEFINITIONS: dict[str, str] = {
    "tp": "ranks the model is split over (tensor parallelism: heads and MLP columns / rows)",
    "rank<r>_ttft_s / _tpot_s / _e2e_s": "rank r's own TTFT / TPOT / E2E, from its own clock",
    "rank<r>_mbu / _mfu": "rank r's shard: its analytic bytes / flop per step over its TPOT, over one "
    "device's peak",
    "overall": "ttft_s, tpot_s, e2e_s, itl_s: per token the slowest rank's time (the ranks move in "
    "lock step); weight / kv bytes and flop per step: the sum over ranks (replicated embedding, "
    "norms and lm_head counted on every rank); mbu / mfu: over tp x one device's peak",
    "tokens_match": "the greedy tokens of the split model equal the one-rank model's (same seed, "
    "computed on every rank) on every rank",
}


@dataclass
class SeveralDevices:
    """The peaks of `n` devices together."""

    peak_flop_per_s: float | None
    bandwidth_bytes_per_s: float | None
    source: str


def _times(value: float | None, n: int) -> float | None:
    return None if value is None else value * n


def tp_decode_metrics(
    per_rank: Sequence[Sequence[Sequence[float]]],
    batch: int,
    local_step: StepCost,
    timed_cost: tuple[float, float] | None,
    timed_median_s: float | None,
    ceiling: CeilingLike | None,
    ceiling_problem: str | None = None,
) -> dict[str, Any]:
    """Decode metrics of a tensor-parallel point: per rank (`rank<r>_...`) and overall.
    `per_rank[r]` are rank r's timed generations; `local_step` one rank's analytic step."""
    n = len(per_rank)
    out: dict[str, Any] = {"tp": n}
    for r, gens in enumerate(per_rank):
        mine = decode_metrics(gens, batch, local_step, None, None, ceiling, ceiling_problem)
        for key in ("ttft_s", "tpot_s", "e2e_s", "mbu", "mfu"):
            out[f"rank{r}_{key}"] = mine[key]
    slowest = [[max(ts) for ts in zip(*(rank[g] for rank in per_rank), strict=True)]
               for g in range(len(per_rank[0]))]
    total = replace(local_step, weight_bytes=local_step.weight_bytes * n, kv_read_bytes=local_step.kv_read_bytes * n,
                    kv_write_bytes=local_step.kv_write_bytes * n, other_bytes=local_step.other_bytes * n,
                    flop=local_step.flop * n)
    together = None if ceiling is None else SeveralDevices(
        _times(ceiling.peak_flop_per_s, n), _times(ceiling.bandwidth_bytes_per_s, n), f"{n} x {ceiling.source}")
    out.update(decode_metrics(slowest, batch, total, timed_cost, timed_median_s, together, ceiling_problem))
    out["definitions"].update(TP_DEFINITIONS)
    return out


def _part(source: str, word: str) -> str:
    """The parts of a ceiling's source ('fp32 peak unknown (...); dram bandwidth unknown (...)')
    about `word`, or the whole source when none is."""
    parts = [p for p in source.split("; ") if word in p]
    return "; ".join(parts) or source
