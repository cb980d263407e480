"""`perfkit compare / gate / report --vs` on serving runs against `perfkit serve --synthetic`:
run-level numbers (output tok/s, cost) are tested from their window samples (a 20% slower ITL
is regressed, the same server twice is not), and every view says which part moved a stage: TPOT
when only the ITL changed, TTFT when only the TTFT did, output length when the server generated
more tokens per request, with the same words in compare's JSON, the gate's Markdown and the
report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfkit.cli import main
from perfkit.reports.html.text import esc
from perfkit.reports.markdown.text import md_text
from tests.helpers.measured_bench import measured_bench
from tests.helpers.serving_server import running_server

BENCH = ["--concurrency", "1", "--requests", "16", "--output-len", "12", "--slo", "ttft=0.5,tpot=0.1",
         "--price-per-gpu-hour", "2.99", "--gpus", "1", "--name", "why-me", "--quiet",
         "--no-ignore-eos"]  # the servers below stop at their own length: a stage that sent ignore_eos is INVALID
BASE = ("--ttft-ms", "40", "--itl-ms", "50", "--max-tokens-cap", "8")  # 8 tokens of the 12 asked for; 50 ms
# steps keep a busy 2-core test machine far from client-bound (lag p99 > 10% of the ITL)


def _bench(server: tuple[str, ...], tmp_path: Path, db: str, times: int = 1) -> list[Path]:
    out = []
    with running_server("--synthetic", *server) as url:
        for _ in range(times):
            out.append(measured_bench(url, tmp_path / "runs", db, BENCH))
    return out


def _compare(base: Path, cand: Path, db: str, capsys: pytest.CaptureFixture[str]) -> dict:
    capsys.readouterr()
    assert main(["compare", str(base), str(cand), "--db", db, "--format", "json", "--history", "0"]) == 0
    return json.loads(capsys.readouterr().out)


def _verdicts(doc: dict, metric: str) -> list[str]:
    return [r["verdict"] for r in doc["rows"] if r["metric"].endswith(":" + metric)
            or any(a.endswith(":" + metric) for a in r.get("also") or ())]


@pytest.mark.slow
def test_compare_gate_and_report_say_what_moved_a_serving_stage(tmp_path: Path, db: str,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    base, same = _bench(BASE, tmp_path, db, times=2)
    (slower_itl,) = _bench(("--ttft-ms", "40", "--itl-ms", "60", "--max-tokens-cap", "8"), tmp_path, db)
    (slower_ttft,) = _bench(("--ttft-ms", "160", "--itl-ms", "50", "--max-tokens-cap", "8"), tmp_path, db)
    (longer,) = _bench(("--ttft-ms", "40", "--itl-ms", "50"), tmp_path, db)

    unchanged = _compare(base, same, db, capsys)
    assert "regressed" not in [r["verdict"] for r in unchanged["rows"]]
    (same_why,) = unchanged["serving_why"]  # whatever moved most moved a request's time by little
    assert all(abs(p["effect"]) < 0.05 for p in same_why["parts"]), same_why["text"]

    itl = _compare(base, slower_itl, db, capsys)
    assert [w["cause"] for w in itl["serving_why"]] == ["TPOT"]
    assert not itl["only_in_baseline"] and not itl["only_in_candidate"]

    ttft = _compare(base, slower_ttft, db, capsys)
    assert [w["cause"] for w in ttft["serving_why"]] == ["TTFT"]

    length = _compare(base, longer, db, capsys)
    (why,) = length["serving_why"]
    assert why["cause"] == "output length" and "8 tok/request -> 12 tok/request" in why["text"]

    # one answer in every view: the gate's Markdown and the report carry compare's line
    md = tmp_path / "gate.md"
    assert main(["gate", "--baseline", str(base), "--candidate", str(slower_itl), "--db", db, "--markdown", str(md),
          "--no-step-summary", "--history", "0"]) == 1
    text = itl["serving_why"][0]["text"]
    assert md_text(text) in md.read_text()
    capsys.readouterr()
    assert main(["report", str(slower_itl), "--vs", str(base), "--format", "md", "--db", db, "--history", "0"]) == 0
    assert md_text(text) in capsys.readouterr().out
    html = tmp_path / "r.html"
    assert main(["report", str(slower_itl), "--vs", str(base), "--format", "html", "--db", db, "--history", "0",
                 "--out", str(html)]) == 0
    assert esc(text) in html.read_text()

    # the run-level numbers are tested from their samples (before: "n=1/1 samples and no history")
    assert _verdicts(itl, "output_tok_per_s") == ["regressed"], [r["reason"] for r in itl["rows"]]
    assert _verdicts(itl, "usd_per_1m_output_tok") == ["regressed"]


@pytest.mark.slow
def test_one_stage_compare_prints_its_kernel_level_under_the_headline(tmp_path: Path, db: str,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """A single stage whose why is the headline's still shows its kernel level in the terminal."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data" / "traces" / "perfkit"))
    from make_traces import profile_decoder  # type: ignore[import-not-found]

    (base,) = _bench(BASE, tmp_path, db)
    (cand,) = _bench(("--ttft-ms", "40", "--itl-ms", "70", "--max-tokens-cap", "8"), tmp_path, db)
    for run, slow in ((base, {}), (cand, {"attention": 8})):
        trace = profile_decoder(tmp_path / f"{run.name}.pt.trace.json.gz", steps=12, slow=slow)
        assert main(["serve-bench", "attach", str(run), str(trace)]) == 0
    capsys.readouterr()
    main(["compare", str(base), str(cand), "--db", db, "--history", "0"])
    out = capsys.readouterr().out
    assert "why (serving stages):" in out, out
    assert "decode steps" in out and "perfkit_attention +" in out, out
