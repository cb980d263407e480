"""`perfkit report --format md`: a CI summary whose tables survive any kernel or point name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from perfkit.cli import main
from perfkit.core.record import load_run
from perfkit.reports.html.data import gather
from perfkit.reports.markdown.run import md_text, render_markdown

# CommonMark with raw HTML allowed (as GitHub would pass it to its sanitizer): any escape we
# missed shows up as a tag in the rendered output.
MD = MarkdownIt("commonmark").enable("table")


def rendered_rows(html: str) -> list[str]:
    return [row for row in html.split("<tr>")[1:]]


def test_summary_lists_points_and_skips(tiny_run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tiny_run_dir), "--format", "md", "--no-kernels"]) == 0
    text = capsys.readouterr().out
    run = load_run(tiny_run_dir)
    assert text.startswith(f"## perfkit run {md_text(run.run_id)}")
    assert "**2 ok**, 0 failed, 2 skipped" in text
    html = MD.render(text)
    assert "<td>sq m=32 dtype=fp32</td>" in html and "<td>sq m=64 dtype=fp32</td>" in html
    assert "Failed, skipped or inexact points (2)" in html


def test_markdown_written_to_file(tiny_run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "summary.md"
    assert main(["report", str(tiny_run_dir), "--format", "md", "--out", str(out), "--no-kernels"]) == 0
    assert out.read_text().startswith("## perfkit run ")


def test_kernel_names_cannot_inject_markup(tiny_run_dir: Path, tmp_path: Path, evil_kernel: str,
                                          traced_copy: Any) -> None:
    run_dir = traced_copy(tiny_run_dir, tmp_path / "gpu", [evil_kernel, "ampere_sgemm_128x64_nn"])
    text = render_markdown(gather(load_run(run_dir), run_dir))
    assert "<script" not in text.lower()
    html = MD.render(text)
    assert "<script" not in html.lower() and "<a href" not in html  # no tag, no link from the name
    kernel_rows = [r for r in rendered_rows(html) if "ampere_sgemm" in r or "alert" in r]
    assert len(kernel_rows) == 2 * 2  # two kernels per point, two traced points
    for row in kernel_rows:
        assert row.count("<td") == 5  # point, kernel, count, total, share: the `|` did not split cells
    assert "&lt;/script&gt;&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt; &amp; | `x` [a](b)" in html


def test_comparison_table_shows_changed_points(tiny_run_dir: Path, tmp_path: Path, steady: Any,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    base = steady(tiny_run_dir, tmp_path / "base", "base-run", seed=1)
    fast = steady(tiny_run_dir, tmp_path / "fast", "fast-run", scale={1: 1 / 3.0}, seed=2)
    assert main(["report", str(fast), "--vs", str(base), "--format", "md", "--no-kernels"]) == 0
    text = capsys.readouterr().out
    assert "### Compared with base-run" in text
    assert "2 measurements: " in text and "**1 improved**" in text  # the point's time, flop/s, bytes/s: one
    html = MD.render(text)
    rows = [r for r in rendered_rows(html) if "sq m=64 dtype=fp32" in r and "improved" in r]
    # in the changed table, and again under "Every measurement" (unchanged ones too, as in gate's summary)
    assert [r.split("<td")[2].split(">")[1].split("<")[0] for r in rows] == ["time_s", "time_s"]
    assert "-6" in rows[0] and "%" in rows[0]
    every = text.split("<summary>Every measurement</summary>", 1)[1].split("</details>", 1)[0]
    assert every.count("| sq m=") == 2  # both points: the improved one and the other


@pytest.mark.parametrize(
    ("raw", "cell"),
    [
        ("a|b", "a|b"),
        ("<b>x</b>", "&lt;b&gt;x&lt;/b&gt;"),
        ("*em* _u_ [l](http://x)", "*em* _u_ [l](http:\u2060//x)"),  # a WORD JOINER breaks the autolink
        ("tick ` in", "tick ` in"),
    ],
)
def test_md_text_renders_verbatim(raw: str, cell: str) -> None:
    html = MD.render(f"| h |\n|---|\n| {md_text(raw)} |\n")
    assert f"<td>{cell}</td>" in html


def test_baseline_from_the_store_by_run_id(tiny_run_dir: Path, tmp_path: Path, steady: Any,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    from perfkit.store.api import store_run

    db = tmp_path / "store.db"
    base_id = store_run(steady(tiny_run_dir, tmp_path / "base", "stored-base-run", seed=1), str(db))
    slow = steady(tiny_run_dir, tmp_path / "slow", "candidate-1", scale={0: 3.0}, seed=2)
    assert main(["report", str(slow), "--vs", base_id[:12], "--db", str(db), "--format", "md", "--no-kernels"]) == 0
    text = capsys.readouterr().out
    assert f"### Compared with {md_text(base_id)}" in text
    assert "**1 regressed**" in text
