"""`perfkit report --format md`: a CI summary whose tables survive any kernel or point name."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from perfkit.cli import main
from perfkit.record import load_run
from reports.html_data import gather
from reports.markdown_run import md_text, render_markdown

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


def test_comparison_table_shows_changed_points(tiny_run_dir: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    fast = tmp_path / "fast"
    shutil.copytree(tiny_run_dir, fast)
    record = json.loads((fast / "run.json").read_text())
    last = [p for p in record["points"] if p["status"] == "ok"][-1]
    last["measurement"]["samples_s"] = [s / 3.0 for s in last["measurement"]["samples_s"]]
    (fast / "run.json").write_text(json.dumps(record))
    assert main(["report", str(fast), "--vs", str(tiny_run_dir), "--format", "md", "--no-kernels"]) == 0
    text = capsys.readouterr().out
    assert "### Compared with" in text
    assert "**3 improved**" in text  # time_s, flop_per_s and bytes_per_s of the faster point
    html = MD.render(text)
    rows = [r for r in rendered_rows(html) if "sq m=64 dtype=fp32" in r and "improved" in r]
    assert {r.split("<td")[2].split(">")[1].split("<")[0] for r in rows} == {"time_s", "flop_per_s", "bytes_per_s"}
    assert any("-66.67%" in r for r in rows) and any("+200.00%" in r for r in rows)


@pytest.mark.parametrize(
    ("raw", "cell"),
    [
        ("a|b", "a|b"),
        ("<b>x</b>", "&lt;b&gt;x&lt;/b&gt;"),
        ("*em* _u_ [l](http://x)", "*em* _u_ [l](http://x)"),
        ("tick ` in", "tick ` in"),
    ],
)
def test_md_text_renders_verbatim(raw: str, cell: str) -> None:
    html = MD.render(f"| h |\n|---|\n| {md_text(raw)} |\n")
    assert f"<td>{cell}</td>" in html


def test_baseline_from_the_store_by_run_id(tiny_run_dir: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    from perfkit.store.api import store_run

    db = tmp_path / "store.db"
    base_id = store_run(tiny_run_dir, str(db))
    slow = tmp_path / "slow"
    shutil.copytree(tiny_run_dir, slow)
    record = json.loads((slow / "run.json").read_text())
    record["run_id"] = "candidate-1"
    first = next(p for p in record["points"] if p["status"] == "ok")
    first["measurement"]["samples_s"] = [s * 3.0 for s in first["measurement"]["samples_s"]]
    (slow / "run.json").write_text(json.dumps(record))
    assert main(["report", str(slow), "--vs", base_id[:12], "--db", str(db), "--format", "md", "--no-kernels"]) == 0
    text = capsys.readouterr().out
    assert f"### Compared with {md_text(base_id)}" in text
    assert "**3 regressed**" in text
