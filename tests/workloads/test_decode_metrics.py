"""Decode metrics from known token timestamps; MBU / MFU against given ceilings; memory refusal."""

from __future__ import annotations

import resource

import pytest

from perfkit.roofline.ceilings import Ceiling
from perfkit.workloads.decode.metrics import DEFINITIONS, decode_metrics, distribution, latencies
from perfkit.workloads.models.cost import MemoryEstimate, decode_step_cost, memory_estimate
from perfkit.workloads.models.fit import WouldNotFit, check_fits, parse_meminfo, refusal
from perfkit.workloads.models.presets import PRESETS


def test_latencies_follow_the_vllm_definitions() -> None:
    # two generations of 5 output tokens: TTFT 0.1 / 0.2, then gaps
    gens = [[0.1, 0.2, 0.3, 0.4, 0.5], [0.2, 0.25, 0.3, 0.35, 0.6]]
    lat = latencies(gens)
    assert lat["ttft_s"] == pytest.approx(0.15)  # median of 0.1, 0.2
    assert lat["tpot_s"] == pytest.approx((0.1 + 0.1) / 2)  # (0.5-0.1)/4 = 0.1, (0.6-0.2)/4 = 0.1
    assert lat["e2e_s"] == pytest.approx(0.55)
    itl = lat["itl_s"]
    assert itl["n"] == 8 and itl["max"] == pytest.approx(0.25) and itl["min"] == pytest.approx(0.05)
    assert itl["mean"] == pytest.approx((0.4 + 0.4) / 8)
    assert distribution([3.0, 1.0, 2.0, 4.0])["p50"] == 2.0  # nearest rank
    assert distribution(list(range(1, 101)))["p99"] == 99
    assert distribution([]) == {}


def test_mbu_and_mfu_against_a_ceiling() -> None:
    step = decode_step_cost(PRESETS["llama-3.1-8b"], [4096], b=2)
    tpot = 6.0e-3
    gens = [[0.05 + i * tpot for i in range(129)]]
    roof = Ceiling(peak_flop_per_s=989.5e12, bandwidth_bytes_per_s=3.0e12, source="measured (test)")
    m = decode_metrics(gens, 1, step, (step.flop, step.bytes), 5.5e-3, roof)
    moved = step.weight_bytes + step.kv_bytes
    assert m["tpot_s"] == pytest.approx(tpot)
    assert m["achieved_bytes_per_s"] == pytest.approx(moved / tpot)
    assert m["mbu"] == pytest.approx(moved / tpot / 3.0e12)
    assert 0.86 < m["mbu"] < 0.87  # 15.55 GB in 6 ms at 3 TB/s
    assert m["mfu"] == pytest.approx(step.flop / tpot / 989.5e12)
    assert m["step_mbu"] == pytest.approx(step.bytes / 5.5e-3 / 3.0e12)
    assert m["tokens_per_s"] == pytest.approx(129 / gens[0][-1])
    assert m["decode_tokens_per_s"] == pytest.approx(1 / tpot)
    assert m["ceiling"]["source"] == "measured (test)" and "null_reasons" not in m
    assert set(DEFINITIONS) <= set(m) | {"itl_s"} and m["definitions"]["mbu"].startswith("model bandwidth")


def test_null_utilization_says_why() -> None:
    step = decode_step_cost(PRESETS["tiny"], [10], b=4)
    none = Ceiling(None, None, "fp32 peak unknown (run `perfkit calibrate`); dram bandwidth unknown")
    m = decode_metrics([[0.1, 0.2]], 1, step, None, None, none)
    assert m["mbu"] is None and m["mfu"] is None and m["step_mbu"] is None
    assert m["null_reasons"][0].startswith("mbu is null: no memory-bandwidth ceiling")
    # each reason names its own missing roof, not the other one
    assert m["null_reasons"][0].endswith("(dram bandwidth unknown)") and "peak" not in m["null_reasons"][0]
    assert m["null_reasons"][1].endswith("(fp32 peak unknown (run `perfkit calibrate`))")
    m2 = decode_metrics([[0.1]], 1, step, None, None, None, "roofline ceilings unavailable: X")
    assert m2["tpot_s"] is None and m2["ceiling"]["source"] == "roofline ceilings unavailable: X"


def test_meminfo_and_refusal_message() -> None:
    text = "MemTotal:       24684092 kB\nMemFree:  100 kB\nMemAvailable:   23869848 kB\n"
    assert parse_meminfo(text) == (23869848 * 1024, 24684092 * 1024)
    assert parse_meminfo("nothing") == (None, None)
    est = memory_estimate(PRESETS["llama-3.1-70b"], 1, 4096, 4000, b=2)
    msg = refusal("llama-3.1-70b bf16", est, free=79.2e9, total=80e9, where="this GPU")
    assert msg is not None
    assert msg.startswith("llama-3.1-70b bf16 needs 143 GB (weights 141.1 GB + KV 1.34 GB")
    assert "this GPU has 80 GB (79 GB free)" in msg
    fits = MemoryEstimate(weights_bytes=16e9, kv_cache_bytes=1e9, activation_bytes=1e9)
    assert refusal("llama-3.1-8b bf16", fits, free=79e9, total=80e9, where="this GPU") is None
    assert refusal("x", fits, free=18.5e9, total=20e9, where="this GPU") is not None  # 5% headroom


def test_check_fits_refuses_before_allocating() -> None:
    huge = memory_estimate(PRESETS["llama-3.1-70b"], 64, 131072, 131072, b=4)  # tens of TB
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(WouldNotFit, match=r"this machine has \d+ GB"):
        check_fits("llama-3.1-70b fp32", huge, "cpu")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000  # < 100 MB (KiB units)
    check_fits("tiny fp32", memory_estimate(PRESETS["tiny"], 1, 64, 32, b=4), "cpu")
