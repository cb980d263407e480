"""A DCGM exporter for tests: a real HTTP server on 127.0.0.1 serving the layout of
tests/data/serving/dcgm/dcgm-exporter-3gpu.prom with scripted values.

`page(n)` gives the n-th scrape's body (n counts from 0); tests script counters that advance by
known amounts between the first scrape and the later ones, constant power, and hostile pages.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "serving" / "dcgm" / "dcgm-exporter-3gpu.prom"
ENERGY, POWER = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_POWER_USAGE"


def with_values(text: str, name: str, values: dict[str, str] | None) -> str:
    """The sample with `name`'s value per GPU index replaced; None drops `name`'s lines."""
    out = []
    for line in text.split("\n"):
        if line.startswith(name) or (line.startswith("#") and f" {name} " in line):
            if values is None:
                continue
            gpu = re.search(r'gpu="(\d+)"', line)
            if gpu and gpu.group(1) in values:
                line = line.rsplit(" ", 1)[0] + " " + values[gpu.group(1)]
        out.append(line)
    return "\n".join(out)


@contextlib.contextmanager
def exporter(page: Callable[[int], str | bytes], status: int = 200) -> Iterator[tuple[str, list[int]]]:
    """(its /metrics URL, a one-item list counting the scrapes served)."""
    count = [0]

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            n = count[0]
            count[0] += 1
            body = page(n)
            data = body.encode() if isinstance(body, str) else body
            self.send_response(status)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/metrics", count
    finally:
        server.shutdown()
        server.server_close()
