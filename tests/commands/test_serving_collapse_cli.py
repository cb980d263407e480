"""A collapse is a regression, through the CLI against `perfkit serve --synthetic`: SLO attainment
100% -> 0% (every request misses the TPOT SLO), and 100% -> one request in 16 (a server with one
slot queues the rest past the TTFT SLO) with the cost at the SLO x16, are `regressed`, tested on
the stage's request counts (the interval labelled), and the why line names the collapse and its
cause."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfkit.cli import main
from perfkit.core.units import fmt_change
from tests.helpers.measured_bench import measured_bench
from tests.helpers.serving_server import running_server

BENCH = ["--concurrency", "2", "--requests", "16", "--output-len", "4", "--slo", "ttft=0.1,tpot=0.12",
         "--price-per-gpu-hour", "2.5", "--gpus", "1", "--name", "collapse", "--quiet"]
FAST = ("--ttft-ms", "20", "--itl-ms", "80")  # slow steps: a busy 2-core machine stays not client-bound


def _bench(server: tuple[str, ...], tmp_path: Path, db: str) -> Path:
    with running_server("--synthetic", *server) as url:
        return measured_bench(url, tmp_path / "runs", db, BENCH)


def _compare(base: Path, cand: Path, db: str, capsys: pytest.CaptureFixture[str]) -> dict:
    capsys.readouterr()
    main(["compare", str(base), str(cand), "--db", db, "--format", "json", "--history", "0"])
    return json.loads(capsys.readouterr().out)


def _row(doc: dict, metric: str) -> dict:
    """The metric's comparison (a row, or a metric measured with one: the cost with its rate)."""
    rows = [r for r in doc["metrics"] if r["metric"].endswith(":" + metric)]
    assert rows, [r["metric"] for r in doc["metrics"]]
    return rows[0]


@pytest.mark.slow
def test_slo_attainment_collapses_are_regressions_with_the_cause_named(
        tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    base = _bench(FAST, tmp_path, db)
    to_zero = _bench(("--ttft-ms", "20", "--itl-ms", "200"), tmp_path, db)
    queued = _bench((*FAST, "--max-concurrency", "1"), tmp_path, db)

    doc = _compare(base, to_zero, db, capsys)
    att = _row(doc, "slo_attainment")
    assert (att["base_value"], att["cand_value"]) == (1.0, 0.0)
    assert att["verdict"] == "regressed", att["reason"]
    assert att["ratio"] == 0.0 and "16/16 -> 0/16" in att["interval_of"]
    assert _row(doc, "goodput_tok_per_s")["verdict"] == "regressed"
    cost = _row(doc, "usd_per_1m_output_tok_at_slo")  # no request met the SLO: the cost is infinite
    assert cost["verdict"] == "regressed" and cost["ratio"] is None and cost["cand_value"] is None
    (why,) = doc["serving_why"]
    assert "SLO attainment 100% -> 0%" in why["text"] and "at SLO -> infinite" in why["text"]
    # one change per measurement: every row's change is the ratio of the values it shows, and the
    # why line says the same number
    for r in doc["rows"]:
        if r["baseline"] and r["candidate"] is not None:
            assert r["change"] == pytest.approx(r["candidate"] / r["baseline"] - 1.0), r
    (e2e,) = [r for r in doc["rows"] if r["metric"].endswith(":e2e_p50_s")]
    assert f"E2E p50 {fmt_change(e2e['candidate'] / e2e['baseline'])}," in why["text"]
    assert why["cause"] == "TPOT" and not why["text"].startswith("within noise")

    doc = _compare(base, queued, db, capsys)
    att = _row(doc, "slo_attainment")
    assert 0.0 < att["cand_value"] <= 0.25 and att["verdict"] == "regressed", att
    cost = _row(doc, "usd_per_1m_output_tok_at_slo")
    assert cost["verdict"] == "regressed" and cost["ratio"] >= 4.0, cost
    assert "Poisson" in cost["interval_of"]
    (why,) = doc["serving_why"]
    assert "SLO attainment 100% -> " in why["text"] and "USD/1M output tok at SLO x" in why["text"]

    # the answer first: the headline and the why in the terminal's first 5 lines
    capsys.readouterr()
    main(["compare", str(base), str(to_zero), "--db", db, "--history", "0"])
    first = capsys.readouterr().out.splitlines()[:5]
    print("\n".join(first))
    assert first[0].startswith("answer: slower, costlier and worse: ")
    assert any(line.startswith("why: ") for line in first) and "mostly TPOT" in " ".join(first)

    # the gate fails on it, and its Markdown carries the why
    md = tmp_path / "gate.md"
    assert main(["gate", "--baseline", str(base), "--candidate", str(to_zero), "--db", db, "--markdown", str(md),
                 "--no-step-summary", "--history", "0"]) == 1
    assert "SLO attainment 100% -&gt; 0%" in md.read_text() or "SLO attainment 100% -> 0%" in md.read_text()
