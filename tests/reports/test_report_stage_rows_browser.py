"""The HTML report's serving stage table in chromium: its first stage row is visible, not under
the table's header (a sticky header inside the table's scroll box sat 36 px down, over it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfkit.reports.html.data import gather
from perfkit.reports.html.page import render_html
from tests.helpers.serving_runs import serving_run
from tests.reports.test_report_browser import ARGS, CHROMIUM

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium (apt-get install chromium)"),
]

FIRST_ROW = """() => {
  const box = document.querySelector('#serving .scroll table');
  const row = box.querySelector('tbody tr').getBoundingClientRect();
  const head = box.querySelector('thead').getBoundingClientRect();
  const hit = document.elementFromPoint(row.left + 5, row.top + row.height / 2);
  return {rowTop: row.top, headBottom: head.bottom, inRow: !!hit && !!hit.closest('tbody')};
}"""


@pytest.mark.slow
def test_the_first_stage_row_is_not_under_the_header(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    report = tmp_path / "serving.html"
    report.write_text(render_html(gather(serving_run(), None, with_roofline=False, with_kernels=False)))
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_context(viewport={"width": 1400, "height": 1000}, offline=True).new_page()
            page.goto(report.as_uri())
            page.eval_on_selector("#serving .scroll", "el => el.scrollIntoView()")
            seen = page.evaluate(FIRST_ROW)
        finally:
            browser.close()
    assert seen["rowTop"] >= seen["headBottom"] - 0.5, seen
    assert seen["inRow"], seen
