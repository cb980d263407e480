"""One list of hostile strings through every renderer, each checked against its format's rule.

The same strings name points, workloads, branches, hosts, kernels, metrics and failure reasons;
every output perfkit writes of them is checked for what its format must never carry:

- Markdown: no raw HTML (`<` only in perfkit's own `<details>` / `<summary>`), no link or image
  (`](`), no bare URL GitHub would autolink (`http://`, `https://`, `www.`), no emphasis from a
  name, table rows keep their cells, one line per name, no control character;
- HTML: the page's elements and attributes are the same as with harmless names (nothing of the
  input became markup), and no `img` / `on...` attribute;
- JUnit XML: parses (xml.etree) with every name in it;
- terminal: printable characters and newlines only (no ESC, BEL, C1, NUL, ...);
- CSV: no cell a spreadsheet would evaluate (a text cell starting with = + - @).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import re
import xml.etree.ElementTree as ET
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from perfkit.cli import main
from perfkit.core.atomic import write_json_atomic
from perfkit.core.codec import to_builtins
from perfkit.core.env import GitState
from perfkit.core.record import STATUS_FAILED, PointResult, Run, load_run
from perfkit.store.api import store_run
from tests.reports.conftest import write_kineto_trace
from tests.store import factory as f

HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[x](http://evil)",
    "![i](http://evil/i.png)",
    "http://evil.example/a",
    "www.evil.example",
    "**bold**",
    "| col |",
    "\x1b[31mred\x1b[0m",
    "\x1b]8;;http://evil\x07link\x1b]8;;\x07",
    "\x07",
    "\x00",
    "\x0b\x0c",
    "\x9b2J\x9d0;title\x9c",  # C1: CSI, OSC, ST
    "\u202egnp.exe \ufffe\uffff",  # a bidirectional override and XML's non-characters (no lone surrogate)
    '=HYPERLINK("http://evil")',
    "+cmd|' /C calc'!A0",
    "k" * 5000,
    "first line\nsecond line",
]
BENIGN = [f"name{i}" for i in range(len(HOSTILE))]
MD = MarkdownIt("commonmark").enable("table")  # raw HTML allowed: a missed escape shows as a tag
OWN_TAGS = re.compile(r"</?(details|summary)>")
C0_C1 = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")  # every control character but the newline
NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?%?")  # a number or percentage (+40%)


# --- the checks, one per format -------------------------------------------------------------

def check_terminal(text: str) -> None:
    bad = sorted({repr(ch) for ch in text if ch != "\n" and not ch.isprintable()})
    assert not bad, f"unprintable characters reach the terminal: {bad}"


def check_markdown(text: str) -> None:
    assert not C0_C1.search(text), "a control character in Markdown"
    assert "<" not in OWN_TAGS.sub("", text), "raw HTML in Markdown"
    assert "](" not in text, "a link or image in Markdown"
    low = text.lower()
    for bare in ("http://", "https://", "www."):
        assert bare not in low, f"a bare {bare} GitHub would autolink"
    html = MD.render(text)
    for tag in ("<script", "<img", "<a ", "<strong>bold", "<em>"):
        assert tag not in html, tag
    for table in html.split("<table>")[1:]:
        head, _, body = table.partition("</thead>")
        cells = len(re.findall(r"<th[ >]", head))
        rows = body.split("</table>")[0].split("<tr>")[1:]
        assert all(len(re.findall(r"<td[ >]", r)) == cells for r in rows), "a name split a table row"


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: Counter[str] = Counter()
        self.attrs: Counter[str] = Counter()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] += 1
        self.attrs.update(f"{tag}.{name}" for name, _ in attrs)


def html_structure(page: str) -> tuple[Counter[str], Counter[str]]:
    parser = _Tags()
    parser.feed(page)
    parser.close()
    return parser.tags, parser.attrs


def check_html(page: str, benign_page: str) -> None:
    tags, attrs = html_structure(page)
    assert "img" not in tags and not any(a.split(".")[1].startswith("on") for a in attrs)
    assert (tags, attrs) == html_structure(benign_page), "the names changed the page's elements"
    assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]", page), "a control character in HTML"


def check_junit(text: str, cases: int) -> None:
    root = ET.fromstring(text)  # parses whatever the names held
    assert len(root.findall(".//testcase")) == cases


CSV_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def check_csv(text: str) -> None:
    assert not CSV_CONTROL.search(text), f"control character in CSV: {CSV_CONTROL.search(text)!r}"
    for row in csv.reader(io.StringIO(text)):
        for cell in row:
            assert not cell.startswith(("=", "+", "-", "@")) or NUMBER.fullmatch(cell), f"formula cell {cell[:40]!r}"


# --- what is rendered -----------------------------------------------------------------------

def _point(name: str, i: int, level: float, seed: int) -> PointResult:
    base = f.gemm_point(f.noisy(level, 12, seed + i), key=f"gemm/{name}/m={i}")
    return dataclasses.replace(base, workload=name, params={"m": i, "tag": name})


def _run(run_id: str, names: list[str], level: float, seed: int, commit: str = "c0ffee0") -> Run:
    points = [_point(n, i, level, seed) for i, n in enumerate(names)]
    points.append(PointResult(key=f"attn/{names[0]}/s=1", kind="attention", workload=names[1], params={"s": 1},
                              status=STATUS_FAILED, error=" ".join(names[:14])))
    run = f.make_run(run_id, points=points, commit=commit, branch=names[2], created="2026-02-01T00:00:00Z")
    env = dataclasses.replace(run.env, host=names[3], git=GitState(commit=commit, branch=names[2]))
    return dataclasses.replace(run, env=env, spec={"name": names[4]}, spec_path=names[5])


def _run_dir(root: Path, run: Run, kernels: list[str] | None = None) -> Path:
    where = root / run.run_id
    (where / "traces").mkdir(parents=True)
    if kernels is not None:
        points = []
        for i, p in enumerate(run.points[:2]):
            write_kineto_trace(where / f"traces/p{i}.json.gz", kernels, repeats=2)
            points.append(dataclasses.replace(p, trace=f"traces/p{i}.json.gz"))
        run = dataclasses.replace(run, points=(*points, *run.points[2:]))
    write_json_atomic(where / "run.json", to_builtins(run))
    return where


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh SQLite store (PERFKIT_DB); no step summary file."""
    url = f"sqlite:///{tmp_path / 'perfkit.db'}"
    monkeypatch.setenv("PERFKIT_DB", url)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return url


@pytest.fixture
def gate_dirs(tmp_path: Path) -> tuple[Path, Path]:
    """A baseline and a 30% slower candidate whose points, workload, branch, host and spec are hostile."""
    base = _run_dir(tmp_path, _run("base", HOSTILE, 1e-3, 1))
    cand = _run_dir(tmp_path, _run("cand", HOSTILE, 1.3e-3, 2, commit="bad0001"))
    return base, cand


def _gate_result(base: Path, cand: Path) -> Any:
    from perfkit.comparison.gate_history import history_lookup
    from perfkit.comparison.selectors import resolve_pair
    from perfkit.regression.gate.compare import compare_runs
    from perfkit.regression.gate.policy import load_policy

    b, c = resolve_pair(str(base), str(cand), None)
    return compare_runs(b, c, history_lookup(None, c, b), load_policy(None), seed=0)


# --- the renderers, called directly ---------------------------------------------------------

def test_gate_renderers(gate_dirs: tuple[Path, Path], tmp_path: Path) -> None:
    from perfkit.reports.gate.text import render_json, render_table
    from perfkit.reports.junit import render_junit
    from perfkit.reports.markdown.gate import render_markdown

    result = _gate_result(*gate_dirs)
    assert result.failed  # the candidate regressed: every row is shown
    check_terminal(render_table(result))
    check_markdown(render_markdown(result))
    check_junit(render_junit(result), len(result.rows))
    json.loads(render_json(result))


def test_run_report_markdown_and_html(tmp_path: Path) -> None:
    from perfkit.reports.html.data import gather
    from perfkit.reports.html.page import render_html
    from perfkit.reports.markdown.run import render_markdown

    pages = {}
    for tag, names in (("hostile", HOSTILE), ("benign", BENIGN)):
        where = _run_dir(tmp_path / tag, _run("r1", names, 1e-3, 1), kernels=names)
        data = gather(load_run(where), where)
        assert data.kernels is not None and len(data.kernels.summary) > 0
        if tag == "hostile":
            check_markdown(render_markdown(data))
        pages[tag] = render_html(data, plotly_js="")
    check_html(pages["hostile"], pages["benign"])


def test_history_renderers() -> None:
    from perfkit.reports import changepoints_render as cr

    series = [cr.SeriesInfo(n, HOSTILE[-1 - i], 3, "s", (cr.ValueRow(n, 1.7e9, 1e-3, 2, 1e-3, 9e-4, 1.1e-3),))
              for i, n in enumerate(HOSTILE)]
    rows = [cr.ChangeRow(n, HOSTILE[0], n, HOSTILE[1], 1, "2026-01-01", 0.2, 0.01, 1.0, 1.2, "lower", "s")
            for n in HOSTILE]
    for values in (False, True):
        check_terminal(cr.render_table(rows, series, values=values))
        check_markdown(cr.render_markdown(rows, series, values=values))
    json.loads(cr.render_json(rows, series))


def test_console_runs_and_analysis_tables(tmp_path: Path) -> None:
    import pandas as pd
    from rich.console import Console

    from perfkit.analyzers.render import format_table, to_csv
    from perfkit.reports.console import summary_table
    from perfkit.reports.runs_render import render_table
    from perfkit.store.run_list import RunListing

    console = Console(width=100, record=True, soft_wrap=False, file=io.StringIO())
    console.print(summary_table(_run("r1", HOSTILE, 1e-3, 1), 100))
    check_terminal(console.export_text())
    runs = [RunListing(n, "2026-01-01", 1.7e9, n, n, n, "cuda", n, "perfkit", False, n, {"ok": 1}) for n in HOSTILE]
    check_terminal(render_table(runs, 80))
    df = pd.DataFrame({"name": HOSTILE, "total_ns": range(len(HOSTILE)), "kind": HOSTILE})
    for width in (None, 80):
        check_terminal(format_table(df, None, width))
        check_terminal(format_table(df.head(3).assign(**{f"c{i}": 1.0 for i in range(10)}), None, width))
    check_csv(to_csv({"kernels": df}))


def test_tune_table_and_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from perfkit.core.run_layout import TUNE_CSV
    from perfkit.pipeline.tune_report import print_tune, write_tune
    from tests.helpers.tune_runs import TUNED, WORKLOAD, tune_run

    run, results = tune_run()
    hostile = [dataclasses.replace(r, workload=n) for n in HOSTILE for r in results]
    tuned = {n: TUNED[WORKLOAD] for n in HOSTILE}
    write_tune(tmp_path, run, hostile, tuned)
    check_csv((tmp_path / TUNE_CSV).read_text())
    print_tune(hostile, {})
    check_terminal(capsys.readouterr().out)


def test_dashboard_markdown() -> None:
    from perfkit.dashboard.text import md

    for name in HOSTILE:
        check_markdown(f"| a |\n|---|\n| {md(name)} |\n")


# --- through the CLI ------------------------------------------------------------------------

def test_gate_cli_every_output(gate_dirs: tuple[Path, Path], tmp_path: Path, db: str,
                               capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    base, cand = gate_dirs
    md, junit, summary = tmp_path / "gate.md", tmp_path / "gate.xml", tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert main(["gate", "--baseline", str(base), "--candidate", str(cand), "--markdown", str(md),
                 "--junit", str(junit)]) == 1
    out = capsys.readouterr()
    check_terminal(out.out + out.err)
    check_markdown(md.read_text())
    check_markdown(summary.read_text())
    check_junit(junit.read_text(), len(HOSTILE))
    assert main(["gate", "--baseline", str(base), "--candidate", str(cand), "--format", "md"]) == 1
    check_markdown(capsys.readouterr().out)


def test_gate_unwritable_step_summary(gate_dirs: tuple[Path, Path], tmp_path: Path, db: str,
                                      capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Each CI output on its own: the summary fails, the verdicts, --markdown and --junit are still
    there; exit 1 for the regression (it wins), 2 when the gate passes but an output was lost."""
    base, cand = gate_dirs
    md, junit = tmp_path / "gate.md", tmp_path / "gate.xml"
    unwritable = tmp_path / "a-directory"
    unwritable.mkdir()
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(unwritable))
    args = ["--markdown", str(md), "--junit", str(junit)]
    assert main(["gate", "--baseline", str(base), "--candidate", str(cand), *args]) == 1
    out = capsys.readouterr()
    assert "regressed" in out.out and md.is_file() and junit.is_file()
    warnings = [line for line in out.err.splitlines() if "GITHUB_STEP_SUMMARY" in line]
    assert len(warnings) == 1 and "not written" in warnings[0]
    md.unlink()
    junit.unlink()
    same = _run_dir(tmp_path / "same", _run("same", HOSTILE, 1e-3, 3))
    assert main(["gate", "--baseline", str(base), "--candidate", str(same), *args]) == 2
    out = capsys.readouterr()
    assert "0 regressed" in out.out and md.is_file() and junit.is_file()
    assert out.err.count("not written") == 1
    check_terminal(out.out + out.err)


def test_compare_and_history_cli(gate_dirs: tuple[Path, Path], tmp_path: Path, db: str,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    base, cand = gate_dirs
    assert main(["compare", str(base), str(cand), "--format", "md"]) == 0
    check_markdown(capsys.readouterr().out)
    assert main(["compare", str(base), str(cand)]) == 0
    check_terminal(capsys.readouterr().out)
    assert main(["compare", str(base), str(cand), "--format", "csv"]) == 0
    text = capsys.readouterr().out
    check_csv(text)
    assert len(list(csv.reader(io.StringIO(text)))) > 1
    for i in range(4):
        store_run(_run(f"h{i}", HOSTILE[:6], 1e-3 * (1.5 if i > 1 else 1.0), 10 + i, commit=f"c{i}"), db)
    assert main(["history", "*", "--format", "md", "--values", "--min-size", "1"]) == 0
    check_markdown(capsys.readouterr().out)
    assert main(["history", "*", "--values", "--min-size", "1"]) == 0
    check_terminal(capsys.readouterr().out)
    assert main(["runs"]) == 0
    check_terminal(capsys.readouterr().out)


def test_analyze_cli_hostile_kernel_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = write_kineto_trace(tmp_path / "t.json.gz", HOSTILE, repeats=2)
    assert main(["analyze", str(trace), "--top", "0"]) == 0
    out = capsys.readouterr()
    check_terminal(out.out + out.err)
    assert "\\x1b[31mred" in out.out  # shown, as its escape
    assert main(["analyze", str(trace), "--top", "0", "--wide"]) == 0
    check_terminal(capsys.readouterr().out)
    assert main(["analyze", str(trace), "--format", "csv", "--out", str(tmp_path / "tables")]) == 0
    text = capsys.readouterr().out
    check_csv("\n".join(line for line in text.splitlines() if not line.startswith("# ")))
    assert "'=HYPERLINK" in text
    for table in (tmp_path / "tables").glob("*.csv"):
        check_csv(table.read_text())


def test_report_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    where = _run_dir(tmp_path, _run("r1", HOSTILE, 1e-3, 1), kernels=HOSTILE)
    assert main(["report", str(where), "--format", "md"]) == 0
    out = capsys.readouterr()
    check_markdown(out.out)
    check_terminal(out.err)
    assert main(["report", str(where), "--out", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text()
    tags, attrs = html_structure(page)
    assert "img" not in tags and not any(a.split(".")[1].startswith("on") for a in attrs)


def test_report_reads_no_trace_outside_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """run.json naming traces by absolute path or `../..`: not read, a warning and a note."""
    outside = write_kineto_trace(tmp_path / "secret.json.gz", ["outside_kernel"], repeats=2)
    run = _run("r1", BENIGN, 1e-3, 1)
    points = (dataclasses.replace(run.points[0], trace=str(outside)),
              dataclasses.replace(run.points[1], trace="../../secret.json.gz"),
              dataclasses.replace(run.points[2], trace="traces/../../secret.json.gz"), *run.points[3:])
    where = _run_dir(tmp_path / "runs", dataclasses.replace(run, points=points))
    os.symlink(outside, where / "traces" / "link.json.gz")
    record = json.loads((where / "run.json").read_text())
    record["points"][3]["trace"] = "traces/link.json.gz"
    record["points"][4]["trace"] = "traces/\u0000.json.gz"  # not a path at all: not read, no traceback
    (where / "run.json").write_text(json.dumps(record))
    assert main(["report", str(where), "--format", "md"]) == 0
    out = capsys.readouterr()
    assert "outside_kernel" not in out.out
    assert "outside the run directory" in out.out
    warnings = [line for line in out.err.splitlines() if "outside the run directory" in line]
    assert len(warnings) == 1 and "5 path(s)" in warnings[0]


def test_each_rule_on_a_lone_surrogate_and_numbers() -> None:
    """A lone surrogate (json.loads("\\"\\\\ud800\\"") makes one) is shown as its escape by every
    rule, so every output still encodes to UTF-8; the CSV rule leaves numbers alone."""
    from perfkit.core.csv_cells import csv_cell
    from perfkit.core.terminal import terminal_safe
    from perfkit.reports.html.text import esc, plot_text
    from perfkit.reports.junit import xml_text
    from perfkit.reports.markdown.text import md_text

    name = json.loads('"gemm\\ud800x"')
    for rule in (terminal_safe, md_text, esc, plot_text, xml_text):
        out = rule(name)
        out.encode("utf-8")
        assert "\\ud800" in out, rule
    assert [csv_cell(v) for v in (-1.5, "-1.5", "+3e-9", "-", "@x", "a=b")] == [-1.5, "-1.5", "+3e-9", "'-", "'@x", "a=b"]
    assert [csv_cell(v) for v in ("+40%", "-2.5%", "=1+40%", "+40%)")] == ["+40%", "-2.5%", "'=1+40%", "'+40%)"]
    assert csv_cell("\x1b[31mred\x1b[0m\x00\x9b") == "\\x1b[31mred\\x1b[0m\\x00\\x9b"
    assert csv_cell("a\tb\nc") == "a\tb\nc"  # tab and newline are the csv module's to quote
