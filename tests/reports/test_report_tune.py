"""The "Tune winners" table of `perfkit report` (HTML and Markdown): the winning configuration, its
median and the speedup over the runner-up, by perfkit.core.units, every string escaped; a damaged
tune.json is one located line (in the report and on stderr), not a traceback."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from perfkit.cli import main
from perfkit.core.record import load_run
from perfkit.core.units import fmt_ratio, fmt_time
from perfkit.reports.html.data import gather
from perfkit.reports.html.page import render_html
from perfkit.reports.markdown.run import render_markdown
from tests.helpers.tune_runs import write_tune_run
from tests.helpers.workload_runs import decode_run, write_run


def test_html_and_markdown_show_the_winner_its_median_and_speedup(tmp_path: Path) -> None:
    where, results = write_tune_run(tmp_path)
    data = gather(load_run(where), where, with_roofline=False, with_kernels=False)
    best = results[0].best
    assert best is not None
    median, speedup = fmt_time(best.median_s), fmt_ratio(results[0].speedup_vs_runner_up)
    assert speedup == "2x" and median == "10 us"
    page = render_html(data, plotly_js="")
    tune = page[page.index('<section id="tune">'):]
    tune = tune[:tune.index("</section>")]
    assert "Tune winners (2)" in tune and '<a href="#tune">' in page
    row = re.search(r"<tr><td>rms&lt;b&gt;norm\|\*x\*</td><td>n=1024</td>.*?</tr>", tune)
    assert row is not None and "<b>" not in tune
    assert "<td>BLOCK_SIZE=512 num_warps=4</td>" in row.group(0)
    assert f'<td class="num">{median}</td>' in row.group(0) and f'<td class="num">{speedup}</td>' in row.group(0)
    assert "2 timed, 1 failed" in row.group(0) and "<td>yes</td>" in row.group(0)
    md = render_markdown(data)
    section = md[md.index("### Tune winners (2)"):]
    lines = [line for line in section.split("\n\n")[1].splitlines() if line.startswith("| rms")]
    assert md.count("### Tune winners") == 1 and len(lines) == 2
    assert lines[0].startswith(r"| rms&lt;b&gt;norm\|\*x\* | n=1024 | BLOCK\_SIZE=512 num\_warps=4 | " + median)
    assert f"| {speedup} | yes |" in lines[0]
    assert "| - | - | - |" in lines[1]  # n=4096: one configuration timed, no runner-up


def test_a_run_without_a_tune_table_has_no_tune_section(tmp_path: Path) -> None:
    where = write_run(decode_run(), tmp_path)
    data = gather(load_run(where), where, with_roofline=False, with_kernels=False)
    assert data.tune == () and "tune" not in data.notes
    assert 'id="tune"' not in render_html(data, plotly_js="") and "Tune winners" not in render_markdown(data)


def test_a_damaged_tune_file_is_one_located_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    where, _ = write_tune_run(tmp_path)
    (where / "tune.json").write_text('{"schema_version": 1,\n "shapes": [{"workload": 3}]}\n')
    assert main(["report", str(where), "--format", "md", "--no-kernels"]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "tune.json: damaged tune table" in err and "shapes[0].workload: 3 is not a string" in err
    assert "### Tune winners" in out and "Not available:" in out
    assert main(["report", str(where), "--no-kernels"]) == 0
    page = (where / "report.html").read_text()
    assert "Tune winners" in page and "shapes[0].workload: 3 is not a string" in page
    assert "shapes[0].workload: 3 is not a string" in capsys.readouterr().err
    (where / "tune.json").write_text('{"schema_version": 1,\n "shapes": [\n')
    assert main(["report", str(where), "--format", "md", "--no-kernels"]) == 0
    out, err = capsys.readouterr()
    assert f"{where / 'tune.json'}:3:1: not valid JSON" in err and len(err.strip().splitlines()) == 1
