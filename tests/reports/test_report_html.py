"""`perfkit report --format html`: self-contained, figures inline, every trace string escaped."""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from perfkit.cli import main
from perfkit.core.record import load_run
from perfkit.reports.html.data import gather
from perfkit.reports.html.page import render_html


class Doc(HTMLParser):
    """Script bodies, external references and the visible text of an HTML document."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.scripts: list[str] = []
        self.external: list[str] = []
        self.text: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("src", "href") and value and re.match(r"^(https?:)?//", value):
                self.external.append(value)
        if tag == "script":
            self._in_script = True
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data
        else:
            self.text.append(data)


def parse(html: str) -> Doc:
    doc = Doc()
    doc.feed(html)
    doc.close()
    return doc


def test_report_is_self_contained_with_inline_figures(tiny_run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    assert main(["report", str(tiny_run_dir), "--out", str(out)]) == 0
    html = out.read_text()
    doc = parse(html)
    assert doc.external == []  # no CDN, no remote stylesheet: opens offline
    assert "Plotly" in doc.scripts[0] and len(doc.scripts[0]) > 1_000_000  # plotly.js inline, once
    figures = html.count('class="plotly-graph-div"')
    assert figures >= 2  # timing samples + roofline
    assert len(doc.scripts) == 1 + figures  # plotly.js, then one plot call per figure
    run = load_run(tiny_run_dir)
    text = " ".join(doc.text)
    assert run.run_id in text
    assert "sq m=32 dtype=fp32" in text and "sq m=64 dtype=fp32" in text
    assert "tf32 is a CUDA tensor-core math mode" in text  # skipped points are listed with why
    # every ok point's raw samples are in the samples figure
    ok = [p for p in run.points if p.status == "ok"]
    assert html.count('"type":"box"') == len(ok)


def test_default_output_is_report_html_in_the_run_directory(tiny_run_dir: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(tiny_run_dir, run_dir)
    assert main(["report", str(run_dir / "run.json"), "--no-kernels"]) == 0
    assert capsys.readouterr().out.strip() == str(run_dir / "report.html")
    assert (run_dir / "report.html").stat().st_size > 1_000_000


def test_kernel_names_render_as_text(tiny_run_dir: Path, tmp_path: Path, evil_kernel: str, traced_copy: Any) -> None:
    EVIL_KERNEL = evil_kernel
    run_dir = traced_copy(tiny_run_dir, tmp_path / "gpu", [EVIL_KERNEL, "ampere_sgemm_128x64_nn"])
    data = gather(load_run(run_dir), run_dir)
    assert data.kernels is not None and set(data.kernels.summary["name"]) == {EVIL_KERNEL, "ampere_sgemm_128x64_nn"}
    html = render_html(data, plotly_js="/* plotly.js */")
    doc = parse(html)
    assert "<script>alert" not in html and "</script><script>" not in html
    figures = html.count('class="plotly-graph-div"')
    assert len(doc.scripts) == 1 + figures  # the kernel name opened no script element
    assert not any("alert(" in s and "pwned" in s and "&lt;" not in s for s in doc.scripts)
    text = "".join(doc.text)
    assert EVIL_KERNEL in text  # shown verbatim as text in the kernel table
    # the kernel figure labels carry the name entity-escaped (plotly draws entities as text)
    assert "&lt;/script&gt;&lt;script&gt;alert" in html


def test_comparison_section_shows_verdicts(tiny_run_dir: Path, tmp_path: Path, steady: Any) -> None:
    base = steady(tiny_run_dir, tmp_path / "base", "base-run", seed=1)
    slow = steady(tiny_run_dir, tmp_path / "slow", "slow-run", scale={0: 3.0}, seed=2)
    out = tmp_path / "cmp.html"
    assert main(["report", str(slow), "--vs", str(base), "--out", str(out), "--no-kernels"]) == 0
    html = out.read_text()
    text = " ".join(parse(html).text)
    assert "Comparison" in text and "base-run" in text
    # one measurement (the slowed point's time, flop/s and bytes/s are one), as the gate counts it
    assert "1 regressed" in text and "measurements compared 2" in text
    assert len(re.findall(r">regressed</span>", html)) == 1
    assert re.search(r"\+19\d%|\+20\d%", text)  # about +200% (3x, with 2% noise), 3 significant digits


def test_roofline_against_a_datasheet_roof(tiny_run_dir: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "h100"
    shutil.copytree(tiny_run_dir, run_dir)
    record = json.loads((run_dir / "run.json").read_text())
    record["device"] = "cuda"
    record["env"]["device"] = {"name": "NVIDIA H100 80GB HBM3"}
    record["env"]["gpus"] = [{"name": "NVIDIA H100 80GB HBM3", "driver": "550.54"}]
    record["env"].pop("roofline", None)  # the profile's roofline snapshot names the real CPU
    (run_dir / "run.json").write_text(json.dumps(record))
    data = gather(load_run(run_dir), run_dir, with_kernels=False)
    assert data.roofline is not None and "datasheet" in data.roofline.roofs
    text = " ".join(parse(render_html(data, plotly_js="")).text)
    assert "% of datasheet roof" in text and "NVIDIA H100 80GB HBM3" in text


@pytest.mark.parametrize("args", [["/no/such/run"], ["{run}", "--vs", "/no/such/base"]])
def test_missing_runs_are_bad_input(args: list[str], tiny_run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["report", *[a.format(run=tiny_run_dir) for a in args]]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("perfkit: error: ") and "/no/such/" in err and "\n" not in err
