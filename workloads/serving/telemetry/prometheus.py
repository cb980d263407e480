"""Prometheus text exposition from a server's /metrics: parse, difference, and derive.

`parse` reads the text format (version 0.0.4; OpenMetrics text reads too): `# HELP` and
`# TYPE` comments, other comments, `name{label="value",...} value [timestamp]` with escaped
quotes, backslashes and newlines in label values, NaN / +Inf / -Inf values, histogram and
summary series. It never raises on what a server sent: a line it cannot read is skipped and
counted, and the input is capped (MAX_CHARS characters, MAX_LINE_CHARS per line, MAX_SERIES
series), the rest counted as cut off.

`delta(before, after)`: for cumulative series (counters; histogram buckets, sums and counts;
summary sums and counts; untyped names ending in _total / _count / _sum / _bucket) after -
before, a series absent before counting from 0 and a counter that went down (the server
restarted) counting from 0 again (Prometheus' `increase`); for gauges (and _created stamps,
summary quantiles) the after value.

`derived(delta)`: the numbers a load test reports from the server, summed over label sets
(engines, models) for counters and averaged for gauges, from vLLM (`vllm:`), perfkit's own
server (`perfkit:`, vLLM's names), SGLang (`sglang:`) and llama.cpp (`llamacpp:`):

    key                              vLLM / perfkit                      SGLang                      llama.cpp
    server_prompt_tokens             prompt_tokens_total                 prompt_tokens_total         prompt_tokens_total
    server_generation_tokens         generation_tokens_total             generation_tokens_total     tokens_predicted_total
    server_prefix_cache_hit_rate     prefix_cache_hits_total /           cached_tokens_total /       -
                                     prefix_cache_queries_total (or the  prompt_tokens_total (else
                                     gpu_ variants; else the v0 gauge    the cache_hit_rate gauge)
                                     gpu_prefix_cache_hit_rate)
    server_kv_cache_usage            kv_cache_usage_perc (or             token_usage                 kv_cache_usage_ratio
                                     gpu_cache_usage_perc), 0..1, as
                                     the second scrape saw it
    server_preemptions               num_preemptions_total               -                           -
    server_spec_acceptance_rate      spec_decode_num_accepted_tokens_total / spec_decode_num_draft_tokens_total;
                                     SGLang: the spec_accept_rate gauge
    server_spec_mean_accepted_length 1 + spec_decode_num_accepted_tokens_total / spec_decode_num_drafts_total;
                                     SGLang: the spec_accept_length gauge
    server_spec_acceptance_rate_pos_<i>  spec_decode_num_accepted_tokens_per_pos_total{position="<i>"} /
                                     spec_decode_num_drafts_total (vLLM: the share of drafts whose i-th
                                     draft token was accepted)

A ratio whose denominator moved by 0 is left out.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

MAX_CHARS = 8 << 20  # text read from one scrape
MAX_LINE_CHARS = 64 << 10  # a longer line is skipped
MAX_SERIES = 100_000  # series kept from one scrape

Labels = tuple[tuple[str, str], ...]  # sorted (name, value) pairs
Series = tuple[str, Labels]  # (metric name, labels)

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\\n]|\\.)*)"\s*')
_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")  # no nested repeats
_ESCAPES = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}
_TYPES = ("counter", "gauge", "histogram", "summary", "untyped", "info", "stateset",
          "gaugehistogram", "unknown")
_SUFFIXES = ("_total", "_created", "_bucket", "_sum", "_count")
_CUMULATIVE_SUFFIXES = ("_total", "_count", "_sum", "_bucket")


@dataclass
class Scrape:
    """What one /metrics text held: sample values by series, family types, and what was not read."""

    values: dict[Series, float] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)  # family name -> counter / gauge / ...
    skipped: int = 0  # lines that could not be read
    cut_off: int = 0  # characters or series left out by the caps

    def kind(self, name: str) -> str:
        """The family type of a sample name ('' when no # TYPE said it)."""
        if name in self.types:
            return self.types[name]
        for suffix in _SUFFIXES:
            if name.endswith(suffix) and name[: -len(suffix)] in self.types:
                return self.types[name[: -len(suffix)]]
        return ""


def parse(text: str) -> Scrape:
    """The samples of a Prometheus text exposition; never raises on a malformed line."""
    out = Scrape()
    if not isinstance(text, str):
        out.skipped = 1
        return out
    if len(text) > MAX_CHARS:
        out.cut_off += len(text) - MAX_CHARS
        text = text[:MAX_CHARS]
    for line in text.split("\n"):
        line = line.strip()
        if not line:
            continue
        if len(line) > MAX_LINE_CHARS:
            out.skipped += 1
        elif line.startswith("#"):
            _comment(line, out)
        else:
            sample = _sample(line)
            if sample is None:
                out.skipped += 1
            elif sample[0] in out.values or len(out.values) < MAX_SERIES:
                out.values[sample[0]] = sample[1]
            else:
                out.cut_off += 1
    return out


def _comment(line: str, out: Scrape) -> None:
    parts = line[1:].split(None, 3)
    if len(parts) >= 3 and parts[0] == "TYPE":
        if _NAME.fullmatch(parts[1]) and parts[2].lower() in _TYPES:
            out.types[parts[1]] = parts[2].lower()
        else:
            out.skipped += 1


def _sample(line: str) -> tuple[Series, float] | None:
    m = _NAME.match(line)
    if m is None:
        return None
    name, pos = m.group(0), m.end()
    labels: list[tuple[str, str]] = []
    brace = len(line[pos:]) - len(line[pos:].lstrip())  # blanks may separate tokens
    if line[pos + brace: pos + brace + 1] == "{":
        parsed = _labels(line, pos + brace + 1)
        if parsed is None:
            return None
        labels, pos = parsed
    rest = line[pos:].split()
    if not rest or len(rest) > 2 or (pos < len(line) and not line[pos].isspace()):
        return None
    value = _float(rest[0])
    if value is None:
        return None
    return (name, tuple(sorted(labels))), value


def _labels(line: str, pos: int) -> tuple[list[tuple[str, str]], int] | None:
    """The label pairs from just after '{' and the position after '}'; None when malformed."""
    labels: list[tuple[str, str]] = []
    while True:
        while pos < len(line) and line[pos].isspace():
            pos += 1
        if pos < len(line) and line[pos] == "}":
            return labels, pos + 1
        m = _LABEL.match(line, pos)
        if m is None:
            return None
        labels.append((m.group(1), re.sub(r"\\.", lambda e: _ESCAPES.get(e.group(0), e.group(0)),
                                          m.group(2))))
        pos = m.end()
        if pos < len(line) and line[pos] == ",":
            pos += 1
        elif pos >= len(line) or line[pos] != "}":
            return None


def _float(text: str) -> float | None:
    low = text.lower()
    if low in ("nan", "+inf", "inf", "-inf"):
        return float(low)
    return float(text) if _NUMBER.fullmatch(text) else None


def cumulative(scrape: Scrape, name: str) -> bool:
    """Whether a sample name only grows (counters, histogram and summary sums / counts)."""
    if name.endswith("_created"):
        return False
    kind = scrape.kind(name)
    if kind == "counter":
        return True
    if kind == "histogram":
        return name.endswith(("_bucket", "_sum", "_count"))
    if kind == "summary":
        return name.endswith(("_sum", "_count"))
    if kind in ("", "untyped", "unknown"):
        return name.endswith(_CUMULATIVE_SUFFIXES)
    return False


def delta(before: Scrape, after: Scrape) -> dict[Series, float]:
    """What changed between two scrapes: after - before for cumulative series (from 0 when the
    series is new or was reset), the after value for gauges."""
    out: dict[Series, float] = {}
    for series, value in after.values.items():
        if cumulative(after, series[0]):
            old = before.values.get(series, 0.0)
            out[series] = value if (math.isnan(old) or value < old) else value - old
        else:
            out[series] = value
    return out


def _by_name(values: Mapping[Series, float]) -> dict[str, list[tuple[Labels, float]]]:
    out: dict[str, list[tuple[Labels, float]]] = defaultdict(list)
    for (name, labels), v in values.items():
        if math.isfinite(v):
            out[name].append((labels, v))
    return out


def _total(table: Mapping[str, list[tuple[Labels, float]]], names: Iterable[str]) -> float | None:
    """Sum over label sets of the first of `names` present."""
    for n in names:
        if n in table:
            return sum(v for _, v in table[n])
    return None


def _mean(table: Mapping[str, list[tuple[Labels, float]]], names: Iterable[str]) -> float | None:
    """Mean over label sets of the first of `names` present (a gauge over engines)."""
    for n in names:
        if n in table:
            return sum(v for _, v in table[n]) / len(table[n])
    return None


def _ratio(num: float | None, den: float | None) -> float | None:
    return num / den if num is not None and den is not None and den > 0 else None


def _plus_one(x: float | None) -> float | None:
    return None if x is None else 1.0 + x


VLLM_PREFIXES = ("vllm:", "perfkit:")


def derived(values: Mapping[Series, float]) -> dict[str, float]:
    """The server's numbers of a stage from a delta (see the module's table); keys with no
    source are left out."""
    t = _by_name(values)
    out: dict[str, float] = {}
    for part in (*(_vllm(t, p) for p in VLLM_PREFIXES), _sglang(t), _llamacpp(t)):
        out.update({k: float(v) for k, v in part.items() if v is not None})
    return out


def _vllm(t: Mapping[str, list[tuple[Labels, float]]], p: str) -> dict[str, float | None]:
    if not any(name.startswith(p) for name in t):
        return {}
    hits = _total(t, [f"{p}prefix_cache_hits_total", f"{p}gpu_prefix_cache_hits_total"])
    queries = _total(t, [f"{p}prefix_cache_queries_total", f"{p}gpu_prefix_cache_queries_total"])
    drafts = _total(t, [f"{p}spec_decode_num_drafts_total"])
    draft_tokens = _total(t, [f"{p}spec_decode_num_draft_tokens_total"])
    accepted = _total(t, [f"{p}spec_decode_num_accepted_tokens_total"])
    out: dict[str, float | None] = {
        "server_prompt_tokens": _total(t, [f"{p}prompt_tokens_total"]),
        "server_generation_tokens": _total(t, [f"{p}generation_tokens_total"]),
        "server_prefix_cache_hit_rate": _ratio(hits, queries) if queries
        else _mean(t, [f"{p}gpu_prefix_cache_hit_rate"]),
        "server_kv_cache_usage": _mean(t, [f"{p}kv_cache_usage_perc", f"{p}gpu_cache_usage_perc"]),
        "server_preemptions": _total(t, [f"{p}num_preemptions_total"]),
        "server_spec_acceptance_rate": _ratio(accepted, draft_tokens),
        "server_spec_mean_accepted_length": _plus_one(_ratio(accepted, drafts)),
    }
    per_pos: dict[int, float] = defaultdict(float)
    for labels, v in t.get(f"{p}spec_decode_num_accepted_tokens_per_pos_total", []):
        where = dict(labels).get("position", "")
        if re.fullmatch(r"[0-9]{1,3}", where):
            per_pos[int(where)] += v
    for i in sorted(per_pos):
        out[f"server_spec_acceptance_rate_pos_{i}"] = _ratio(per_pos[i], drafts)
    return out


def _sglang(t: Mapping[str, list[tuple[Labels, float]]]) -> dict[str, float | None]:
    if not any(name.startswith("sglang:") for name in t):
        return {}
    prompt = _total(t, ["sglang:prompt_tokens_total"])
    cached = _total(t, ["sglang:cached_tokens_total"])
    return {
        "server_prompt_tokens": prompt,
        "server_generation_tokens": _total(t, ["sglang:generation_tokens_total"]),
        "server_prefix_cache_hit_rate": _ratio(cached, prompt) if cached is not None
        else _mean(t, ["sglang:cache_hit_rate"]),
        "server_kv_cache_usage": _mean(t, ["sglang:token_usage"]),
        "server_spec_acceptance_rate": _mean(t, ["sglang:spec_accept_rate"]),
        "server_spec_mean_accepted_length": _mean(t, ["sglang:spec_accept_length"]),
    }


def _llamacpp(t: Mapping[str, list[tuple[Labels, float]]]) -> dict[str, float | None]:
    if not any(name.startswith("llamacpp:") for name in t):
        return {}
    return {
        "server_prompt_tokens": _total(t, ["llamacpp:prompt_tokens_total"]),
        "server_generation_tokens": _total(t, ["llamacpp:tokens_predicted_total"]),
        "server_kv_cache_usage": _mean(t, ["llamacpp:kv_cache_usage_ratio"]),
    }
