"""The key columns of the dashboard's tables (metric, verdict / gate, change) are on screen at
1400 x 900 in a real browser (Debian chromium), whatever the length of the point labels before
which they used to sit. A Streamlit table is a canvas: the test clicks pixels of its first row
across the visible part of the window and reads which column each click selected (the grid's
accessible cell, `aria-colindex`), so a column found is one drawn inside the viewport."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.dashboard.test_browser import ARGS, CHROMIUM, serve, settle

WIDTH, HEIGHT = 1400, 900
STEP_PX = 40
SELECTED = "(t) => [...t.querySelectorAll('[aria-selected=true]')].map(e => e.getAttribute('aria-colindex'))"
HEADERS = "(t) => Object.fromEntries([...t.querySelectorAll('th')].map(e => [e.getAttribute('aria-colindex'), e.textContent]))"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium (apt-get install chromium)"),
]


def visible_columns(page: Any, table: Any, wanted: set[str]) -> tuple[set[str], dict[str, float]]:
    """The columns under pixels of the table's first row inside the viewport (until `wanted` are
    all found), and the table's box."""
    table.scroll_into_view_if_needed()
    box = table.bounding_box()
    headers = table.evaluate(HEADERS)
    found: set[str] = set()
    y = box["y"] + 54  # the first row, under the 35 px header
    x = box["x"] + 44  # past a row-selection table's checkbox column (a click there opens the row)
    while x < min(box["x"] + box["width"], WIDTH) and not wanted <= found:
        page.mouse.click(x, y)
        page.wait_for_timeout(400)
        found |= {headers.get(c, "") for c in table.evaluate(SELECTED)}
        x += STEP_PX
    return found, box


LONG = "serving/chat-with-a-long-workload-name/concurrency=16 input_len=2048 output_len=512 rate=inf dataset=sharegpt"


def long_named_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Two commits of three metrics whose point keys are long, 30% slower in the second (10 runs
    each, so the gate decides): the point column is wide."""
    from perfkit.cli import main

    db = tmp_path / "long.db"
    monkeypatch.setenv("PERFKIT_DB", str(db))
    monkeypatch.setenv("PERFKIT_HOME", str(tmp_path / "home"))
    rng = np.random.default_rng(0)
    for c, (commit, level) in enumerate((("c1aaaa", 1.0), ("c2bbbb", 1.3))):
        rows = ["commit,metric,value,unit,direction,gpu,timestamp,branch"]
        rows += [f"{commit},{LONG}-{m}:ttft_p50_s,{level * (1 + 0.01 * rng.standard_normal()):.6g},s,lower,H100,"
                 f"2026-01-0{c + 1}T00:00:{i:02d}Z,main" for m in range(3) for i in range(10)]
        (tmp_path / f"{commit}.csv").write_text("\n".join(rows) + "\n")
        assert main(["ingest", "--format", "csv", str(tmp_path / f"{commit}.csv")]) == 0
    return f"sqlite:///{db}"


@pytest.mark.slow
def test_key_columns_are_on_screen_at_1400_px(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from playwright.sync_api import sync_playwright

    store = long_named_store(tmp_path, monkeypatch)

    # (page, a column the table is found by, its key columns); the grid lists only the columns it draws
    pages = [("/compare", "point", {"metric", "verdict", "change"}),
             ("/", "point", {"metric", "gate", "change"})]
    seen = {}
    with serve(store, tmp_path / "runs", tmp_path) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
            for path, marker, wanted in pages:
                page.goto(url + path)
                settle(page, tables=1)
                page.wait_for_timeout(500)
                tables = [t for t in page.locator('[data-testid="stDataFrame"]').all()
                          if marker in t.evaluate(HEADERS).values()]
                assert tables, f"{path}: no table with a {marker!r} column"
                found, box = visible_columns(page, tables[0], wanted)
                seen[path] = (found, wanted, box)
        finally:
            browser.close()
    for path, (found, wanted, box) in seen.items():
        assert wanted <= found, f"{path}: {sorted(wanted - found)} not on screen at {WIDTH} px (saw {sorted(found)})"
        assert box["x"] >= 0 and box["x"] < WIDTH
