"""The serving views: curves from runs, the two figures, the Serving sections of the Markdown and
HTML reports, the terminal summary and the gate's tables, with hostile strings in the endpoint,
the client-bound line and the client's notes (markup, a Markdown link, a terminal escape)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from rich.console import Console

from perfkit.core.record import STATUS_FAILED, Run
from perfkit.reports.console import summary_table
from perfkit.reports.html.data import gather
from perfkit.reports.html.page import render_html
from perfkit.reports.markdown.run import render_markdown
from perfkit.reports.point_cells import point_cells
from perfkit.reports.serving.curves import run_label, serving_curves
from perfkit.reports.serving.figures import (
    CLIENT_BOUND_LEGEND,
    CLIENT_BOUND_MARKER,
    FRONT_MARKER,
    axis_title,
    cost_vs_interactivity,
    latency_vs_throughput,
)
from perfkit.reports.serving.rows import SERVING_STAGE, column_label, front_rows, headline
from tests.helpers.serving_runs import (
    EVIL_CLIENT_BOUND,
    EVIL_ENDPOINT,
    serving_run,
    stage_metrics,
    stage_point,
)

MD = MarkdownIt("commonmark").enable("table")


def two_runs() -> list[tuple[str, Run]]:
    runs = [serving_run("srv1", hostile=True), serving_run("srv2", commit="beef00", speed=1.3)]
    return [(run_label(r), r) for r in runs]


# ----------------------------------------------------------------------------- curves


def test_curves_put_stages_in_load_order_with_front_costs() -> None:
    run = serving_run(levels=(16, 1, 4))
    failed = stage_point(2, stage_metrics(2))
    run = run.with_points((*run.points, replace(failed, status=STATUS_FAILED)))
    (curve,) = serving_curves([("label", run)])
    assert curve.label == "label" and curve.run_id == "srv1" and curve.workload == "chat"
    assert [p.stage for p in curve.points] == ["concurrency=1", "concurrency=4", "concurrency=16"]  # failed: left out
    assert [p.client_bound is not None for p in curve.points] == [False, True, False]  # the last one run
    assert [(f.target_tok_per_s, f.usd_per_1m_output_tok) for f in curve.front] == [(20.0, 1.5), (50.0, 4.25)]
    first = curve.points[0]
    assert first.interactivity_tok_per_s == pytest.approx(1 / first.tpot_p50_s)
    assert run_label(run) == "c0ffee1234 · srv1"


def test_curves_of_one_workload_and_of_several() -> None:
    a = serving_run("a", workload="chat")
    b = serving_run("b", workload="code")
    both = a.with_points(a.points + b.points)
    assert [c.label for c in serving_curves([("x", both)])] == ["x · chat", "x · code"]
    assert [c.label for c in serving_curves([("x", both)], workload="code")] == ["x"]
    assert serving_curves([("x", a)], workload="code") == []


# ----------------------------------------------------------------------------- figures


def test_latency_figure_has_a_line_per_run_on_both_panels() -> None:
    curves = serving_curves(two_runs())
    fig = latency_vs_throughput(curves)
    assert fig is not None
    lines = [t for t in fig.data if t.name != CLIENT_BOUND_LEGEND]
    assert [(t.name, t.xaxis, t.yaxis) for t in lines] == [
        ("c0ffee1234 · srv1", "x", "y"), ("c0ffee1234 · srv1", "x2", "y2"),
        ("beef00 · srv2", "x", "y"), ("beef00 · srv2", "x2", "y2")]
    assert [t.showlegend for t in lines] == [True, False, True, False]
    layout = fig.layout
    assert layout.xaxis.title.text == layout.xaxis2.title.text == axis_title("output_tok_per_s")
    assert layout.yaxis.title.text == axis_title("ttft_p50_s") and layout.yaxis2.title.text == axis_title("tpot_p50_s")
    ttft = lines[0]
    assert list(ttft.x) == [p.output_tok_per_s for p in curves[0].points]
    assert list(ttft.y) == [p.ttft_p50_s for p in curves[0].points]
    assert list(lines[1].y) == [p.tpot_p50_s for p in curves[0].points]
    # the client-bound stage: an X with the reason in its hover, escaped for plotly
    assert list(ttft.marker.symbol)[-1] == CLIENT_BOUND_MARKER and set(list(ttft.marker.symbol)[:-1]) == {"circle"}
    note = ttft.customdata[-1][1]
    assert "&lt;script&gt;" in note and "<script>" not in note
    assert any(t.name == CLIENT_BOUND_LEGEND for t in fig.data)
    assert "script" not in json.dumps([list(t.customdata) for t in lines[2:]])  # srv2's own note


def test_cost_figure_draws_interactivity_against_cost_and_the_front() -> None:
    curves = serving_curves(two_runs())
    fig = cost_vs_interactivity(curves)
    assert fig is not None
    assert fig.layout.xaxis.title.text == axis_title("interactivity_tok_per_s")
    assert fig.layout.yaxis.title.text == axis_title("usd_per_1m_output_tok")
    names = [t.name for t in fig.data]
    assert names == ["c0ffee1234 · srv1", "c0ffee1234 · srv1: at target", "beef00 · srv2", "beef00 · srv2: at target",
                     CLIENT_BOUND_LEGEND]
    stages, front = fig.data[0], fig.data[1]
    assert list(stages.x) == [p.interactivity_tok_per_s for p in curves[0].points]
    assert list(stages.y) == [p.usd_per_1m_output_tok for p in curves[0].points]
    assert list(front.x) == [20.0, 50.0] and list(front.y) == [1.5, 4.25] and front.marker.symbol == FRONT_MARKER


def test_figures_without_data_are_none() -> None:
    assert latency_vs_throughput([]) is None and cost_vs_interactivity([]) is None


def test_labels_are_escaped_in_figures() -> None:
    run = serving_run("<b>x</b>")
    fig = latency_vs_throughput(serving_curves([(run_label(run), run)]))
    assert fig is not None and fig.data[0].name == "c0ffee1234 · &lt;b&gt;x&lt;/b&gt;"


# ----------------------------------------------------------------------------- rows shared by the views


def test_headline_and_front_rows() -> None:
    run = serving_run()
    stage, front = run.points[0], run.points[-1]
    line = headline(stage)
    assert line.startswith(f"{column_label('ttft_p50_s')} 60 ms · {column_label('tpot_p50_s')} 11 ms")
    assert [(r.target, r.usd_per_1m_output_tok, r.throughput_per_gpu) for r in front_rows(front)] == [
        ("20", "1.5 USD", "350 tok/s"), ("50", "4.25 USD", "120 tok/s")]
    assert point_cells(stage).median == SERVING_STAGE and not point_cells(stage).timed


# ----------------------------------------------------------------------------- Markdown and HTML


def test_markdown_serving_section_is_text_only() -> None:
    run = serving_run(hostile=True)
    text = render_markdown(gather(run, None, with_roofline=False, with_kernels=False))
    assert "### Serving: chat" in text and "\x1b" not in text and "\\x1b" in text
    html = MD.render(text)
    assert "<script" not in html.lower() and "<a href" not in html and "<b>" not in html
    assert "evil.example/&lt;script&gt;" in html
    serving = html.split("Serving: chat")[1].split("Points")[0]
    stage_rows = [r for r in serving.split("<tr>")[1:] if "<td>concurrency=" in r]
    assert len(stage_rows) == 3 and {r.count("<td") for r in stage_rows} == {14}  # no cell split by the `|`s
    assert "2 requests failed (HTTP 503 x2)" in html and "tokens counted as chunks" in html
    assert "| 20 | 1.5 USD | 350 tok/s |" in text  # the cost at each target interactivity


def test_html_serving_section_has_figures_table_and_escaped_notes() -> None:
    run = serving_run(hostile=True)
    page = render_html(gather(run, None, with_roofline=False, with_kernels=False), plotly_js="")
    assert '<a href="#serving">Serving</a>' in page and '<section id="serving">' in page
    serving = page.split('<section id="serving">')[1].split("</section>")[0]
    assert serving.count('class="plotly-graph-div"') == 2
    assert "Latency vs throughput" in serving and "Cost vs interactivity" in serving
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in serving
    assert "<code>http://evil.example/&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;</code>" in serving
    assert f"<th>{column_label('ttft_p50_s')}</th>" in serving and "<td>concurrency=16</td>" in serving
    assert "vllm:prompt_tokens_total</td><td class=\"num\">8192" in serving
    assert EVIL_ENDPOINT not in page  # only escaped


def test_a_run_without_serving_points_has_no_serving_section() -> None:
    from tests.helpers.workload_runs import decode_run

    data = gather(decode_run(), None, with_roofline=False, with_kernels=False)
    assert 'id="serving"' not in render_html(data, plotly_js="") and "Serving" not in render_markdown(data)


# ----------------------------------------------------------------------------- terminal


def test_terminal_summary_shows_serving_stages_and_their_headline() -> None:
    console = Console(width=100, record=True, force_terminal=False)
    console.print(summary_table(serving_run(hostile=True), 100))
    text = console.export_text()
    assert text.count(SERVING_STAGE) == 4 and "numerics only" not in text
    assert "60 ms" in text and "\x1b" not in text
    assert "client-bound" in text  # its note, as a footnote


@pytest.mark.slow
def test_compare_escapes_the_client_bound_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from perfkit.cli import main
    from perfkit.store.api import store_run

    db = f"sqlite:///{tmp_path / 'serving.db'}"
    store_run(serving_run("srv1", hostile=True), db)
    store_run(serving_run("srv2", commit="beef00", speed=1.2, created="2026-01-02T00:00:00+00:00"), db)
    assert main(["compare", "srv1", "srv2", "--db", db]) == 0
    table = capsys.readouterr().out
    assert "incomparable" in table and "\x1b" not in table and "\\x1b[31m" in table
    assert main(["compare", "srv1", "srv2", "--db", db, "--format", "md"]) == 0
    html = MD.render(capsys.readouterr().out)
    assert "<script" not in html and "<a href" not in html and "\x1b" not in html
    assert EVIL_CLIENT_BOUND not in html
