"""`vllm bench serve --save-result [--save-detailed]` JSON -> IngestedStage.

One JSON object per stage; `--append-result` appends one object per line (JSON Lines), each a
stage. The top level holds the setup (date, backend, label, model_id, tokenizer_id,
num_prompts, request_rate ("inf" or req/s), burstiness, max_concurrency, ramp_up_*) and the
aggregates; `--save-detailed` adds per-request lists in request order: input_lens, output_lens,
ttfts (s), itls (list of chunk gaps per request, s), start_times (perf_counter, s),
generated_texts, errors; newer versions also latencies and queue_times (s). A failed request
has an error text and ttft 0. Read from vllm/benchmarks/serve.py (vLLM 0.10 to 0.12 era).

Summary names (vLLM key -> perfkit key; times ms -> s; STAT is mean, p50 (from median), std,
pNN (p99.9 -> p99_9)):

| vLLM                                    | perfkit                   |
| --------------------------------------- | ------------------------- |
| {mean,median,std,pNN}_ttft_ms           | ttft_STAT_s               |
| {...}_tpot_ms                           | tpot_STAT_s               |
| {...}_itl_ms                            | token_itl_STAT_s          |
| {...}_e2el_ms                           | e2e_STAT_s                |
| {...}_client_queue_time_ms              | client_queue_STAT_s       |
| {...}_e2el_including_client_queue_ms    | e2e_from_schedule_STAT_s  |
| duration                                | duration_s                |
| completed, failed                       | completed, failed         |
| total_input_tokens, total_output_tokens | input_tokens, output_tokens |
| request_throughput                      | request_per_s             |
| request_goodput                         | goodput_request_per_s     |
| output_throughput                       | output_tok_per_s          |
| total_token_throughput                  | total_tok_per_s           |
| max_output_tokens_per_s                 | peak_output_tok_per_s     |
| max_concurrent_requests                 | peak_concurrency          |

Definitions that differ from perfkit's are in `DEFINITIONS` (and on each stage).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from perfkit.ingest.serving.boundary import (
    BadRequest,
    Document,
    Drops,
    count,
    error_text,
    fail,
    gaps_s,
    number,
    optional_time_s,
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

SOURCE = "vllm"
PER_REQUEST = ("input_lens", "output_lens", "ttfts", "itls", "latencies", "start_times",
               "queue_times", "generated_texts", "errors")
_STAT_KEY = re.compile(r"^(mean|median|std|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el|client_queue_time|"
                       r"e2el_including_client_queue)_ms$")
_METRIC = {"ttft": "ttft", "tpot": "tpot", "itl": "token_itl", "e2el": "e2e",
           "client_queue_time": "client_queue", "e2el_including_client_queue": "e2e_from_schedule"}
_PLAIN = {"duration": "duration_s", "completed": "completed", "failed": "failed",
          "total_input_tokens": "input_tokens", "total_output_tokens": "output_tokens",
          "request_throughput": "request_per_s", "request_goodput": "goodput_request_per_s",
          "output_throughput": "output_tok_per_s", "total_token_throughput": "total_tok_per_s",
          "max_output_tokens_per_s": "peak_output_tok_per_s",
          "max_concurrent_requests": "peak_concurrency"}
DEFINITIONS = {
    "ttft": "vLLM: the first chunk that has `choices`, minus send; on chat endpoints that is the "
            "role-only first chunk, which carries no token (perfkit: the first token)",
    "token_itl": "vLLM 'itl': every gap between consecutive chunks, pooled; a chunk of k tokens "
                 "is one gap (perfkit shares it among the k tokens)",
    "peak_output_tok_per_s": "vLLM: the most output chunks received in one 1-second bucket",
    "e2e_from_schedule": "vLLM: E2E plus the client's wait for a concurrency slot",
    "client_queue": "vLLM: time from the scheduled arrival to send (waiting for a slot)",
}


def looks_like(obj: Any) -> bool:
    return (isinstance(obj, dict) and "duration" in obj and "completed" in obj
            and ("backend" in obj or "endpoint_type" in obj or "date" in obj)
            and not isinstance(obj.get("request_throughput"), dict))


def read(doc: Document) -> list[IngestedStage]:
    stages = []
    for index, (line, obj) in enumerate(doc.objects):
        at = line if doc.kind == "jsonl" else None
        if not looks_like(obj):
            fail(doc.path, "not a vllm bench serve result object (no duration/completed/backend); "
                 "pass a file written by --save-result", at)
        stages.append(_stage(doc.path, index, at, obj))
    if doc.bad_lines:
        line, why = doc.bad_lines[0]
        note = f"{len(doc.bad_lines)} lines are not JSON (first: line {line}, {why}): stages lost"
        stages = [_with_note(s, note) for s in stages]
    return stages


def _with_note(stage: IngestedStage, note: str) -> IngestedStage:
    return replace(stage, notes=(*stage.notes, note))


def _load(d: dict[str, Any]) -> tuple[str | None, float | None, float | None, int | None]:
    """(strategy, rate per s, burstiness, concurrency) as vLLM's arguments set them."""
    raw_rate, burst = d.get("request_rate"), number(d.get("burstiness"))
    rate = number(raw_rate)
    cap = positive_int(d.get("max_concurrency"))
    if d.get("ramp_up_strategy"):
        return f"ramp-up-{d['ramp_up_strategy']}", None, burst, cap
    if rate is None or rate <= 0:  # "inf": every request at once, held back only by the cap
        return "unlimited", None, None, cap
    if d.get("burstiness") in ("inf", float("inf")):
        return "constant", rate, None, cap
    return ("poisson" if burst in (None, 1.0) else "gamma"), rate, burst, cap


def _stage(path: str, index: int, line: int | None, d: dict[str, Any]) -> IngestedStage:
    strategy, rate, burst, cap = _load(d)
    name = stage_name(strategy, cap, rate, burst)
    start, end = number(d.get("ramp_up_start_rps")), number(d.get("ramp_up_end_rps"))
    if strategy and strategy.startswith("ramp-up") and start is not None and end is not None:
        name = stage_name(f"{strategy} {start:g}->{end:g}/s", cap, None)
    summary: dict[str, float] = {}
    for key, value in d.items():
        if key in _PLAIN:
            put(summary, _PLAIN[key], value)
        elif (m := _STAT_KEY.match(key)) and (stat := stat_name(m.group(1))):
            put(summary, f"{_METRIC[m.group(2)]}_{stat}_s", value, 1e-3)
    records, notes = _requests(path, line, d)
    info = {k: v for k in ("date", "backend", "label", "model_id", "tokenizer_id", "num_prompts")
            if (v := text_field(d.get(k))) is not None}
    return IngestedStage(
        source=SOURCE, path=path, name=name, index=index,
        strategy=strategy, concurrency=cap, request_rate_per_s=rate, burstiness=burst,
        duration_s=seconds(d.get("duration")), requests=records, summary=summary,
        definitions=definitions_for(summary, DEFINITIONS),
        notes=tuple(notes), info=info, files=(path,))


def _lists(path: str, line: int | None, d: dict[str, Any]) -> dict[str, list[Any]]:
    lists = {}
    for key in PER_REQUEST:
        value = d.get(key)
        if value is None:
            continue
        if not isinstance(value, list):
            fail(path, f"'{key}' is a {type(value).__name__}, not a list; pass the file "
                 "vllm bench serve --save-detailed wrote", line)
        lists[key] = value
    lengths = {k: len(v) for k, v in lists.items()}
    if len(set(lengths.values())) > 1:
        shown = ", ".join(f"{k} {n}" for k, n in lengths.items())
        fail(path, f"per-request lists differ in length ({shown}); the file is damaged: re-run "
             "with --save-detailed", line)
    return lists


def _requests(path: str, line: int | None,
              d: dict[str, Any]) -> tuple[tuple[RequestRecord, ...], list[str]]:
    lists = _lists(path, line, d)
    if "ttfts" not in lists or "itls" not in lists:
        return (), ["no per-request data (ttfts, itls): run vllm bench serve with --save-detailed; "
                    "only the summary is read"]
    notes = []
    if "start_times" not in lists:
        notes.append("no start_times (older vLLM): every request is placed at 0, times are "
                     "relative to each request's own send")
    drops = Drops()
    raws = []
    for i in range(len(lists["ttfts"])):
        where = f"request {i}" + (f" on line {line}" if line is not None else "")
        try:
            raws.append(_request(i, where, lists))
        except BadRequest as exc:
            drops.add(str(exc), where)
    rebuilt = rebuild(raws, sort=False)
    return rebuilt.records, notes + drops.notes() + rebuilt.notes(SOURCE)


def _request(i: int, where: str, lists: dict[str, list[Any]]) -> RawRequest:
    def get(key: str) -> Any:
        return lists[key][i] if key in lists else None

    start = 0.0
    if "start_times" in lists:
        start_raw = seconds(get("start_times"))
        if start_raw is None:
            raise BadRequest("start_times entry is not a finite number of seconds (at most 1e10)")
        start = start_raw
    queue = optional_time_s(get("queue_times"), "queue_times entry")
    scheduled = start - queue if queue is not None else None
    inputs = count(get("input_lens"), "input_lens entry")
    error = error_text(get("errors"))
    if error is not None:
        return RawRequest(where, sent=start, scheduled=scheduled, error=error, input_tokens=inputs)
    latency = optional_time_s(get("latencies"), "latencies entry")
    return RawRequest(where, sent=start, scheduled=scheduled,
                      ttft=time_s(get("ttfts"), "ttfts entry"),
                      gaps=gaps_s(get("itls"), "itls entry"),
                      output_tokens=count(get("output_lens"), "output_lens entry") or None,
                      input_tokens=inputs, end=start + latency if latency is not None else None)
