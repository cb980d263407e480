"""`serve-bench --gpu-metrics URL` against a real `perfkit serve --synthetic` stage and a real DCGM
exporter on 127.0.0.1 whose counters advance by known amounts: joules and J per output / total token
exact, the source named, the energy's cost at --price-per-kwh exact; a counter that goes back
leaves energy "not measured" with its reason while the stage is still measured."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from perfkit.cli import main
from tests.helpers.dcgm_exporter import ENERGY, SAMPLE, exporter, with_values
from tests.helpers.serving_server import running_server

BASE = SAMPLE.read_text()
E0 = {"0": 81234567890, "1": 79876543210, "2": 12000000000}
STEP = {"0": 61728, "1": 38272, "2": 9_000_000_000}  # mJ; GPUs 0 and 1: exactly 100 J
USD_PER_KWH = 0.12


@pytest.fixture(scope="module")
def synthetic() -> Iterator[str]:
    with running_server("--synthetic", "--ttft-ms", "10", "--itl-ms", "5") as url:
        yield url


def _bench(url: str, tmp_path: object, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, object]:
    code = main(["serve-bench", url, "--out", f"{tmp_path}/runs", "--no-store", "--warmup", "0", "--requests", "12",
                 "--concurrency", "2", "--input-len", "8", "--output-len", "16", "--format", "json", *extra])
    out = capsys.readouterr().out
    assert code == 0, out
    metrics: dict[str, object] = json.loads(out)["stages"][0]["metrics"]
    return metrics


@pytest.mark.slow
def test_counters_give_exact_joules_per_token_and_cost(synthetic: str, tmp_path: object,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    def page(n: int) -> str:
        return BASE if n == 0 else with_values(BASE, ENERGY, {g: str(E0[g] + STEP[g]) for g in STEP})

    with exporter(page) as (url, _):
        m = _bench(synthetic, tmp_path, capsys, "--gpu-metrics", url, "--gpu-metrics-gpus", "0,1",
                   "--price-per-kwh", str(USD_PER_KWH))
    server = m["server_metrics"]
    assert isinstance(server, dict)
    out_tok = float(m["output_tok_per_s"]) * float(m["duration_s"])  # type: ignore[arg-type]
    total_tok = out_tok + float(m["input_tok_per_s"]) * float(m["duration_s"])  # type: ignore[arg-type]
    assert out_tok == pytest.approx(12 * 16)
    assert m["energy_source"] == "dcgm-counter" and "energy_not_measured" not in m
    assert server["server_gpu_energy_j"] == 100.0
    assert server["server_gpu_energy_per_output_tok_j"] == pytest.approx(100.0 / out_tok, rel=1e-12)
    assert server["server_gpu_energy_per_total_tok_j"] == pytest.approx(100.0 / total_tok, rel=1e-12)
    assert m["usd_energy_per_1m_output_tok"] == pytest.approx(100.0 / out_tok * 1e6 / 3.6e6 * USD_PER_KWH, rel=1e-12)


@pytest.mark.slow
def test_a_counter_that_goes_back_is_not_measured_and_the_stage_still_is(synthetic: str, tmp_path: object,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    with exporter(lambda n: BASE if n == 0 else with_values(BASE, ENERGY, {"0": "5", "1": "5"})) as (url, _):
        m = _bench(synthetic, tmp_path, capsys, "--gpu-metrics", url, "--price-per-kwh", str(USD_PER_KWH))
    assert m["energy_source"] == "dcgm-counter" and "went back" in str(m["energy_not_measured"])
    assert "server_gpu_energy_j" not in (m.get("server_metrics") or {})
    assert "usd_energy_per_1m_output_tok" not in m
    assert float(m["output_tok_per_s"]) > 0  # type: ignore[arg-type]
    assert any("GPU energy not measured" in n for n in m["serving_notes"])  # type: ignore[attr-defined]


@pytest.mark.slow
def test_a_kwh_price_without_an_energy_source_says_not_measured(synthetic: str, tmp_path: object,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    m = _bench(synthetic, tmp_path, capsys, "--price-per-kwh", "0.1")
    if m["energy_source"] == "nvml":
        pytest.skip("this host's GPUs were measured by NVML")
    assert m["energy_source"] == "none" and "no energy source" in str(m["energy_not_measured"])
    assert "usd_energy_per_1m_output_tok" not in m
