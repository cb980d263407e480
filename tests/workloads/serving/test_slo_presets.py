"""Named MLPerf SLOs (workloads/serving/slo_presets.py): every preset parses through --slo and in a
spec to the numbers of mlcommons/inference loadgen/mlperf.conf; an unknown name lists the presets."""

from __future__ import annotations

import pytest

from perfkit.core.errors import SpecError
from perfkit.workloads.serving.slo_presets import PRESETS, preset_listing
from perfkit.workloads.serving.spec import SloSpec, slo_seconds

# (ttft ms, tpot ms) as loadgen/mlperf.conf writes them: <model>.Server.ttft_latency / tpot_latency
MLPERF_CONF_MS = {
    "llama2-70b-server": (2000, 200), "llama2-70b-interactive": (450, 40), "mixtral-8x7b-server": (2000, 200),
    "llama3.1-405b-server": (6000, 175), "llama3.1-405b-interactive": (4500, 80),
    "llama3.1-8b-server": (2000, 100), "llama3.1-8b-interactive": (500, 30),
    "deepseek-r1-server": (2000, 80), "deepseek-r1-interactive": (1500, 15),
}


@pytest.mark.parametrize("name", sorted(MLPERF_CONF_MS))
def test_each_preset_parses_to_its_mlperf_numbers(name: str) -> None:
    ttft_ms, tpot_ms = MLPERF_CONF_MS[name]
    parsed = slo_seconds(f"mlperf:{name}", "--slo")
    assert parsed == {"ttft_s": pytest.approx(ttft_ms / 1e3), "tpot_s": pytest.approx(tpot_ms / 1e3),
                      "quantile": 0.99}
    spec = SloSpec.model_validate(f"mlperf:{name}")  # a spec's `slo: mlperf:NAME`
    assert (spec.ttft_s, spec.tpot_s, spec.quantile) == (parsed["ttft_s"], parsed["tpot_s"], 0.99)
    assert "loadgen/mlperf.conf" in PRESETS[name].source


def test_every_preset_is_tested_and_listed() -> None:
    assert set(PRESETS) == set(MLPERF_CONF_MS)
    listing = preset_listing()
    assert len(listing) == len(PRESETS) and listing[0].startswith("mlperf:llama2-70b-server  TTFT p99 <= 2 s")


def test_an_unknown_preset_names_the_known_ones() -> None:
    with pytest.raises(SpecError, match="no SLO preset 'mlperf:llama9'; use one of: mlperf:llama2-70b-server"):
        slo_seconds("mlperf:llama9", "--slo")
    with pytest.raises(ValueError, match="no SLO preset"):
        SloSpec.model_validate("mlperf:nope")
