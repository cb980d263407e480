"""USD per million tokens from a GPU-hour price, and the prices file with located errors."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from perfkit.core.errors import EXIT_BAD_INPUT, PerfkitError
from perfkit.workloads.serving.measurements.cost import Price, load_prices, usd_per_1m_tokens

H100 = Price(2.99, 8, "https://example.com/h100")


def test_usd_per_million_tokens_equals_the_hand_computed_value() -> None:
    # $2.99 / GPU-h x 8 GPUs = $23.92 / h = $0.0066444 / s; at 1,000 tok/s: $6.6444 per 1M
    assert usd_per_1m_tokens(H100, 1000.0) == pytest.approx(6.644444444444444, rel=1e-12)
    assert usd_per_1m_tokens(Price(2.0, 1, "x"), 500.0) == pytest.approx(2.0 / 3600 / 500 * 1e6)


@pytest.mark.parametrize("rate", [None, 0.0, -1.0, math.inf, math.nan])
def test_a_rate_that_is_missing_or_zero_gives_none(rate: float | None) -> None:
    assert usd_per_1m_tokens(H100, rate) is None


@pytest.mark.parametrize("args", [(-1.0, 1), (math.inf, 1), (1.0, 0), (1.0, 1.5), (1.0, True)])
def test_invalid_prices_are_refused(args: tuple) -> None:
    with pytest.raises(ValueError):
        Price(args[0], args[1], "x")


GOOD_YAML = """\
prices:
  - {name: h100-ondemand, usd_per_gpu_hour: 2.99, source: "https://example.com/a"}
  - name: h200-spot
    usd_per_gpu_hour: 3
    source: quote 2026-01
"""


def test_load_prices_reads_yaml_and_json(tmp_path: Path) -> None:
    y = tmp_path / "prices.yaml"
    y.write_text(GOOD_YAML)
    prices = load_prices(y)
    assert prices["h100-ondemand"] == Price(2.99, 1, "https://example.com/a")
    assert prices["h200-spot"].usd_per_gpu_hour == 3.0
    j = tmp_path / "prices.json"
    j.write_text('{"prices":[{"name":"a100","usd_per_gpu_hour":1.5,"source":"s","gpus":8}]}')
    assert load_prices(j) == {"a100": Price(1.5, 8, "s")}


@pytest.mark.parametrize(("text", "where", "words"), [
    (GOOD_YAML.replace('source: quote 2026-01', 'sauce: x'), ":5:5:",
     ("prices[1] (h200-spot)", "unknown key 'sauce'")),
    (GOOD_YAML.replace("usd_per_gpu_hour: 3", "usd_per_gpu_hour: -3"), ":4:23:",
     ("prices[1] (h200-spot)", "usd_per_gpu_hour must be a number >= 0")),
    (GOOD_YAML.replace("usd_per_gpu_hour: 3", "usd_per_gpu_hour: three"), ":4:23:",
     ("prices[1] (h200-spot)", "'three'")),
    (GOOD_YAML.replace("    source: quote 2026-01\n", ""), ":3:5:",
     ("prices[1] (h200-spot)", "`source` is missing")),
    (GOOD_YAML.replace("h200-spot", "h100-ondemand"), ":3:11:", ("given twice",)),
    ("price: []\n", ":1:1:", ("expected `prices:`",)),
    ("prices: [1]\n", ":1:10:", ("prices[0] must be a mapping",)),
    ("prices: [{usd_per_gpu_hour: 1, source: s}]\n", ":1:10:", ("`name` is missing",)),
    ("prices: [\n", ":2:1:", ("YAML syntax error",)),
])
def test_bad_prices_files_give_one_located_line(tmp_path: Path, text: str, where: str,
                                                words: tuple[str, ...]) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(text)
    with pytest.raises(PerfkitError) as info:
        load_prices(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}{where}") and "\n" not in msg, msg
    assert all(w in msg for w in words), msg
    assert info.value.exit_code == EXIT_BAD_INPUT


def test_bad_json_and_missing_files(tmp_path: Path) -> None:
    j = tmp_path / "p.json"
    j.write_text('{"prices": [\n  {"name": "a", }\n]}')
    with pytest.raises(PerfkitError, match=rf"^{j}:2:17: not valid JSON"):
        load_prices(j)
    j.write_text('{"prices": [{"name": "a", "usd_per_gpu_hour": 1}]}')
    with pytest.raises(PerfkitError, match=r"prices\[0\] \(a\): `source` is missing"):
        load_prices(j)
    with pytest.raises(PerfkitError, match="not found"):
        load_prices(tmp_path / "absent.yaml")


@pytest.mark.slow  # the first serve-bench call imports the client
@pytest.mark.parametrize(("text", "needle"), [
    ('{"prices": ' + "[" * 400_000 + "]" * 400_000 + "}", ":1:211: nested more than 200 levels deep"),
    ('{"prices": [{"name": "a", "usd_per_gpu_hour": ' + "9" * 6000 + ', "source": "s"}]}',
     ": not valid JSON (an integer over 4300 digits)"),
    ('{"prices": [{"name": "a", "usd_per_gpu_hour": ' + "9" * 400 + ', "source": "s"}]}',
     ": prices[0] (a): usd_per_gpu_hour must be a number >= 0 and at most 1,000,000, not an integer of 400 digits"),
    ('{"prices": [{"name": "a", "usd_per_gpu_hour": 1e300, "source": "s"}]}', "not 1e+300"),
    ('{"prices": [{"name": "a", "usd_per_gpu_hour": 1, "gpus": ' + "9" * 400 + ', "source": "s"}]}',
     ": prices[0] (a): gpus must be a whole number 1 to 1,000,000, not an integer of 400 digits"),
], ids=["nested-400000", "integer-6000-digits", "price-400-digits", "price-1e300", "gpus-400-digits"])
def test_serve_bench_prices_out_of_range_are_one_line_before_any_request(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, needle: str) -> None:
    from perfkit.cli import main

    path = tmp_path / "prices.json"
    path.write_text(text)
    # port 9 (discard) on loopback: nothing listens; the prices are refused before any request
    rc = main(["serve-bench", "http://127.0.0.1:9/v1", "--prices", str(path), "--price-name", "a",
               "--out", str(tmp_path / "runs"), "--no-store"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "Traceback" not in err[0], err
    assert err[0].startswith(f"perfkit: error: {path}") and needle in err[0], err
    assert not (tmp_path / "runs").exists()
