"""One number formatter: the terminal summary, the Markdown and HTML reports and the dashboard
show a run's numbers as the same strings, with 3 significant digits (perfkit/core/units.py)."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("streamlit", reason="the dashboard extra is not installed")

from perfkit.cli import main
from perfkit.core.record import STATUS_OK, load_run
from perfkit.core.units import fmt_num, fmt_pct, fmt_rate, fmt_time
from perfkit.reports.console import rate_scale
from perfkit.reports.point_cells import point_cells
from tests.dashboard.test_pages import app, frame

NUMBER = re.compile(r"[-+]?(\d+\.?\d*(?:e[-+]\d+)?)")


def significant(text: str) -> int:
    """Significant digits of the first number in `text` (trailing zeros of a whole number aside)."""
    found = NUMBER.search(text)
    assert found, text
    mantissa = found.group(1).split("e")[0]
    digits = mantissa.replace(".", "").lstrip("0")
    return len(digits if "." in mantissa else digits.rstrip("0") or "0")


def terminal(run: Any) -> str:
    from rich.console import Console

    from perfkit.reports.console import summary_table

    console = Console(width=400, record=True)
    console.print(summary_table(run))
    return console.export_text()


@pytest.fixture
def shown(seeded: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Any:
    """The same candidate run (and baseline) through every display."""
    monkeypatch.setenv("PERFKIT_DB", seeded.url)
    monkeypatch.setenv("PERFKIT_RUNS", str(seeded.runs_root))
    cand_id, base_id = seeded.cpu_runs[-1], seeded.cpu_runs[seeded.step_at - 3]
    cand_dir, base_dir = seeded.runs_root / cand_id, seeded.runs_root / base_id
    assert main(["report", str(cand_dir), "--vs", str(base_dir), "--format", "md", "--no-kernels"]) == 0
    markdown = html.unescape(capsys.readouterr().out.replace("\\", ""))  # Markdown escapes removed
    out = tmp_path / "report.html"
    assert main(["report", str(cand_dir), "--vs", str(base_dir), "--out", str(out), "--no-kernels"]) == 0
    page = html.unescape(out.read_text())
    run = load_run(cand_dir)
    return {"run": run, "terminal": terminal(run), "markdown": markdown, "html": page,
            "run_page": frame(app("views/run.py", run=cand_id), "run_points"),
            "compare_page": frame(app("views/compare.py", run=cand_id, base=base_id), "cmp_table")}


def test_point_numbers_are_the_same_strings_everywhere(shown: Any) -> None:
    run = shown["run"]
    dashboard = shown["run_page"]
    ok = [p for p in run.points if p.status == STATUS_OK]
    assert ok
    for p in ok:
        c = point_cells(p)
        st = p.measurement.stats
        assert (c.median, c.ci) == (fmt_time(st.median_s), fmt_pct(st.rel_ci_halfwidth))
        assert c.flop_per_s == fmt_rate(p.achieved["flop_per_s"], "flop/s")
        row = dashboard[dashboard["key"] == p.key].iloc[0]
        for text, column in ((c.median, "median"), (c.ci, "95% CI"), (c.flop_per_s, "flop/s"),
                             (c.bytes_per_s, "bytes/s")):
            assert significant(text) <= 3, text
            assert row[column] == text, (column, text)
            for where in ("markdown", "html") if column in ("flop/s", "bytes/s") else ("terminal", "markdown", "html"):
                assert text in shown[where], (where, text)
        # the terminal gives rates in its column's unit (in the header): the same digits
        for key in ("flop_per_s", "bytes_per_s"):
            values = [q.achieved[key] for q in run.points if key in q.achieved]
            _prefix, scale = rate_scale(values)
            cell = fmt_num(p.achieved[key] / scale)
            assert significant(cell) <= 3 and f" {cell} " in shown["terminal"], (key, cell)
        assert c.rel_err != "-" and significant(c.rel_err) <= 3
        for where in ("terminal", "markdown", "html"):
            assert c.rel_err in shown[where], (where, c.rel_err)


@pytest.mark.slow
def test_comparison_numbers_are_the_same_strings_everywhere(shown: Any) -> None:
    table = shown["compare_page"]
    assert (table["verdict"] == "regressed").any()
    changed = table[table["verdict"] != "unchanged"]
    for r in changed.to_dict("records"):
        for column in ("baseline", "candidate", "change", "test interval", "p"):
            text = str(r[column])
            assert text != "-", (column, r)
            assert significant(text) <= 3 or text == "<1e-4", (column, text)
            for where in ("markdown", "html"):
                assert text in shown[where], (where, column, text)
    for text in table["test interval"]:
        assert re.fullmatch(r"\[[-+][\d.e+-]+%, [-+][\d.e+-]+%\]", text), text  # changes, not ratios


@pytest.mark.parametrize(("text", "digits"), [
    ("12.3 us", 3), ("±0.534%", 3), ("+1230%", 3), ("0.0123", 3), ("1.23e-07", 3), ("100 ns", 1), ("1.2", 2),
])
def test_significant_counts_digits(text: str, digits: int) -> None:
    assert significant(text) == digits
