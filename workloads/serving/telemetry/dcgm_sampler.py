"""Scrape a DCGM exporter around a stage (`serve-bench --gpu-metrics URL`): energy by
telemetry/dcgm.py from the scrape before and the one after, or, when the exporter serves no energy
counter, from its power gauge sampled every `interval_s` in a thread while the stage runs.

Each scrape has a timeout (TIMEOUT_S) and a size limit (MAX_BODY_BYTES); a scrape that fails,
times out or is too large leaves energy "not measured" with the reason and never fails the stage.
"""

from __future__ import annotations

import contextlib
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from perfkit.workloads.serving.telemetry.dcgm import (
    COUNTER,
    ENERGY,
    POWER,
    POWER_SOURCE,
    Readings,
    StageEnergy,
    counter_energy,
    power_energy,
    readings,
)

TIMEOUT_S = 5.0
MAX_BODY_BYTES = 4 << 20  # dcgm-exporter's page is tens of kB per GPU
INTERVAL_S = 0.25
MAX_SAMPLES = 20_000


def shown_url(url: str) -> str:
    """The URL without credentials, query or fragment (it goes into notes)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    return f"{parts.scheme}://{host}{f':{parts.port}' if parts.port else ''}{parts.path}"


def fetch(url: str, timeout_s: float = TIMEOUT_S, max_bytes: int = MAX_BODY_BYTES) -> str:
    """The exporter's text; raises OSError / ValueError with a readable message."""
    if urlsplit(url).scheme not in ("http", "https"):
        raise ValueError("not an http(s) URL")
    with urllib.request.urlopen(url, timeout=timeout_s) as resp:
        body = resp.read(max_bytes + 1)
    if len(body) > max_bytes:
        raise ValueError(f"body over {max_bytes} bytes")
    return body.decode("utf-8", "replace")


@dataclass
class DcgmStage:
    url: str
    gpus: tuple[str, ...] = ()
    result: StageEnergy | None = None
    _power: list[tuple[float, Readings]] = field(default_factory=list)
    _failed: str = ""

    def scrape(self) -> str | None:
        try:
            return fetch(self.url)
        except (OSError, ValueError, urllib.error.URLError) as exc:
            why = str(getattr(exc, "reason", "") or exc)[:200]
            self._failed = self._failed or f"{shown_url(self.url)}: {type(exc).__name__} ({why})"
            return None


def _no(source: str, reason: str) -> StageEnergy:
    return StageEnergy(None, source, reason)


@contextlib.contextmanager
def dcgm_energy(url: str, gpus: Sequence[str] = (), interval_s: float = INTERVAL_S) -> Iterator[DcgmStage]:
    """Energy of the exporter's (chosen) GPUs over the block, in `.result` once it ends."""
    out = DcgmStage(url, tuple(gpus))
    t0 = time.monotonic()
    first = out.scrape()
    before = readings(first, ENERGY, out.gpus) if first is not None else out._failed
    stop = threading.Event()
    thread = None
    if isinstance(before, str) and first is not None:  # no counter: sample the power gauge
        thread = threading.Thread(target=_sample_power, args=(out, first, t0, interval_s, stop), daemon=True,
                                  name="perfkit-dcgm-power")
        thread.start()
    try:
        yield out
    finally:
        stop.set()
        if thread is not None:
            thread.join(timeout=TIMEOUT_S + 1.0)
        out.result = _result(out, before, first is not None, t0)


def _sample_power(out: DcgmStage, first: str, t0: float, interval_s: float, stop: threading.Event) -> None:
    text: str | None = first
    t = t0
    while text is not None and len(out._power) < MAX_SAMPLES:
        got = readings(text, POWER, out.gpus)
        if isinstance(got, str):
            out._failed = out._failed or got
            return
        out._power.append((t - t0, got))
        if stop.wait(interval_s):
            break
        t, text = time.monotonic(), out.scrape()
    if text is None:
        return
    t, last = time.monotonic(), out.scrape()  # the stage's end
    got = readings(last, POWER, out.gpus) if last is not None else out._failed
    if isinstance(got, str):
        out._failed = out._failed or got
    else:
        out._power.append((t - t0, got))


def _result(out: DcgmStage, before: Readings | str, reached: bool, t0: float) -> StageEnergy:
    if not reached:
        return _no(COUNTER, f"exporter unreachable: {before}")
    if isinstance(before, dict):  # the counter path
        last = out.scrape()
        window_s = time.monotonic() - t0
        if last is None:
            return _no(COUNTER, f"exporter unreachable after the stage: {out._failed}")
        after = readings(last, ENERGY, out.gpus)
        if isinstance(after, str):
            return _no(COUNTER, f"after the stage: {after}")
        return counter_energy(before, after, window_s)
    if out._failed:
        return _no(POWER_SOURCE, f"{before}, and the power gauge: {out._failed}")
    return power_energy(out._power)
