"""Workload metrics reach every view from one description (perfkit.core.metric_defs): decode
TTFT / TPOT / ITL p50/p90/p99 / tok/s / MBU and collectives busbw per size in the terminal
summary, the HTML and Markdown reports, the store's metrics and the gate (with direction)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from perfkit.cli import main
from perfkit.core.direction import HIGHER, LOWER
from perfkit.core.metric_defs import BY_KEY, metric_values
from perfkit.core.units import fmt_percent, fmt_rate, fmt_time, fmt_value
from perfkit.reports.console import summary_table
from perfkit.reports.html.data import gather
from perfkit.reports.html.page import render_html
from perfkit.reports.markdown.run import render_markdown
from perfkit.store.metrics import run_metrics
from tests.helpers.workload_runs import SIZES, collectives_run, decode_run, write_run

DECODE_LABELS = ("TTFT", "TPOT", "ITL p50", "ITL p90", "ITL p99", "throughput", "MBU")


def decode_texts() -> dict[str, str]:
    """Each decode headline metric's expected text, formatted by perfkit.core.units."""
    m = decode_run().points[0].metrics
    return {"TTFT": fmt_time(m["ttft_s"]), "TPOT": fmt_time(m["tpot_s"]), "ITL p50": fmt_time(m["itl_s"]["p50"]),
            "ITL p90": fmt_time(m["itl_s"]["p90"]), "ITL p99": fmt_time(m["itl_s"]["p99"]),
            "throughput": fmt_value(m["tokens_per_s"], "tok/s"), "MBU": fmt_percent(m["mbu"])}


def test_registry_describes_every_decode_and_collective_metric() -> None:
    for key in ("ttft_s", "tpot_s", "itl_p50_s", "itl_p90_s", "itl_p99_s", "tokens_per_s", "mbu", "mfu",
                "algbw_bytes_per_s", "busbw_bytes_per_s", "load_imbalance"):
        d = BY_KEY[key]
        assert d.definition and d.unit is not None
    assert BY_KEY["tpot_s"].direction == LOWER and BY_KEY["busbw_bytes_per_s"].direction == HIGHER
    assert BY_KEY["mbu"].direction == HIGHER and BY_KEY["load_imbalance"].direction == LOWER
    values = {d.key: v for d, v in metric_values(decode_run().points[0].metrics)}
    assert values["itl_p99_s"] == (decode_run().points[0].metrics["itl_s"]["p99"],)
    assert len(values["tpot_s"]) == 5  # one sample per timed generation


@pytest.mark.slow
def test_html_report_shows_decode_metrics() -> None:
    html = render_html(gather(decode_run(), None, with_roofline=False, with_kernels=False), plotly_js="")
    section = html[html.index('<section id="metrics">'):]
    section = section[:section.index("</section>")]
    for label, text in decode_texts().items():
        assert f"<td>{label}</td><td class=\"num\">{text}</td>" in section, label
    assert "Collective bandwidth" not in html


def test_markdown_report_shows_decode_metrics() -> None:
    md = render_markdown(gather(decode_run(), None, with_roofline=False, with_kernels=False))
    part = md[md.index("### Workload metrics"):]
    for label, text in decode_texts().items():
        assert f"| {label} | {text} |" in part, label


def test_collectives_busbw_per_size_in_every_report() -> None:
    run = collectives_run()
    busbw = [fmt_rate(p.metrics["busbw_bytes_per_s"], "B/s") for p in run.points]
    assert len(set(busbw)) == len(SIZES)
    data = gather(run, None, with_roofline=False, with_kernels=False)
    html = render_html(data, plotly_js="")
    md = render_markdown(data)
    for text in busbw:
        assert f"<td>busbw</td><td class=\"num\">{text}</td>" in html
        assert f"| busbw | {text} |" in md
    assert "Collective bandwidth vs message size" in html and '"type":"log"' in html.replace(" ", "")


def test_collectives_show_no_flop_per_s_column() -> None:
    """all_gather adds no flop: no column of '0 Mflop/s' in the terminal, '-' in the reports."""
    console = Console(width=200, record=True)
    console.print(summary_table(collectives_run()))
    text = console.export_text()
    assert "flop/s" not in text and "busbw" in text
    md = render_markdown(gather(collectives_run(), None, with_roofline=False, with_kernels=False))
    assert "0 flop/s" not in md


def test_terminal_summary_prints_itl_percentiles() -> None:
    console = Console(width=400, record=True)
    console.print(summary_table(decode_run()))
    text = console.export_text()
    for label in ("TTFT", "TPOT", "ITL p50", "ITL p90", "ITL p99", "MBU"):
        assert f"{label} {decode_texts()[label]}" in text, label


def test_store_records_gated_metrics_with_the_registry_direction() -> None:
    recs = {r.name.split(":")[-1]: r for r in run_metrics(decode_run())}
    assert recs["itl_p99_s"].direction == LOWER and recs["itl_p99_s"].unit == "s"
    assert recs["mbu"].direction == HIGHER and recs["decode_tokens_per_s"].direction == HIGHER
    assert len(recs["tpot_s"].samples) == 5
    assert recs["tpot_s"].value == pytest.approx(decode_run().points[0].metrics["tpot_s"])
    assert "cache_len" not in recs and "weight_bytes_per_step" not in recs  # describe the point


@pytest.mark.slow
def test_gate_lists_tpot_with_verdict_and_direction(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = write_run(decode_run("base", 1e-3), tmp_path)
    cand = write_run(decode_run("cand", 1.5e-3), tmp_path)
    rc = main(["gate", "--baseline", str(base), "--candidate", str(cand), "--format", "json", "--db",
               str(tmp_path / "none.db"), "--no-step-summary"])
    doc = json.loads(capsys.readouterr().out)
    rows = doc["metrics"]
    tpot = [r for r in rows if str(r["metric"]).endswith(":tpot_s")]
    assert len(tpot) == 1, [r["metric"] for r in rows]
    assert tpot[0]["direction"] == "lower" and tpot[0]["verdict"] == "regressed"
    mbu = next(r for r in rows if str(r["metric"]).endswith(":mbu"))
    assert mbu["direction"] == "higher"
    assert rc == 1


def test_null_mbu_is_shown_with_its_reason() -> None:
    """A CPU without a calibration has no bandwidth ceiling: MBU shows '-' and says why."""
    from dataclasses import replace

    from perfkit.reports.metric_rows import metric_rows

    run = decode_run()
    p = run.points[0]
    metrics = {**p.metrics, "mbu": None, "null_reasons": ["mbu is null: no memory-bandwidth ceiling (x)"]}
    rows = {r.metric: r for r in metric_rows(run.with_points((replace(p, metrics=metrics),)), {})}
    assert rows["MBU"].text == "-" and "no memory-bandwidth ceiling" in rows["MBU"].definition
    assert rows["TPOT"].text == fmt_time(p.metrics["tpot_s"])


def test_an_unknown_headline_metric_says_why_once_in_every_view() -> None:
    """A decode point on a machine without a roof: MBU / MFU are '-' with the reason the workload
    recorded, said once per metric under the Markdown table (the HTML / dashboard definition column
    carries it too)."""
    from perfkit.core.measurement import Measurement
    from perfkit.core.record import PointResult
    from perfkit.reports.metric_rows import point_metric_rows, unknown_notes

    why = "no memory-bandwidth ceiling for this device (dram bandwidth unknown (run `perfkit calibrate`))"
    timed = Measurement(samples_s=(1e-3,) * 12, warmup_reps=1, stop_reason="converged", timer="perf_counter",
                        target_rel_ci=0.03)
    points = [PointResult(key=f"decode/d/batch={b}", kind="decode", workload="d", params={"batch": b}, status="ok",
                          measurement=timed, metrics={"tpot_s": [1e-3], "mbu": None, "mfu": None,
                                                      "null_reasons": [f"mbu is null: {why}", "mfu is null: no peak"]})
              for b in (1, 4)]
    rows = [r for p in points for r in point_metric_rows(p, p.key)]
    unknown = [r for r in rows if r.text == "-"]
    assert {r.metric for r in unknown} == {"MBU", "MFU"} and all(why in r.definition for r in unknown if r.metric == "MBU")
    assert unknown_notes(rows) == [f"MBU: {why}", "MFU: no peak"]  # once, not per point
