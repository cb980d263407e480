"""The HTML report in a real browser (Debian chromium), offline: figures draw, names stay text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from perfkit.core.record import load_run
from perfkit.reports.html.data import gather
from perfkit.reports.html.page import render_html

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium (apt-get install chromium)"),
]


@pytest.mark.slow
def test_report_opens_offline_and_draws_every_figure(tiny_run_dir: Path, tmp_path: Path, evil_kernel: str,
                                                    traced_copy: Any) -> None:
    from playwright.sync_api import sync_playwright

    run_dir = traced_copy(tiny_run_dir, tmp_path / "gpu", [evil_kernel, "ampere_sgemm_128x64_nn"])
    html = render_html(gather(load_run(run_dir), run_dir))
    figures = html.count('class="plotly-graph-div"')
    report = tmp_path / "report.html"
    report.write_text(html)
    ARTIFACTS.mkdir(exist_ok=True)
    dialogs: list[str] = []
    requests: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000}, offline=True)
            page = context.new_page()
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(report.as_uri())
            page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
            page.wait_for_function(f"document.querySelectorAll('.js-plotly-plot .main-svg').length >= {figures}",
                                   timeout=30_000)
            drawn = page.eval_on_selector_all(".js-plotly-plot", "els => els.map(e => e.querySelectorAll('.point, .bars path, .boxes path').length)")
            body = page.inner_text("body")
            page.screenshot(path=str(ARTIFACTS / "report-offline.png"), full_page=True)
        finally:
            browser.close()
    assert figures >= 3  # samples, roofline, kernels
    assert len(drawn) == figures and all(n > 0 for n in drawn)  # every figure drew marks
    assert dialogs == []  # the <script> in the kernel name never ran
    assert [u for u in requests if not u.startswith("file:")] == []  # nothing fetched: offline
    assert evil_kernel in body  # the kernel name is on the page, as text


@pytest.mark.slow
def test_serving_section_draws_offline_and_its_strings_stay_text(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    from tests.helpers.serving_runs import EVIL_NOTE, serving_run

    html = render_html(gather(serving_run(hostile=True), None, with_roofline=False, with_kernels=False))
    report = tmp_path / "serving.html"
    report.write_text(html)
    dialogs: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_context(viewport={"width": 1300, "height": 900}, offline=True).new_page()
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(report.as_uri())
            page.wait_for_function("document.querySelectorAll('#serving .js-plotly-plot .main-svg').length >= 2",
                                   timeout=30_000)
            drawn = page.eval_on_selector_all("#serving .js-plotly-plot", "els => els.map(e => e.querySelectorAll('.point').length)")
            text = page.inner_text("#serving")
            links = page.eval_on_selector_all("#serving a", "els => els.length")
        finally:
            browser.close()
    assert len(drawn) == 2 and all(n > 0 for n in drawn)
    assert dialogs == [] and links == 0
    assert EVIL_NOTE.split(" \x1b")[0] in text  # the note's markup and link, as text
