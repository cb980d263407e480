"""The server's Prometheus metrics, named as vLLM's with the prefix `perfkit:` (text exposition 0.0.4).

Gauges (read from the engine when scraped): num_requests_running, num_requests_waiting,
kv_cache_usage_perc (a fraction 0..1, as vLLM's). Counters: prompt_tokens_total (at admission),
generation_tokens_total (as tokens are written), request_success_total{finished_reason="length"}
(when a request's last token was written). Histograms: time_to_first_token_seconds (request
arrival -> first token written, queueing included) and inter_token_latency_seconds (each gap
between chunks, divided among the chunk's k tokens: k observations of gap / k). With simulated
speculative decoding: spec_decode_num_drafts_total, spec_decode_num_draft_tokens_total,
spec_decode_num_accepted_tokens_total and spec_decode_num_accepted_tokens_per_pos_total{position}.
Every sample carries model_name, as vLLM's do.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field

from perfkit.workloads.serving.server.engine import EngineLoad
from perfkit.workloads.serving.server.spec_decode import SpecDecodeCounters

PREFIX = "perfkit:"
# vLLM's bucket bounds (seconds), with finer ITL buckets below 10 ms for fast synthetic servers
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
                7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
ITL_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
               0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0)


@dataclass
class Histogram:
    bounds: tuple[float, ...]
    counts: list[int] = field(default_factory=list)  # per bucket, not cumulative; last is +Inf
    total: float = 0.0
    count: int = 0

    def __post_init__(self) -> None:
        self.counts = [0] * (len(self.bounds) + 1)

    def observe(self, value: float, times: int = 1) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += times  # le: value <= bound
        self.total += value * times
        self.count += times


@dataclass
class ServerMetrics:
    model_name: str
    prompt_tokens: int = 0
    generation_tokens: int = 0
    request_success: int = 0
    ttft: Histogram = field(default_factory=lambda: Histogram(TTFT_BUCKETS))
    itl: Histogram = field(default_factory=lambda: Histogram(ITL_BUCKETS))
    spec: SpecDecodeCounters | None = None
    prefix_cache_queries: int = 0  # prompt tokens of requests whose cached tokens the engine said
    prefix_cache_hits: int = 0  # ... and of those, the cached ones


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def _labels(pairs: dict[str, str]) -> str:
    def escape(text: str) -> str:
        return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

    return "{" + ",".join(f'{k}="{escape(v)}"' for k, v in pairs.items()) + "}"


class _Writer:
    def __init__(self, model_name: str) -> None:
        self.lines: list[str] = []
        self.model = {"model_name": model_name}

    def family(self, name: str, kind: str, help_text: str) -> None:
        self.lines += [f"# HELP {PREFIX}{name} {help_text}", f"# TYPE {PREFIX}{name} {kind}"]

    def sample(self, name: str, value: float, **labels: str) -> None:
        self.lines.append(f"{PREFIX}{name}{_labels({**labels, **self.model})} {_number(value)}")

    def gauge(self, name: str, value: float, help_text: str) -> None:
        self.family(name, "gauge", help_text)
        self.sample(name, value)

    def counter(self, name: str, value: float, help_text: str, **labels: str) -> None:
        self.family(name, "counter", help_text)
        self.sample(f"{name}_total", value, **labels)

    def histogram(self, name: str, hist: Histogram, help_text: str) -> None:
        self.family(name, "histogram", help_text)
        running = 0
        for bound, n in zip((*hist.bounds, math.inf), hist.counts, strict=True):
            running += n
            self.sample(f"{name}_bucket", running, le=_number(bound))
        self.sample(f"{name}_sum", hist.total)
        self.sample(f"{name}_count", hist.count)


def render(metrics: ServerMetrics, load: EngineLoad) -> str:
    w = _Writer(metrics.model_name)
    w.gauge("num_requests_running", load.running, "Requests generating (holding a slot).")
    w.gauge("num_requests_waiting", load.waiting, "Requests waiting for a slot.")
    w.gauge("kv_cache_usage_perc", load.kv_cache_usage, "KV-cache usage, 0..1 (1 = full).")
    w.counter("prompt_tokens", metrics.prompt_tokens, "Prompt tokens of admitted requests.")
    w.counter("generation_tokens", metrics.generation_tokens, "Output tokens written.")
    w.counter("request_success", metrics.request_success, "Requests finished.", finished_reason="length")
    w.histogram("time_to_first_token_seconds", metrics.ttft, "Request arrival to first token written.")
    w.histogram("inter_token_latency_seconds", metrics.itl, "Gap between tokens (a chunk's gap shared by its tokens).")
    if metrics.prefix_cache_queries:
        w.counter("prefix_cache_queries", metrics.prefix_cache_queries, "Prompt tokens looked up in the prefix cache.")
        w.counter("prefix_cache_hits", metrics.prefix_cache_hits, "Prompt tokens found in the prefix cache.")
    if metrics.spec is not None:
        spec = metrics.spec
        w.counter("spec_decode_num_drafts", spec.drafts, "Speculative decoding draft steps.")
        w.counter("spec_decode_num_draft_tokens", spec.draft_tokens, "Draft tokens proposed.")
        w.counter("spec_decode_num_accepted_tokens", spec.accepted_tokens, "Draft tokens accepted.")
        w.family("spec_decode_num_accepted_tokens_per_pos", "counter", "Accepted draft tokens per position.")
        for pos, n in enumerate(spec.accepted_per_pos):
            w.sample("spec_decode_num_accepted_tokens_per_pos_total", n, position=str(pos))
    return "\n".join(w.lines) + "\n"
