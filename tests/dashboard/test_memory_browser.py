"""The Memory page in headless chromium (`perfkit dashboard` as a user starts it): a run's real
CPU memory profile drawn (timeline), its tables shown, a stage named with markup shown as text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.dashboard.test_browser import ARGS, ARTIFACTS, CHROMIUM, marks, serve, settle
from tests.dashboard.test_memory_page import make_memory_run

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium (apt-get install chromium)"),
]


@pytest.mark.slow
def test_memory_page_draws_in_chromium(tmp_path: Path) -> None:
    pytest.importorskip("playwright")
    pytest.importorskip("torch")
    from playwright.sync_api import sync_playwright

    db, root, _, _ = make_memory_run(tmp_path)
    ARTIFACTS.mkdir(exist_ok=True)
    dialogs: list[str] = []
    with serve(db, root, tmp_path) as server, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            def dismiss(d: Any) -> None:
                dialogs.append(d.message)
                d.dismiss()

            page.on("dialog", dismiss)
            page.goto(server + "/memory?run=mem1")
            settle(page, 1, 3)
            page.wait_for_timeout(500)
            drawn = marks(page)
            errors = page.locator('[data-testid="stException"]').count()
            bold = page.locator("main b").all_inner_texts()
            text = page.inner_text("main").replace("\u2060", "")
            page.screenshot(path=str(ARTIFACTS / "dashboard-memory.png"), full_page=True)
        finally:
            browser.close()
    assert errors == 0 and drawn > 0 and dialogs == []
    assert "Alive at the peak" in text and "Fragmentation" in text and "Categories" in text
    assert "x" not in bold  # the stage "<b>x</b>..." never became markup
