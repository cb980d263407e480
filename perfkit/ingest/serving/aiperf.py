"""NVIDIA AIPerf exports -> IngestedStage (one stage per AIPerf run).

An AIPerf run writes, among others, `profile_export.jsonl` (one record per request:
`metadata` with request_start_ns / request_end_ns (ns timestamps), benchmark_phase
("warmup" / "profiling"), was_cancelled, and from newer versions credit_issued_ns (when the
load plan released the request); `metrics` as {"value", "unit"} in display units (ms, tokens):
time_to_first_token, inter_chunk_latency (a list, one gap per chunk after the first),
request_latency, output_sequence_length, input_sequence_length, inter_token_latency, ...;
`error` {code, type, message} or null / absent) and `profile_export_aiperf.json` (aggregates
as {"unit", "avg", "p1".."p99", "min", "max", "std"} per metric, `input_config` with the load:
`loadgen` (0.1-0.3: concurrency, request_rate, request_rate_mode) or `phases` (0.10: type,
concurrency, rate, smoothness per phase), aiperf_version). Either file may be passed: the
other is read from beside it when present ("X.jsonl" <-> "X_aiperf.json"). Read from
ai-dynamo/aiperf (record_models.py, export_models.py, metric_records_wire.py, phases.py; 0.1
to 0.10).

AIPerf 0.1.1 (September-October 2025) wrote an older layout, also read: a record's start is
`metadata.timestamp_ns`, its phase `metadata.credit_phase`, its end the `max_response_timestamp`
metric (ns; there is no request_end_ns); time to first / second token are tagged `ttft` / `ttst`;
the summary nests the metrics under `records` (tag -> {tag, unit, header, avg, ..., count}).

Summary names (AIPerf -> perfkit; times converted from their unit to s; STAT is mean (from
avg), pNN, min, max, std):

| AIPerf                                   | perfkit                        |
| ---------------------------------------- | ------------------------------ |
| time_to_first_token                      | ttft_STAT_s                    |
| inter_token_latency                      | tpot_STAT_s                    |
| inter_chunk_latency                      | token_itl_STAT_s               |
| request_latency                          | e2e_STAT_s                     |
| time_to_second_token                     | ttst_STAT_s                    |
| output_token_throughput_per_user         | interactivity_STAT_tok_per_s   |
| request_throughput (avg)                 | request_per_s                  |
| output_token_throughput (avg)            | output_tok_per_s               |
| total_token_throughput (avg)             | total_tok_per_s                |
| goodput (avg)                            | goodput_request_per_s          |
| request_count, error_request_count       | completed, failed              |
| total_isl, total_osl                     | input_tokens, output_tokens    |
| benchmark_duration                       | duration_s                     |

AIPerf's "inter_token_latency" is vLLM's (and perfkit's) TPOT; its per-gap latency is
"inter_chunk_latency". Output tokens are AIPerf's total_osl (reasoning tokens included, what its
output_token_throughput divides), total_output_tokens (visible tokens only) where there is no
total_osl. Definitions that differ from perfkit's are in `DEFINITIONS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from perfkit.ingest.serving.boundary import (
    BadRequest,
    Document,
    Drops,
    count,
    counted,
    error_text,
    gaps_s,
    mapping,
    number,
    optional_time_s,
    text_field,
)
from perfkit.ingest.serving.rebuild import RawRequest, rebuild
from perfkit.ingest.serving.stage import (
    IngestedStage,
    definitions_for,
    positive_int,
    put,
    stage_name,
    stat_name,
)
from perfkit.workloads.serving.records import RequestRecord

SOURCE = "aiperf"
UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0, "seconds": 1.0}
MAX_CREDIT_WAIT_NS = 3600 * 10**9  # a credit older than this is from another clock: ignored
_TIMES = {"time_to_first_token": "ttft", "inter_token_latency": "tpot",
          "inter_chunk_latency": "token_itl", "request_latency": "e2e",
          "time_to_second_token": "ttst"}
_OLD_TAGS = {"time_to_first_token": "ttft", "time_to_second_token": "ttst"}  # AIPerf 0.1.1
_SCALARS = {"request_throughput": "request_per_s", "output_token_throughput": "output_tok_per_s",
            "total_token_throughput": "total_tok_per_s", "goodput": "goodput_request_per_s",
            "request_count": "completed", "error_request_count": "failed",
            "total_isl": "input_tokens", "total_output_tokens": "output_tokens",
            "total_osl": "output_tokens"}  # reasoning included, as in output_token_throughput: wins
DEFINITIONS = {
    "tpot": "AIPerf 'inter_token_latency': (request_latency - TTFT) / (output tokens - 1), "
            "vLLM's TPOT; AIPerf counts output tokens with its tokenizer unless told to use usage",
    "token_itl": "AIPerf 'inter_chunk_latency': every gap between consecutive responses "
                 "(chunks), pooled; a chunk of k tokens is one gap",
    "ttst": "AIPerf 'time_to_second_token': the second response minus the first",
    "interactivity": "AIPerf 'output_token_throughput_per_user': 1 / inter_token_latency of "
                     "each request",
    "request_per_s": "AIPerf: completed requests / benchmark_duration (first request start to "
                     "last response)",
    "output_tok_per_s": "AIPerf: output tokens / benchmark_duration",
}


def looks_like_record(obj: Any) -> bool:
    return (isinstance(obj, dict) and isinstance(obj.get("metadata"), dict)
            and ("request_start_ns" in obj["metadata"] or "timestamp_ns" in obj["metadata"])
            and "metrics" in obj)


def summary_metrics(top: dict[str, Any]) -> dict[str, Any]:
    """The metric entries of a summary: top level, or under `records` (AIPerf 0.1.1)."""
    nested = top.get("records")
    return nested if isinstance(nested, dict) else top


def _entry(metrics: dict[str, Any], tag: str) -> Any:
    """A metric by its tag, or by the tag AIPerf 0.1.1 gave it."""
    got = metrics.get(tag)
    return got if got is not None or tag not in _OLD_TAGS else metrics.get(_OLD_TAGS[tag])


def looks_like_summary(obj: Any) -> bool:
    if not isinstance(obj, dict):
        return False
    metrics = summary_metrics(obj)
    metric_shaped = any(isinstance(metrics.get(t), dict) and "unit" in metrics[t]
                        for t in ("request_throughput", "request_latency", "request_count",
                                  "time_to_first_token", "ttft", "benchmark_duration"))
    return metric_shaped and any(k in obj for k in ("aiperf_version", "input_config",
                                                    "schema_version", "was_cancelled"))


def read(records: Document | None, summary: Document | None, notes: list[str]) -> IngestedStage:
    """One stage from the per-request records and/or the summary (at least one)."""
    given = records if records is not None else summary
    if given is None:
        raise ValueError("aiperf.read needs the records or the summary")
    path = given.path
    top = mapping(summary.objects[0][1]) if summary is not None else {}
    config = mapping(top.get("input_config"))
    strategy, rate, burst, cap = _load(config)
    out_notes = list(notes)
    reqs: tuple[RequestRecord, ...] = ()
    duration = _duration(top)
    if records is not None:
        reqs, span_s, rec_notes = _records(records)
        out_notes += rec_notes
        if duration is None and span_s is not None:
            duration = span_s
            out_notes.append("duration_s from the records: first request start to last end")
    else:
        out_notes.append("no per-request records (profile_export.jsonl) beside the summary; "
                         "only the summary is read")
    if summary is None:
        out_notes.append("no profile_export_aiperf.json beside the records: no summary, load "
                         "parameters unknown")
    stats = _summary(top)
    return IngestedStage(
        source=SOURCE, path=path, name=stage_name(strategy, cap, rate, burst), strategy=strategy,
        concurrency=cap, request_rate_per_s=rate, burstiness=burst, duration_s=duration,
        requests=reqs, summary=stats, definitions=definitions_for(stats, DEFINITIONS),
        notes=tuple(out_notes), info=_info(top, config),
        files=tuple(d.path for d in (records, summary) if d is not None))


# -- summary -----------------------------------------------------------------------------------


def _unit_scale(entry: dict[str, Any]) -> float | None:
    return UNIT_S.get(str(entry.get("unit", "")).strip().lower())


def _duration(top: dict[str, Any]) -> float | None:
    entry = mapping(summary_metrics(top).get("benchmark_duration"))
    scale = _unit_scale(entry)
    value = number(entry.get("avg"))
    return value * scale if value is not None and scale is not None and value >= 0 else None


def _summary(top: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    metrics = summary_metrics(top)
    for tag, metric in _TIMES.items():
        entry = mapping(_entry(metrics, tag))
        scale = _unit_scale(entry)
        if scale is None:
            continue
        for stat, value in entry.items():
            if (name := stat_name(stat)) is not None:
                put(out, f"{metric}_{name}_s", value, scale)
    for stat, value in mapping(metrics.get("output_token_throughput_per_user")).items():
        if (name := stat_name(stat)) is not None:
            put(out, f"interactivity_{name}_tok_per_s", value)
    for tag, key in _SCALARS.items():
        put(out, key, mapping(metrics.get(tag)).get("avg"))
    if (duration := _duration(top)) is not None:
        out["duration_s"] = duration
    return out


def _load(config: dict[str, Any]) -> tuple[str | None, float | None, float | None, int | None]:
    """(strategy, rate, burstiness, concurrency) of the profiling phase."""
    phases = config.get("phases")
    if isinstance(phases, list):
        prof = [p for p in phases if isinstance(p, dict)
                and (p.get("kind") == "profiling" or p.get("name") == "profiling")]
        phase = prof[0] if prof else {}
        kind = text_field(phase.get("type"))
        rate = number(phase.get("rate"))
        smooth = number(phase.get("smoothness"))
        burst = smooth if kind == "gamma" else (1.0 if kind == "poisson" else None)
        return kind, rate if rate and rate > 0 else None, burst, positive_int(phase.get("concurrency"))
    loadgen = mapping(config.get("loadgen"))
    rate = number(loadgen.get("request_rate"))
    cap = positive_int(loadgen.get("concurrency"))
    if rate is not None and rate > 0:
        mode = text_field(loadgen.get("request_rate_mode")) or "request_rate"
        return mode, rate, 1.0 if mode == "poisson" else None, cap
    return ("concurrency" if cap else None), None, None, cap


def _info(top: dict[str, Any], config: dict[str, Any]) -> dict[str, str]:
    info = {k: v for k in ("aiperf_version", "schema_version", "benchmark_id", "start_time")
            if (v := text_field(top.get(k))) is not None}
    items = mapping(config.get("models")).get("items")
    names = mapping(config.get("endpoint")).get("model_names")
    first = (items[0].get("name") if isinstance(items, list) and items and isinstance(items[0], dict)
             else names[0] if isinstance(names, list) and names else None)
    if (model := text_field(first)) is not None:
        info["model"] = model
    endpoint = mapping(config.get("endpoint"))
    urls = endpoint.get("urls")
    url = text_field(urls[0] if isinstance(urls, list) and urls else endpoint.get("url"))
    if url is not None:
        info["endpoint"] = url
    return info


# -- records -----------------------------------------------------------------------------------


@dataclass
class _Record:
    where: str
    start_ns: int
    end_ns: int
    credit_ns: int | None
    raw: RawRequest  # times relative to start_ns (sent = 0)


def _ns(value: Any, what: str) -> int:
    """A nanosecond timestamp, kept an int (a float has 256 ns steps at today's epoch)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadRequest(f"{what} is not a nanosecond timestamp")
    if isinstance(value, float):
        if number(value) is None or value != int(value):
            raise BadRequest(f"{what} is not a nanosecond timestamp")
        value = int(value)
    if not 0 <= value < 2**63:
        raise BadRequest(f"{what} is not a nanosecond timestamp")
    return value


def _metric(metrics: dict[str, Any], tag: str) -> tuple[Any, float | None] | None:
    """(value, seconds per unit or None for counts) of a record's metric; None when absent."""
    entry = _entry(metrics, tag)
    if entry is None:
        return None
    if not isinstance(entry, dict) or "value" not in entry:
        raise BadRequest(f"metric {tag} is not {{value, unit}}")
    return entry["value"], _unit_scale(entry)


def _time(metrics: dict[str, Any], tag: str) -> float | None:
    got = _metric(metrics, tag)
    if got is None:
        return None
    value, scale = got
    if scale is None:
        raise BadRequest(f"metric {tag} has a unit that is not a time")
    return optional_time_s(value, tag, scale)


def _count(metrics: dict[str, Any], *tags: str) -> int | None:
    for tag in tags:
        got = _metric(metrics, tag)
        if got is not None:
            return count(got[0], tag)
    return None


def _error(obj: dict[str, Any], meta: dict[str, Any]) -> str | None:
    err = obj.get("error")
    if isinstance(err, dict):
        kind, msg, code = err.get("type"), err.get("message"), err.get("code")
        head = " ".join(str(p) for p in (kind, f"({code})" if code is not None else None) if p)
        return error_text(f"{head}: {msg}" if head and msg else (msg or head or err))
    if err not in (None, ""):
        return error_text(err)
    return "cancelled by AIPerf (request cancellation)" if meta.get("was_cancelled") is True else None


def _start_end_ns(meta: dict[str, Any], metrics: dict[str, Any]) -> tuple[int, int]:
    """A record's start and end; AIPerf 0.1.1 wrote timestamp_ns and the max_response_timestamp
    metric instead of request_start_ns / request_end_ns (its failed requests have no end: their
    start is used)."""
    if "request_start_ns" in meta:
        start_tag, end_tag = "request_start_ns", "request_end_ns"
        start, end = _ns(meta.get(start_tag), start_tag), _ns(meta.get(end_tag), end_tag)
    else:
        start_tag, end_tag = "timestamp_ns", "max_response_timestamp"
        start = _ns(meta.get(start_tag), start_tag)
        last = _metric(metrics, end_tag)
        end = _ns(last[0], end_tag) if last is not None else start
    if end < start:
        raise BadRequest(f"{end_tag} is before {start_tag}")
    return start, end


def _record(obj: dict[str, Any], where: str) -> _Record:
    meta = obj["metadata"]
    metrics = mapping(obj.get("metrics"))
    start, end = _start_end_ns(meta, metrics)
    credit = meta.get("credit_issued_ns")
    credit_ns = _ns(credit, "credit_issued_ns") if credit is not None else None
    inputs = _count(metrics, "input_sequence_length", "error_isl")
    error = _error(obj, meta)
    if error is not None:
        raw = RawRequest(where, sent=0.0, error=error, input_tokens=inputs, end=(end - start) / 1e9)
        return _Record(where, start, end, credit_ns, raw)
    icl = _metric(metrics, "inter_chunk_latency")
    gaps = None
    if icl is not None:
        if icl[1] is None:
            raise BadRequest("metric inter_chunk_latency has a unit that is not a time")
        gaps = gaps_s(icl[0] if isinstance(icl[0], list) else [icl[0]], "inter_chunk_latency", icl[1])
    latency = _time(metrics, "request_latency")
    raw = RawRequest(where, sent=0.0, ttft=_time(metrics, "time_to_first_token"), gaps=gaps,
                     tpot=_time(metrics, "inter_token_latency"),
                     output_tokens=_count(metrics, "output_sequence_length", "output_token_count"),
                     input_tokens=inputs,
                     end=latency if latency is not None else (end - start) / 1e9)
    return _Record(where, start, end, credit_ns, raw)


def _records(doc: Document) -> tuple[tuple[RequestRecord, ...], float | None, list[str]]:
    drops = Drops()
    for line, why in doc.bad_lines:
        drops.add(f"a line that is {why}", f"line {line}")
    kept: list[_Record] = []
    warmup = 0
    for line, obj in doc.objects:
        where = f"line {line}"
        if not looks_like_record(obj):
            drops.add("not an AIPerf record (metadata.request_start_ns or timestamp_ns, metrics)", where)
            continue
        meta = obj["metadata"]
        if meta.get("benchmark_phase", meta.get("credit_phase")) == "warmup":
            warmup += 1
            continue
        try:
            kept.append(_record(obj, where))
        except BadRequest as exc:
            drops.add(str(exc), where)
    notes = drops.notes()
    if warmup:
        notes.append(f"{counted(warmup, 'warmup record')} left out (benchmark_phase 'warmup')")
    if not kept:
        return (), None, notes
    base = min(r.start_ns for r in kept)
    far = 0
    for r in kept:
        r.raw.sent = (r.start_ns - base) / 1e9
        if r.raw.end is not None:
            r.raw.end += r.raw.sent
        if r.credit_ns is not None:
            if 0 <= r.start_ns - r.credit_ns <= MAX_CREDIT_WAIT_NS:
                r.raw.scheduled = r.raw.sent - (r.start_ns - r.credit_ns) / 1e9
            else:
                far += 1
    if far:
        notes.append(f"{counted(far, 'record')}: credit_issued_ns is after the start or over an hour before "
                     "it (another clock); scheduled_s is their send time")
    rebuilt = rebuild([r.raw for r in kept], sort=True)
    span = (max(r.end_ns for r in kept) - base) / 1e9
    return rebuilt.records, span, notes + rebuilt.notes(SOURCE)
