"""`perfkit report RUN --vs BASE` draws the baseline beside the candidate: in a real browser
(Debian chromium, offline), the timing-samples figure of two real runs has a grey baseline box
and a candidate box for every point, and the serving figures a baseline and a candidate line,
each with its marks drawn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from perfkit.cli import main
from perfkit.reports.html.data import gather
from perfkit.reports.html.page import render_html

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
TRACES = """() => [...document.querySelectorAll('.js-plotly-plot')].map(e => ({
  section: e.closest('section') ? e.closest('section').id : '',
  names: e.data.map(t => t.name || ''),
  boxes: e.querySelectorAll('.boxlayer .trace').length,
  lines: [...e.querySelectorAll('.scatterlayer .trace')].map(t => t.querySelectorAll('.point').length)}))"""

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium (apt-get install chromium)"),
]


def drawn(report: Path) -> list[dict[str, Any]]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_context(viewport={"width": 1400, "height": 900}, offline=True).new_page()
            page.goto(report.as_uri())
            page.wait_for_function("document.querySelectorAll('.js-plotly-plot .main-svg').length >= 1",
                                   timeout=30_000)
            page.wait_for_timeout(300)
            return list(page.evaluate(TRACES))
        finally:
            browser.close()


@pytest.mark.slow
def test_report_vs_draws_the_baseline_samples_beside_the_candidate(tiny_run_dir: Path, tmp_path: Path,
                                                                    steady: Any) -> None:
    base = steady(tiny_run_dir, tmp_path / "base", "base-run", seed=1)
    slow = steady(tiny_run_dir, tmp_path / "slow", "slow-run", scale={0: 3.0}, seed=2)
    out = tmp_path / "report.html"
    assert main(["report", str(slow), "--vs", str(base), "--format", "html", "--no-kernels", "--out", str(out)]) == 0
    (samples,) = [f for f in drawn(out) if f["section"] == "points"]
    assert samples["names"] == ["baseline base-run", "candidate slow-run"]
    assert samples["boxes"] == 2  # one box trace per side, a box per point in each


@pytest.mark.slow
def test_serving_figures_draw_the_baseline_line(tmp_path: Path) -> None:
    from tests.helpers.serving_runs import serving_run

    base, cand = serving_run("srv1"), serving_run("srv2", commit="beef00", speed=1.3)
    out = tmp_path / "serving.html"
    out.write_text(render_html(gather(cand, None, base=base, with_roofline=False, with_kernels=False)))
    figures = [f for f in drawn(out) if f["section"] == "serving"]
    assert len(figures) == 2
    for f in figures:
        sides = [n for n in f["names"] if n.startswith(("baseline", "candidate"))]
        assert any(n.startswith("baseline") and "srv1" in n for n in sides)
        assert any(n.startswith("candidate") and "srv2" in n for n in sides)
        assert sum(1 for n in f["lines"] if n > 0) >= 2  # both sides drew their stages
