"""GuideLLM benchmark reports (`benchmarks.json` / `.yaml`) -> IngestedStage, one per benchmark.

The report is {"metadata": {version, guidellm_version, ...}, "config", "benchmarks": [...]}
(0.3: {"benchmarks": [...]} alone). Each benchmark (one load level of a sweep) has its
scheduling strategy (`config.strategy`, 0.3: `args.strategy`: type_ synchronous / concurrent
(streams) / throughput (max_concurrency) / constant / poisson (rate, max_concurrency)),
start_time / end_time / duration (s), `metrics` (each a per-status breakdown {successful, incomplete,
errored, total} of distributions {mean, median, std_dev, min, max, percentiles {p001, p01, p05,
p10, p25, p50, p75, p90, p95, p99, p999}}) and `requests` {successful, incomplete, errored}:
per-request stats. A request keeps no per-token times, only its first and last token: 0.4+ in
`info.timings` (targeted_start, request_start, first_token_iteration, last_token_iteration,
token_iterations, request_end; Unix seconds) with output_tokens / prompt_tokens, 0.3 as
start_time, first_token_time, last_token_time, end_time and `scheduler_info.targeted_start_time`.
The report may keep only a sample of the requests (`sample_size`). Read from
vllm-project/guidellm (schemas/info.py, request_stats.py, benchmark/schemas/, 0.3 to 0.7).

Summary names (the "successful" group; GuideLLM -> perfkit; ms -> s; STAT is mean, p50 (from
median), std (from std_dev), min, max, pNN (p001 -> p0_1, p999 -> p99_9)):

| GuideLLM                                 | perfkit                        |
| ---------------------------------------- | ------------------------------ |
| time_to_first_token_ms                   | ttft_STAT_s                    |
| inter_token_latency_ms                   | tpot_STAT_s                    |
| time_per_output_token_ms                 | e2e_per_token_STAT_s           |
| request_latency (s)                      | e2e_STAT_s                     |
| requests_per_second (mean)               | request_per_s                  |
| output_tokens_per_second (mean)          | output_tok_per_s               |
| tokens_per_second (mean)                 | total_tok_per_s                |
| request_concurrency (mean)               | mean_concurrency               |
| request_totals successful / errored / incomplete | completed / failed / incomplete |
| request_totals total                     | requests_total (kept or not)   |

GuideLLM's "inter_token_latency" is vLLM's (and perfkit's) TPOT, and its "time per output token"
includes the first token. Definitions that differ from perfkit's are in `DEFINITIONS`.
"""

from __future__ import annotations

from typing import Any

from perfkit.ingest.serving.boundary import (
    BadRequest,
    Document,
    Drops,
    count,
    error_text,
    fail,
    mapping,
    number,
    seconds,
    text_field,
    time_s,
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

SOURCE = "guidellm"
STATUSES = ("successful", "incomplete", "errored")
_DISTRIBUTIONS = {"time_to_first_token_ms": ("ttft", 1e-3), "inter_token_latency_ms": ("tpot", 1e-3),
                  "time_per_output_token_ms": ("e2e_per_token", 1e-3), "request_latency": ("e2e", 1.0)}
_MEANS = {"requests_per_second": "request_per_s", "output_tokens_per_second": "output_tok_per_s",
          "tokens_per_second": "total_tok_per_s", "request_concurrency": "mean_concurrency"}
_TOTALS = {"successful": "completed", "errored": "failed", "incomplete": "incomplete",
           "total": "requests_total"}
_FIXED_POINT = {"p001": "p0.1", "p01": "p1", "p05": "p5", "p999": "p99.9"}
INCOMPLETE = "incomplete: still running when the benchmark ended (GuideLLM cancelled it)"
DEFINITIONS = {
    "tpot": "GuideLLM 'inter_token_latency': (last token - first token) / (output tokens - 1), "
            "vLLM's TPOT",
    "e2e_per_token": "GuideLLM 'time_per_output_token': (last token - request start) / output "
                     "tokens, the first token included",
    "ttft": "GuideLLM: the first token iteration (streamed chunk) minus request start",
    "request_per_s": "GuideLLM: the mean of its requests-per-second distribution over the "
                     "benchmark's time",
    "output_tok_per_s": "GuideLLM: the mean of its output-tokens-per-second distribution over "
                        "the benchmark's time",
    "total_tok_per_s": "GuideLLM: the mean of its tokens-per-second distribution (prompt and "
                       "output) over the benchmark's time",
}


def looks_like(obj: Any) -> bool:
    """A report: {"benchmarks": [generative benchmarks]} (0.3 has nothing else at the top)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("benchmarks"), list):
        return False
    if not obj["benchmarks"]:
        return "metadata" in obj or "config" in obj or "args" in obj
    first = obj["benchmarks"][0]
    return isinstance(first, dict) and (first.get("type_") == "generative_benchmark"
                                        or ("requests" in first and "metrics" in first))


def read(doc: Document) -> list[IngestedStage]:
    top = doc.objects[0][1]
    benchmarks = top["benchmarks"]
    if not benchmarks:
        fail(doc.path, "the report has no benchmarks (the run stopped before the first finished); "
             "pass a report with results")
    report_info = _report_info(top)
    stages = []
    for index, bench in enumerate(benchmarks):
        if not isinstance(bench, dict):
            fail(doc.path, f"benchmarks[{index}] is a {type(bench).__name__}, not a benchmark; "
                 "pass the report GuideLLM wrote")
        stages.append(_stage(doc.path, index, bench, report_info))
    return stages


def _strategy(bench: dict[str, Any]) -> tuple[str | None, float | None, float | None, int | None]:
    strat = mapping(mapping(bench.get("config")).get("strategy")) or mapping(
        mapping(bench.get("args")).get("strategy"))
    kind = text_field(strat.get("type_"))
    rate = number(strat.get("rate"))
    cap = positive_int(strat.get("streams")) or positive_int(strat.get("max_concurrency"))
    if kind == "synchronous":
        cap = 1
    return kind, rate if rate and rate > 0 else None, 1.0 if kind == "poisson" else None, cap


def _summary(metrics: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for tag, (metric, scale) in _DISTRIBUTIONS.items():
        dist = mapping(mapping(metrics.get(tag)).get("successful"))
        stats = {k: v for k, v in dist.items() if k != "percentiles"}
        stats |= {_FIXED_POINT.get(k, k): v for k, v in mapping(dist.get("percentiles")).items()}
        for stat, value in stats.items():
            if (name := stat_name(stat)) is not None:
                put(out, f"{metric}_{name}_s", value, scale)
    for tag, key in _MEANS.items():
        put(out, key, mapping(mapping(metrics.get(tag)).get("successful")).get("mean"))
    for status, key in _TOTALS.items():
        put(out, key, mapping(metrics.get("request_totals")).get(status))
    return out


def _duration(bench: dict[str, Any]) -> float | None:
    duration = seconds(bench.get("duration"))
    if duration is None:
        start, end = number(bench.get("start_time")), number(bench.get("end_time"))
        duration = end - start if start is not None and end is not None else None
    return duration if duration is not None and duration >= 0 else None


def _report_info(top: dict[str, Any]) -> dict[str, str]:
    """The report's version, model and target (0.4+: `metadata`, `config`)."""
    config = mapping(top.get("config"))
    found = {"guidellm_version": mapping(top.get("metadata")).get("guidellm_version"),
             "model": config.get("model"), "endpoint": config.get("target")}
    return {k: v for k, raw in found.items() if (v := text_field(raw)) is not None}


def _bench_info(bench: dict[str, Any], report_info: dict[str, str]) -> dict[str, str]:
    """The report's info, the benchmark's start (Unix seconds) and 0.3's backend target / model."""
    worker = mapping(bench.get("worker"))
    found = {"start_time": bench.get("start_time") if number(bench.get("start_time")) else None,
             "endpoint": worker.get("backend_target"), "model": worker.get("backend_model")}
    own = {k: v for k, raw in found.items() if (v := text_field(raw)) is not None}
    return {**own, **report_info}


def _stage(path: str, index: int, bench: dict[str, Any], report_info: dict[str, str]) -> IngestedStage:
    kind, rate, burst, cap = _strategy(bench)
    metrics = mapping(bench.get("metrics"))
    stats = _summary(metrics)
    duration = _duration(bench)
    if duration is not None:
        stats["duration_s"] = duration
    records, notes = _requests(index, bench, metrics)
    info = _bench_info(bench, report_info)
    return IngestedStage(
        source=SOURCE, path=path, name=stage_name(kind, cap, rate, burst), index=index,
        strategy=kind, concurrency=cap, request_rate_per_s=rate, burstiness=burst,
        duration_s=duration, requests=records, summary=stats,
        definitions=definitions_for(stats, DEFINITIONS), notes=tuple(notes), info=info, files=(path,))


def _requests(index: int, bench: dict[str, Any],
              metrics: dict[str, Any]) -> tuple[tuple[RequestRecord, ...], list[str]]:
    groups = mapping(bench.get("requests"))
    drops = Drops()
    raws: list[RawRequest] = []
    for status in STATUSES:
        entries = groups.get(status)
        if not isinstance(entries, list):
            continue
        for i, entry in enumerate(entries):
            where = f"benchmarks[{index}].requests.{status}[{i}]"
            try:
                if not isinstance(entry, dict):
                    raise BadRequest("not an object")
                raws.append(_request(entry, status, where))
            except BadRequest as exc:
                drops.add(str(exc), where)
    notes = drops.notes()
    total = number(mapping(metrics.get("request_totals")).get("total"))
    kept = sum(len(v) for s in STATUSES if isinstance(v := groups.get(s), list))
    if total is not None and kept < total:
        notes.append(f"the report keeps {kept} of {int(total)} requests (GuideLLM's sampling): "
                     "the summary covers them all, `requests` only those kept")
    if not raws and not kept:
        notes.append("no per-request data in the report; only the summary is read")
    rebuilt = rebuild(raws, sort=True)
    return rebuilt.records, notes + rebuilt.notes(SOURCE)


def _abs(value: Any, what: str) -> float | None:
    """A Unix time; None when absent (v0.3 writes -1 for 'not set')."""
    if value is None or (number(value) is not None and number(value) == -1):
        return None
    return time_s(value, what)


def _times(entry: dict[str, Any]) -> dict[str, Any]:
    """The timestamps of a request under one set of names, 0.4+ and 0.3 alike."""
    timings = mapping(mapping(entry.get("info")).get("timings"))
    if timings:
        return {"scheduled": timings.get("targeted_start"),
                "sent": timings.get("request_start", timings.get("resolve_start")),
                "first": timings.get("first_token_iteration"),
                "last": timings.get("last_token_iteration"),
                "end": timings.get("request_end", timings.get("resolve_end")),
                "iterations": timings.get("token_iterations")}
    sched = mapping(entry.get("scheduler_info"))
    return {"scheduled": sched.get("targeted_start_time"), "sent": entry.get("start_time"),
            "first": entry.get("first_token_time"), "last": entry.get("last_token_time"),
            "end": entry.get("end_time"), "iterations": None}


def _tokens(entry: dict[str, Any], key: str, metrics_key: str) -> int | None:
    value = entry.get(key)
    if value is None:
        usage = mapping(entry.get(metrics_key))
        value = usage.get("total_tokens", usage.get("text_tokens"))
    return count(value, key)


def _request(entry: dict[str, Any], status: str, where: str) -> RawRequest:
    t = _times(entry)
    scheduled, sent = _abs(t["scheduled"], "targeted start"), _abs(t["sent"], "request start")
    first, last = _abs(t["first"], "first token time"), _abs(t["last"], "last token time")
    end = _abs(t["end"], "request end")
    inputs = _tokens(entry, "prompt_tokens", "input_metrics")
    outputs = _tokens(entry, "output_tokens", "output_metrics")
    iterations = count(t["iterations"], "token_iterations") or None  # streamed chunks that carried tokens
    if outputs is None:
        outputs = iterations
    info_error = mapping(entry.get("info")).get("error", entry.get("error"))
    if status != "successful":
        error = INCOMPLETE if status == "incomplete" else (error_text(info_error) or "errored")
        return RawRequest(where, sent=sent, scheduled=scheduled, error=error, input_tokens=inputs,
                          end=end)
    if sent is None:
        raise BadRequest("a successful request without a start time")
    ttft = None
    if first is not None:
        if first < sent:
            raise BadRequest("first token before the request start")
        ttft = first - sent
    tpot = None
    if first is not None and last is not None and outputs is not None and outputs > 1:
        if last < first:
            raise BadRequest("last token before the first")
        tpot = (last - first) / (outputs - 1)
    if end is not None and end < sent:
        raise BadRequest("request end before its start")
    return RawRequest(where, sent=sent, scheduled=scheduled, ttft=ttft, tpot=tpot, chunks=iterations,
                      output_tokens=outputs, input_tokens=inputs,
                      end=end if end is not None else last)
