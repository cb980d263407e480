"""dcgm_energy against a real HTTP exporter on 127.0.0.1: counters advancing by known amounts give
exact joules over the chosen GPUs; without counters the power gauge is integrated; every hostile
exporter (a counter that goes back, NaN, implausible power, unreachable, too large, HTTP 500, no
DCGM fields, no GPU matching) ends "not measured" with its reason, never 0."""

from __future__ import annotations

import socket
import time

import pytest

from perfkit.workloads.serving.telemetry import dcgm_sampler
from perfkit.workloads.serving.telemetry.dcgm_sampler import dcgm_energy
from tests.helpers.dcgm_exporter import ENERGY, POWER, SAMPLE, exporter, with_values

BASE = SAMPLE.read_text()
E0 = {"0": 81234567890, "1": 79876543210, "2": 12000000000}  # mJ, as in the sample
STEP = {"0": 61728, "1": 38272, "2": 9_000_000_000}  # mJ; gpus 0+1: exactly 100 J


def counters(step: dict[str, float], then: dict[str, str] | None = None) -> object:
    def page(n: int) -> str:
        if n == 0:
            return BASE
        return with_values(BASE, ENERGY, then or {g: str(E0[g] + step[g]) for g in step})
    return page


def _measure(page: object, gpus: tuple[str, ...] = ("0", "1"), hold_s: float = 0.2,
             status: int = 200) -> tuple[object, int]:
    with exporter(page, status) as (url, count), dcgm_energy(url, gpus, interval_s=0.05) as d:  # type: ignore[arg-type]
        time.sleep(hold_s)
    return d.result, count[0]


def test_counters_give_exact_joules_over_the_chosen_gpus() -> None:
    e, scrapes = _measure(counters(STEP))
    assert e.energy_j == 100.0 and e.source == "dcgm-counter" and e.gpus == 2  # type: ignore[attr-defined]
    assert scrapes == 2  # before and after: no sampling while the counter exists


def test_without_counters_the_power_gauge_is_integrated() -> None:
    flat = with_values(with_values(BASE, ENERGY, None), POWER, {"0": "300", "1": "200"})
    e, scrapes = _measure(lambda n: flat, hold_s=0.3)
    assert e.source == "dcgm-power" and e.gpus == 2  # type: ignore[attr-defined]
    assert e.energy_j == pytest.approx(500.0 * e.window_s, rel=1e-9)  # type: ignore[attr-defined]
    assert 0.3 <= e.window_s < 1.5 and scrapes >= 4  # type: ignore[attr-defined]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(("page", "gpus", "status", "why"), [
    (counters({}, then={"0": "5", "1": "5"}), ("0", "1"), 200, "went back"),
    (counters({}, then={"0": "NaN", "1": "1"}), ("0", "1"), 200, "not a finite number"),
    (counters({"0": 10**9, "1": 10**9}), ("0", "1"), 200, "not believed"),
    (counters({"0": 0, "1": 0}), ("0", "1"), 200, "did not advance"),
    (lambda n: BASE, ("0", "1"), 500, "HTTPError"),
    (lambda n: "# nothing\nup 1\n", (), 200, f"no {POWER}"),
    (lambda n: BASE, ("5",), 200, "for GPUs 5"),
    (lambda n: with_values(BASE, ENERGY, None) if n < 2 else "oops", ("0", "1"), 200, f"no {POWER}"),
])
def test_hostile_exporters_are_not_measured_with_the_reason(page: object, gpus: tuple[str, ...], status: int,
                                                            why: str) -> None:
    e, _ = _measure(page, gpus, status=status)
    assert e.energy_j is None and why in e.reason, e  # type: ignore[attr-defined]


def test_an_unreachable_exporter_is_not_measured() -> None:
    with dcgm_energy(f"http://127.0.0.1:{_closed_port()}/metrics") as d:
        pass
    assert d.result is not None and d.result.energy_j is None and "unreachable" in d.result.reason


def test_a_body_over_the_limit_is_not_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dcgm_sampler, "MAX_BODY_BYTES", 1000)
    monkeypatch.setattr(dcgm_sampler.fetch, "__defaults__", (dcgm_sampler.TIMEOUT_S, 1000))
    e, _ = _measure(counters(STEP))
    assert e.energy_j is None and "over 1000 bytes" in e.reason  # type: ignore[attr-defined]
