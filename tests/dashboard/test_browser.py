"""The dashboard in a real browser: `perfkit dashboard` on the seeded store, every page loaded in
headless Debian chromium (playwright), charts waited for and checked, screenshots written to
test-artifacts/."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
IDLE = ("document.querySelector('[data-testid=stStatusWidget]') === null"
        " && document.querySelectorAll('[data-testid=stSkeleton]').length === 0"
        " && document.querySelector('h1') !== null")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium (apt-get install chromium)"),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def listening_addresses(port: int) -> set[str]:
    """Local addresses with a socket listening on `port` (from /proc/net/tcp and tcp6)."""
    out = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.rsplit(":", 1)
            if int(hex_port, 16) == port and state == "0A":  # LISTEN
                out.add(address)
    return out


@pytest.fixture
def server(seeded: Any, tmp_path: Path) -> Iterator[str]:
    port = free_port()
    log = (tmp_path / "dashboard.log").open("w")
    env = {**os.environ, "PERFKIT_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen([sys.executable, "-m", "perfkit", "dashboard", "--db", seeded.url, "--port", str(port),
                             "--runs", str(seeded.runs_root)], stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp_path)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                pass
            assert proc.poll() is None, (tmp_path / "dashboard.log").read_text()
            assert time.monotonic() < deadline, "the dashboard did not answer within 120 s"
            time.sleep(0.5)
        assert listening_addresses(port) == {"0100007F"}  # 127.0.0.1 only
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
    deadline = time.monotonic() + 15
    while listening_addresses(port) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not listening_addresses(port), "the streamlit server outlived `perfkit dashboard`"


def settle(page: Any, charts: int = 0, tables: int = 0) -> None:
    """Wait until the script finished and the charts and tables drew; the first load may show
    skeletons."""
    for attempt in range(2):
        try:
            page.wait_for_function(IDLE, timeout=90_000)
            if charts:
                page.wait_for_function(f"document.querySelectorAll('.js-plotly-plot .main-svg').length >= {charts}",
                                       timeout=30_000)
            if tables:
                page.wait_for_function(
                    f"document.querySelectorAll('[data-testid=\"stDataFrame\"]').length >= {tables}",
                    timeout=30_000)
            return
        except Exception:
            if attempt:
                raise
            page.reload()


def marks(page: Any) -> int:
    """Points, bars and lines drawn in the page's plotly charts."""
    return int(page.eval_on_selector_all(
        ".js-plotly-plot", "els => els.reduce((n, e) => n + e.querySelectorAll("
        "'.scatterlayer .point, .bars path, .scatterlayer .js-line').length, 0)"))


@pytest.mark.slow
def test_every_page_renders_in_chromium(server: str, seeded: Any) -> None:
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    metric = f"{seeded.regressed_key}:time_s"
    pages = [
        ("overview", "/", 0, 3),
        ("history", f"/history?metric={urllib.request.quote(metric)}", 1, 0),
        ("compare", f"/compare?run={seeded.cpu_runs[-1]}&base={seeded.cpu_runs[8]}", 1, 1),
        ("roofline", f"/roofline?run={seeded.h100_runs[-1]}", 1, 0),
        ("kernels", f"/kernels?run={seeded.h100_runs[-1]}", 1, 0),
        ("run", f"/run?run={seeded.cpu_runs[-1]}", 0, 2),
    ]
    dialogs: list[str] = []
    seen: dict[str, dict[str, Any]] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            for name, path, charts, tables in pages:
                page.goto(server + path)
                settle(page, charts, tables)
                page.wait_for_timeout(500)
                seen[name] = {
                    "title": page.inner_text("h1"),
                    "charts": page.locator(".js-plotly-plot").count(),
                    "marks": marks(page),
                    "tables": page.locator('[data-testid="stDataFrame"]').count(),
                    "errors": page.locator('[data-testid="stException"]').count(),
                    "ticks": page.eval_on_selector_all(".js-plotly-plot .ytick text", "e => e.map(t => t.textContent)"),
                    "text": page.inner_text("main"),
                }
                page.screenshot(path=str(ARTIFACTS / f"dashboard-{name}.png"), full_page=True)
            # a click on a run in the History chart opens that run
            page.goto(server + pages[1][1])
            settle(page, 1)
            box = page.locator(".js-plotly-plot .scatterlayer .trace .points path.point").nth(3).bounding_box()
            page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)  # plotly hit-tests it
            page.wait_for_url("**/run?run=*", timeout=60_000)
            settle(page)
            opened = page.url.split("run=")[1]
            page.screenshot(path=str(ARTIFACTS / "dashboard-history-click.png"), full_page=True)
        finally:
            browser.close()
    for name, info in seen.items():
        assert info["errors"] == 0, name
        assert "Demo data" not in info["text"]
    assert seen["overview"]["title"] == "Overview" and seen["overview"]["tables"] >= 3
    assert seen["history"]["marks"] >= 2 * 20  # every run of both GPUs
    assert "regression" in seen["history"]["text"]
    assert seen["compare"]["marks"] >= 6 and seen["compare"]["tables"] >= 1
    assert seen["roofline"]["marks"] >= 2
    assert seen["kernels"]["marks"] >= 2
    evil = [t for t in seen["kernels"]["ticks"] if "void gemm<float, 12" in t]
    assert len(evil) == 2 and all(t.endswith('("pwned")</script>') for t in evil)  # drawn as text
    assert dialogs == []  # no script from a kernel name ran
    assert seen["run"]["tables"] >= 2 and seen["run"]["title"] == "Run"
    assert opened in seeded.cpu_runs + seeded.h100_runs
