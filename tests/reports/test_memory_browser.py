"""The `perfkit memory --html` page in a real browser (Debian chromium), offline: the script
draws the timeline and the segment map, fills the peak table, and names stay text."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest

from perfkit.cli import main

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
EVIL = "<img src=x onerror=alert(1)></script>"
MiB = 1 << 20

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium (apt-get install chromium)"),
]


def _snapshot(path: Path) -> Path:
    frames = [{"name": EVIL, "filename": "m.py", "line": 1}]
    trace = [{"action": "alloc", "addr": i * MiB, "size": MiB, "time_us": 10 * i, "frames": frames} for i in range(6)]
    trace += [{"action": "free_requested", "addr": 0, "size": MiB, "time_us": 100},
              {"action": "free_completed", "addr": 0, "size": MiB, "time_us": 101}]
    blocks = [{"size": MiB, "state": "inactive"}] + [
        {"size": MiB, "state": "active_allocated", "requested_size": MiB, "frames": frames} for _ in range(5)]
    path.write_bytes(pickle.dumps({"segments": [{"device": 0, "address": 0, "total_size": 6 * MiB, "blocks": blocks}],
                                   "device_traces": [trace]}))
    return path


@pytest.mark.slow
def test_memory_page_renders_offline(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    out = tmp_path / "memory.html"
    assert main(["memory", str(_snapshot(tmp_path / "s.pickle")), "--html", str(out), "--format", "json"]) == 0
    dialogs: list[str] = []
    requests: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_context(offline=True).new_page()
            def on_dialog(dialog: Any) -> None:
                dialogs.append(dialog.message)
                dialog.dismiss()

            page.on("dialog", on_dialog)
            page.on("request", lambda r: requests.append(r.url))
            page.goto(out.as_uri())
            page.wait_for_selector("#timeline-svg polyline", state="attached", timeout=30_000)
            series = page.eval_on_selector_all("#timeline-svg polyline", "els => els.map(e => e.dataset.series)")
            status = page.inner_text("#timeline-status")
            rows = page.eval_on_selector_all("#alive-body tr", "rows => rows.map(r => r.innerText)")
            rects = page.eval_on_selector_all("#segment-svg rect", "els => els.length")
            # the time-range filter redraws a part
            page.eval_on_selector("#range-lo", "e => { e.value = 600; e.dispatchEvent(new Event('input')); }")
            narrowed = page.inner_text("#timeline-status")
        finally:
            browser.close()
    assert sorted(series) == ["active", "allocated", "reserved"]
    assert status.startswith("8 points drawn")  # every event: fewer than the sampling limit
    assert len(rows) == 6 and all(EVIL in r for r in rows)  # the name is text, not markup
    assert rects == 6
    assert narrowed != status and "points drawn" in narrowed
    assert dialogs == [] and [u for u in requests if not u.startswith("file:")] == []
