"""Named SLOs from MLPerf Inference's LLM benchmarks: `--slo mlperf:llama2-70b-server`.

Each preset is the Server scenario's TTFT and TPOT limits of one MLPerf LLM benchmark, held at the
99th percentile (`*.Server.target_latency_percentile = 99`). Source of every number: the
inference repository's LoadGen configuration, mlcommons/inference `loadgen/mlperf.conf`
(`<model>.Server.ttft_latency` / `tpot_latency`, in milliseconds; the `-interactive` benchmarks
are the interactive presets), read at commit 001712e9daf80386e0dda43f97b8f36981d792c4. MLPerf
publishes no interactive limits for mixtral-8x7b, so it has a server preset only.
"""

from __future__ import annotations

from dataclasses import dataclass

PREFIX = "mlperf:"
SOURCE = ("mlcommons/inference loadgen/mlperf.conf (commit 001712e9daf8), "
          "https://github.com/mlcommons/inference/blob/master/loadgen/mlperf.conf")
QUANTILE = 0.99  # *.Server.target_latency_percentile = 99


@dataclass(frozen=True)
class SloPreset:
    name: str  # as --slo mlperf:NAME takes it
    ttft_s: float
    tpot_s: float
    conf_key: str  # the mlperf.conf model key the limits are read from

    @property
    def source(self) -> str:
        return f"{self.conf_key}.Server.ttft_latency / tpot_latency in {SOURCE}"


PRESETS: dict[str, SloPreset] = {p.name: p for p in (
    SloPreset("llama2-70b-server", 2.0, 0.200, "llama2-70b"),
    SloPreset("llama2-70b-interactive", 0.450, 0.040, "llama2-70b-interactive"),
    SloPreset("mixtral-8x7b-server", 2.0, 0.200, "mixtral-8x7b"),
    SloPreset("llama3.1-405b-server", 6.0, 0.175, "llama3_1-405b"),
    SloPreset("llama3.1-405b-interactive", 4.5, 0.080, "llama3_1-405b-interactive"),
    SloPreset("llama3.1-8b-server", 2.0, 0.100, "llama3_1-8b"),
    SloPreset("llama3.1-8b-interactive", 0.500, 0.030, "llama3_1-8b-interactive"),
    SloPreset("deepseek-r1-server", 2.0, 0.080, "deepseek-r1"),
    SloPreset("deepseek-r1-interactive", 1.5, 0.015, "deepseek-r1-interactive"),
)}


def preset_listing() -> list[str]:
    """One line per preset: `mlperf:NAME  TTFT p99 <= X s, TPOT p99 <= Y ms`."""
    return [f"{PREFIX}{p.name}  TTFT p99 <= {p.ttft_s:g} s, TPOT p99 <= {p.tpot_s * 1e3:g} ms ({p.conf_key})"
            for p in PRESETS.values()]


def preset_slo(text: str) -> dict[str, float] | None:
    """`mlperf:NAME` -> {ttft_s, tpot_s, quantile}; None when `text` names no preset (the caller
    says which exist: preset_listing)."""
    if not text.strip().startswith(PREFIX):
        return None
    preset = PRESETS.get(text.strip()[len(PREFIX):])
    if preset is None:
        return None
    return {"ttft_s": preset.ttft_s, "tpot_s": preset.tpot_s, "quantile": QUANTILE}
