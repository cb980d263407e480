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
from contextlib import contextmanager
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


@contextmanager
def serve(db_url: str, runs_root: Path, tmp_path: Path, **env: str) -> Iterator[str]:
    """`perfkit dashboard` on a store, until the block ends; yields its URL."""
    port = free_port()
    log = (tmp_path / "dashboard.log").open("w")
    environ = {**os.environ, "PERFKIT_HOME": str(tmp_path / "home"), **env}
    proc = subprocess.Popen([sys.executable, "-m", "perfkit", "dashboard", "--db", db_url, "--port", str(port),
                             "--runs", str(runs_root)], stdout=log, stderr=subprocess.STDOUT, env=environ,
                            cwd=tmp_path)
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


@pytest.fixture
def server(seeded: Any, tmp_path: Path) -> Iterator[str]:
    with serve(seeded.url, seeded.runs_root, tmp_path) as url:
        yield url


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
    assert seen["compare"]["marks"] >= 2 and seen["compare"]["tables"] >= 1  # one mark per measurement
    assert seen["roofline"]["marks"] >= 2
    assert seen["kernels"]["marks"] >= 2
    evil = [t for t in seen["kernels"]["ticks"] if "void gemm<float, 12" in t]
    assert len(evil) == 2 and all(t.endswith('("pwned")</script>') for t in evil)  # drawn as text
    assert dialogs == []  # no script from a kernel name ran
    assert seen["run"]["tables"] >= 2 and seen["run"]["title"] == "Run"
    assert opened in seeded.cpu_runs + seeded.h100_runs


# Every kind of user string a page shows holds this: a bare URL, www., an e-mail, a Markdown link
# and image, HTML tags and Streamlit directives. None may become a link, image or markup.
PAYLOAD = ('see https://evil.example/bare www.evil.example me@evil.example [md-link](https://evil.example/md) '
           '![md-img](https://evil.example/i.png) <a href="https://evil.example/a">html-link</a> '
           '<img src="https://evil.example/h.png"> <b>bold-payload</b> :material/home: :red[red-payload]')
FOUND = """() => {
  const bad = [];
  for (const a of document.querySelectorAll('a'))
    if (/evil|md-link|html-link/.test((a.getAttribute('href') || '') + (a.getAttribute('xlink:href') || '')
                                      + a.textContent)) bad.push(a.outerHTML);
  for (const i of document.querySelectorAll('img, image'))
    if (/evil/.test((i.getAttribute('src') || '') + (i.getAttribute('href') || '') + (i.getAttribute('alt') || '')))
      bad.push(i.outerHTML);
  for (const b of document.querySelectorAll('b, strong, em, i, span[style*=color], h1, h2, h3, h4, h5, h6'))
    if (/bold-payload|red-payload/.test(b.textContent) && !/md-link/.test(b.textContent)) bad.push(b.outerHTML);
  for (const t of document.querySelectorAll('[data-testid=stIconMaterial]'))
    if (t.closest('main') && t.textContent === 'home') bad.push(t.outerHTML);
  return bad;
}"""


def payload_store(seeded: Any, root: Path) -> tuple[str, list[str], str]:
    """Two traced H100 runs re-filed with PAYLOAD in the spec name, branch, workload, a metric name,
    a kernel name and an NVTX range: (store URL, run ids, the payload metric's name)."""
    import gzip
    import json
    import shutil

    from perfkit.analyzers.for_run import write_run_tables
    from perfkit.store.api import store_run
    from perfkit.store.url import sqlite_url
    from tests.dashboard.conftest import write_kineto_trace

    url, made, metric = sqlite_url(root / "payload.db"), [], ""
    for i, source in enumerate(seeded.h100_runs[-2:]):
        run_id = f"payload-{i}"
        shutil.copytree(seeded.runs_root / source, root / "runs" / run_id)
        run_dir = root / "runs" / run_id
        record = json.loads((run_dir / "run.json").read_text())
        record["run_id"], record["spec"]["name"] = run_id, PAYLOAD
        record["env"]["git"]["branch"] = PAYLOAD
        traces = []
        for p in record["points"]:
            p["key"] = p["key"].replace("gemm/sq/", f"gemm/{PAYLOAD.replace('/', '|')}/")
            p["metrics"] = {PAYLOAD.replace(":", ";"): 1.0 + i}
            metric = f"{p['key']}:{PAYLOAD.replace(':', ';')}"
            if p["trace"]:
                path = write_kineto_trace(run_dir / p["trace"], [PAYLOAD, "ampere_sgemm_128x64_nn"], 1.0 + i)
                with gzip.open(path, "rt") as fh:
                    doc = json.load(fh)
                doc["traceEvents"].append({"ph": "X", "cat": "user_annotation", "name": PAYLOAD, "pid": 1, "tid": 1,
                                           "ts": 900.0, "dur": 5000.0, "args": {}})
                with gzip.open(path, "wt") as fh:
                    json.dump(doc, fh)
                traces.append(path)
        shutil.rmtree(run_dir / "analysis", ignore_errors=True)
        record["artifacts"]["analysis"] = write_run_tables(run_dir, traces)
        (run_dir / "run.json").write_text(json.dumps(record))
        store_run(run_dir, url)
        made.append(run_id)
    return url, made, metric


@pytest.mark.slow
def test_no_user_string_becomes_a_link_image_or_markup(seeded: Any, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    url, (base, cand), metric = payload_store(seeded, tmp_path)
    pages = ["/", "/overview", f"/history?metric={urllib.request.quote(metric)}&branch=(all)",
             f"/compare?run={cand}&base={base}", f"/roofline?run={cand}", f"/kernels?run={cand}", f"/run?run={cand}"]
    found: dict[str, list[str]] = {}
    texts: dict[str, str] = {}
    dialogs: list[str] = []
    with serve(url, tmp_path / "runs", tmp_path) as server, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            for path in pages:
                page.goto(server + path)
                settle(page)
                page.wait_for_timeout(1000)
                found[path] = page.evaluate(FOUND)
                texts[path] = page.inner_text("body").replace("\u2060", "")
                assert page.locator('[data-testid="stException"]').count() == 0, path
        finally:
            browser.close()
    assert {path: bad for path, bad in found.items() if bad} == {}
    assert dialogs == []
    for path in (pages[2], pages[-1]):  # shown as text there (elsewhere in tables): the check had something to find
        assert "bold-payload</b>" in texts[path] or "bold-payload<|b>" in texts[path], path
        assert "evil.example" in texts[path], path
    assert "<b>bold-payload</b>" in texts[pages[-1]] and "https://evil.example/bare" in texts[pages[-1]]
    assert "Page not found" not in texts["/overview"] and "Overview" in texts["/overview"]
    assert f"spec {PAYLOAD}" in texts[f"/run?run={cand}"]  # the spec name and branch, as written


@pytest.mark.slow
def test_serving_page_draws_in_chromium_with_hostile_strings_as_text(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    from perfkit.store.api import store_run
    from tests.helpers.serving_runs import serving_run

    url = f"sqlite:///{tmp_path / 'serving.db'}"
    store_run(serving_run("srv1", commit="beef001234567", speed=1.3), url)
    store_run(serving_run("srv2", hostile=True, created="2026-01-02T00:00:00+00:00"), url)  # newest: its stages show
    dialogs: list[str] = []
    ARTIFACTS.mkdir(exist_ok=True)
    with serve(url, tmp_path / "runs", tmp_path) as server, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(server + "/serving?workload=serving/chat")
            settle(page, 2, 1)
            page.wait_for_timeout(500)
            drawn, found, text = marks(page), page.evaluate(FOUND), page.inner_text("main").replace("\u2060", "")
            errors = page.locator('[data-testid="stException"]').count()
            page.screenshot(path=str(ARTIFACTS / "dashboard-serving.png"), full_page=True)
        finally:
            browser.close()
    assert errors == 0 and drawn > 0 and found == [] and dialogs == []
    assert "[x](http://evil)" in text and "alert(1)" in text  # the client's note, as text
