"""One load stage as another serving benchmark measured it, in perfkit's records and names."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from perfkit.core.bounded import INT64_MAX
from perfkit.core.finite import finite_float
from perfkit.ingest.serving.boundary import MAX_TIME_S
from perfkit.workloads.serving.records import RequestRecord

SOURCES = ("vllm", "aiperf", "guidellm")


@dataclass(frozen=True)
class IngestedStage:
    """A stage (one load level) read from a vLLM, AIPerf or GuideLLM result file.

    `requests` are rebuilt from the file's per-request data (empty when the file has none):
    times in seconds relative to the stage's first scheduled arrival, like the records perfkit's
    own client writes. `summary` is the tool's own aggregate numbers under perfkit's names, in
    seconds, tokens and 1/s (the table of names is in each source's module docstring);
    `definitions` says, for the summary keys whose tool definition differs from perfkit's, how
    the tool defines them. `notes` say what was assumed, dropped or missing. `info` holds what
    the file says about the run as text: model, tool version, start time (`date`, vLLM's
    "%Y%m%d-%H%M%S"; `start_time`, ISO 8601 or Unix seconds) and `endpoint` where given.
    """

    source: str  # "vllm" | "aiperf" | "guidellm"
    path: str  # the file it was read from
    name: str  # e.g. "poisson rate=4/s concurrency=8"
    index: int = 0  # position of the stage in the file
    strategy: str | None = None  # the tool's word for the load shape (poisson, concurrent, ...)
    concurrency: int | None = None  # the cap on requests in flight, when one was set
    request_rate_per_s: float | None = None  # the target arrival rate (None: as fast as allowed)
    burstiness: float | None = None  # gamma shape of the arrival gaps (1: Poisson)
    duration_s: float | None = None  # the tool's own stage duration
    requests: tuple[RequestRecord, ...] = ()
    summary: dict[str, float] = field(default_factory=dict)
    definitions: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    info: dict[str, str] = field(default_factory=dict)  # model, tool version, date, endpoint: as given
    files: tuple[str, ...] = ()  # every file read for it (AIPerf: the records and the summary)


def stage_name(strategy: str | None, concurrency: int | None, rate: float | None,
               burstiness: float | None = None) -> str:
    """A short label: "poisson rate=4/s concurrency=8", "concurrent concurrency=16", ..."""
    parts = [strategy] if strategy else []
    if rate is not None:
        parts.append(f"rate={rate:g}/s")
    if burstiness is not None and burstiness != 1.0:
        parts.append(f"burstiness={burstiness:g}")
    if concurrency is not None:
        parts.append(f"concurrency={concurrency}")
    return " ".join(parts) or "stage"


def stat_name(stat: str) -> str | None:
    """A tool's statistic name as perfkit's: avg/mean -> mean, median/p50 -> p50, std_dev -> std,
    p99.9 -> p99_9; None for one perfkit does not keep."""
    s = stat.lower()
    if s in ("avg", "mean"):
        return "mean"
    if s in ("median", "p50"):
        return "p50"
    if s in ("std", "std_dev", "stddev"):
        return "std"
    if s in ("min", "max"):
        return s
    whole, dot, frac = s[1:].partition(".")
    if not s.startswith("p") or not whole.isdigit() or (dot and not frac.isdigit()):
        return None
    frac = frac.rstrip("0")
    return f"p{int(whole)}_{frac}" if frac else f"p{int(whole)}"


def put(summary: dict[str, float], key: str, value: object, scale: float = 1.0) -> None:
    """Store a finite number (scaled) under `key`; anything else (a time, `*_s`, past MAX_TIME_S) is left out."""
    number = finite_float(value)
    if number is None or not math.isfinite(number * scale):
        return
    if key.endswith("_s") and abs(number * scale) > MAX_TIME_S:  # a time past 300 years: no stage's
        return
    summary[key] = number * scale


def positive_int(value: object) -> int | None:
    """A whole number > 0 (a concurrency, a stream count), else None."""
    number = finite_float(value)
    if number is None or number <= 0 or number != int(number) or number > INT64_MAX:
        return None
    return int(number)


def definitions_for(summary: dict[str, float], definitions: dict[str, str]) -> dict[str, str]:
    """The tool's definition of each summary key whose metric (the longest matching name in
    `definitions`: "token_itl" for "token_itl_p99_s") is defined differently from perfkit's."""
    out = {}
    for key in sorted(summary):
        matches = [m for m in definitions if key == m or key.startswith(m + "_")]
        if matches:
            out[key] = definitions[max(matches, key=len)]
    return out
