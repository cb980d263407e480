"""The numbers of one serving stage, typed: one field per metric key, one spelling per key.

`stage_numbers()` (summary.py) builds it from the request records; the stage's runner adds what
the client and the server saw (lag, saturation, /metrics). At the JSON boundary it is the flat
dict a point's `metrics` holds in run.json, unchanged in shape: `as_metrics()` writes it (a field
that is None is left out, never written as null) and `from_metrics()` reads it back, also from
older run.json files and ingested runs: a key once spelled another way (ALIASES) is read under
its one spelling, and a key this record does not name (an ingester's `source`, a front point's
costs, the pipeline's `timing_skipped`) is kept in `extra` as it was. Definitions of every
number: perfkit.core.metric_defs and the docstring of summary.py.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# another spelling a run.json or an ingester once used -> the one spelling
ALIASES: dict[str, str] = {
    "goodput_request_per_s": "goodput_req_per_s",
    "e2e_from_schedule_p50_s": "e2e_sched_p50_s",
    "e2e_from_schedule_p99_s": "e2e_sched_p99_s",
    "ttft_from_schedule_p50_s": "ttft_sched_p50_s",
    "ttft_from_schedule_p99_s": "ttft_sched_p99_s",
}


@dataclass(frozen=True)
class StageNumbers:
    # counts and rates (succeeded requests / duration_s)
    requests_ok: float | None = None
    requests_failed: float | None = None
    duration_s: float | None = None
    request_per_s: float | None = None
    output_tok_per_s: float | None = None
    input_tok_per_s: float | None = None
    total_tok_per_s: float | None = None
    # latencies: percentiles over the succeeded requests (ITL and chunk gaps: pooled gaps)
    ttft_p50_s: float | None = None
    ttft_p90_s: float | None = None
    ttft_p99_s: float | None = None
    ttft_mean_s: float | None = None
    ttft_sched_p50_s: float | None = None
    ttft_sched_p99_s: float | None = None
    tpot_p50_s: float | None = None
    tpot_p90_s: float | None = None
    tpot_p99_s: float | None = None
    tpot_mean_s: float | None = None
    token_itl_p50_s: float | None = None
    token_itl_p90_s: float | None = None
    token_itl_p99_s: float | None = None
    chunk_gap_p50_s: float | None = None
    chunk_gap_p99_s: float | None = None
    e2e_p50_s: float | None = None
    e2e_p99_s: float | None = None
    e2e_sched_p50_s: float | None = None
    e2e_sched_p99_s: float | None = None
    interactivity_tok_per_s: float | None = None
    # reasoning models: only when a request had reasoning tokens
    ttfa_p50_s: float | None = None
    ttfa_p99_s: float | None = None
    reasoning_tok_per_req_mean: float | None = None
    answer_tok_per_req_mean: float | None = None
    reasoning_token_source: str | None = None
    # goodput under the SLOs, cost under the price
    goodput_req_per_s: float | None = None
    goodput_tok_per_s: float | None = None
    slo_attainment: float | None = None
    usd_per_1m_output_tok: float | None = None
    usd_per_1m_input_tok: float | None = None
    usd_per_1m_total_tok: float | None = None
    usd_per_1m_output_tok_at_slo: float | None = None
    usd_energy_per_1m_output_tok: float | None = None  # GPU energy at --price-per-kwh (measurements/energy.py)
    # the steady window
    steady_start_s: float | None = None
    steady_end_s: float | None = None
    steady_output_tok_per_s: float | None = None
    steady_ttft_p50_s: float | None = None
    steady_tpot_p50_s: float | None = None
    in_flight_peak: float | None = None
    # what the requests say beyond numbers
    token_source: str | None = None
    failures: dict[str, int] | None = None
    request_samples: dict[str, list[float]] | None = None
    window_samples: dict[str, list[float]] | None = None
    # what the stage's runner adds: the load client's own health, the server's side
    client_lag_p99_s: float | None = None
    send_late_p99_s: float | None = None
    # metric key -> how far the client's delays can have moved it (measurements/client_error.py)
    client_error_bounds: dict[str, float] | None = None
    # where they come from: "server stamps" or "kernel receive stamps" (measured), "lag around each read"
    # or "lag distribution" (bounds)
    client_error_source: str | None = None
    client_bound: str | None = None
    saturated: str | None = None
    # the stage's validity (measurements/validity.py): VALID / INVALID, why, what was not checked;
    # absent in older runs (not judged)
    validity: str | None = None
    validity_reasons: tuple[str, ...] | None = None
    validity_unchecked: tuple[str, ...] | None = None
    requests_planned: float | None = None
    endpoint: str | None = None
    server_metrics: dict[str, float] | None = None
    serving_notes: tuple[str, ...] | None = None
    requests_file: str | None = None
    # multi-turn sessions and the server's prompt cache (measurements/sessions.py); absent otherwise
    sessions: float | None = None
    session_turns_mean: float | None = None
    session_duration_p50_s: float | None = None
    session_duration_mean_s: float | None = None
    session_ttft_mean_p50_s: float | None = None
    turn_table: dict[str, list[float | None]] | None = None
    session_table: dict[str, list[float | None]] | None = None
    prompt_cache_share: float | None = None
    prompt_cache_reported: float | None = None
    prompt_cached_tokens: float | None = None
    replay_prefix_reuse_asked: float | None = None  # a Mooncake trace's asked reuse (serving/replay_reuse.py)
    # per LoRA adapter (serve-bench --lora; measurements/adapters.py); absent otherwise
    adapter_table: dict[str, list[Any]] | None = None
    # keys this record does not name, as they were
    extra: Mapping[str, Any] = field(default_factory=dict)

    def as_metrics(self) -> dict[str, Any]:
        """The point's `metrics` dict (run.json's shape): None fields left out, `extra` after."""
        out: dict[str, Any] = {}
        for f in FIELDS:
            value = getattr(self, f.name)
            if value is not None:
                out[f.name] = list(value) if isinstance(value, tuple) else value
        return out | dict(self.extra)

    @classmethod
    def from_metrics(cls, metrics: Mapping[str, Any]) -> StageNumbers:
        """The numbers of a point's `metrics` (any perfkit's run.json, an ingested run). A value of
        an unexpected type is not read as the field: it stays in `extra` under its key."""
        known: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in metrics.items():
            name = ALIASES.get(key, key)
            kind = _KIND.get(name)
            if kind is None or not _fits(value, kind) or name in known:
                extra[key] = value
            else:
                known[name] = tuple(str(v) for v in value) if kind is tuple else value
        return cls(**known, extra=extra)

    def number(self, key: str) -> float | None:
        """The float field `key` (a metric key), None when absent or not a number field."""
        value = getattr(self, key, None) if _KIND.get(key) is float else None
        return value if isinstance(value, (int, float)) else None


FIELDS = tuple(f for f in dataclasses.fields(StageNumbers) if f.name != "extra")
# field name -> the JSON type it is read from
_HINTS = typing.get_type_hints(StageNumbers)
_KIND: dict[str, type] = {f.name: typing.get_origin(typing.get_args(_HINTS[f.name])[0]) or
                          typing.get_args(_HINTS[f.name])[0] for f in FIELDS}  # `X | None` -> X


def _fits(value: Any, kind: type) -> bool:
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is tuple:
        return isinstance(value, (list, tuple))
    return isinstance(value, kind)
