"""Did a serving stage measure what it claims? A pure verdict: VALID, or INVALID with its reasons.

A stage is INVALID when any check fails; each failed check is one reason, with its numbers
(docs/serving.md "Is a stage valid?"):

- population: every planned request completed. A failed request (an HTTP error, a timeout, an
  error event inside the stream, a stream that ended before [DONE], no output token) is not a
  completion; a planned request with no record at all is missing. A stage bounded by time has no
  planned count: then every sent request must have completed.
- output length: a request that sent `ignore_eos` (or `min_tokens`) demanded an output length
  (RequestRecord.expected_output_tokens); a completed request with fewer output tokens was cut
  short by the server, and the stage measured shorter requests than it claims. Requests whose
  tokens were counted by chunks (no usage, logprobs or ids) are not checked: a chunk may carry
  several tokens; nor those the client's tokenizer counted (--tokenizer): re-tokenizing the text
  may differ from the server's tokens by a few.
- steady state: the per-request TPOT (in send order) and the output token rate in windows show
  no level shift or drift (measurements/drift.py: first third vs last third, rank test with a
  minimum effect). The first and the last `peak in flight` requests sent are left out (the
  ramp-up and the drain of a closed loop), as are requests in a profiling window; the rate's
  windows span from the first kept request's send to the last one's end (every request's tokens).
- not client-bound, not saturated: the verdicts of client_bound.py and saturation.py, as given.

A check that cannot be made (too few requests for the drift test, no planned count) is named in
`unchecked`, never a reason: it does not make a stage INVALID.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from perfkit.core.point_spec import INVALID, VALID
from perfkit.workloads.serving.measurements.drift import MIN_PER_THIRD, Drift, drift
from perfkit.workloads.serving.measurements.latency import tpot_s
from perfkit.workloads.serving.measurements.steady import in_flight, peak
from perfkit.workloads.serving.measurements.summary import failure_reasons
from perfkit.workloads.serving.records import (
    TOKENS_FROM_CHUNKS,
    TOKENS_FROM_TOKENIZER,
    RequestRecord,
)

RATE_WINDOWS = 3 * (MIN_PER_THIRD + 1)  # windows of the steady span for the token-rate test
MIN_TOKENS_PER_WINDOW = 10  # expected tokens per window; fewer: the rate test is not made


@dataclass(frozen=True)
class Validity:
    verdict: str  # VALID or INVALID
    reasons: tuple[str, ...]  # why INVALID, one line per failed check (empty when VALID)
    unchecked: tuple[str, ...] = ()  # checks that could not be made, with why


def population_reason(records: Sequence[RequestRecord], planned: int | None) -> str | None:
    """Why the completed requests are not the planned population (None when they are)."""
    done = sum(1 for r in records if r.ok)
    failed = len(records) - done
    missing = max(planned - len(records), 0) if planned is not None else 0
    if not failed and not missing:
        return None
    kinds = "; ".join(f"{k} x{v}" for k, v in failure_reasons(records).items())
    failures = f"{failed} failed ({kinds})" if failed else "0 failed"
    if planned is None:
        return f"{done} of {len(records)} sent requests completed: {failures}"
    return f"{done} of {planned} planned requests completed: {failures}, {missing} missing"


def length_reason(records: Sequence[RequestRecord]) -> str | None:
    """Why completed requests returned fewer tokens than they demanded (None when none did)."""
    checked = [r for r in records if r.ok and r.expected_output_tokens and r.token_source != TOKENS_FROM_CHUNKS
               and not r.token_source.startswith(TOKENS_FROM_TOKENIZER)]
    short = [r for r in checked if r.output_tokens < (r.expected_output_tokens or 0)]
    if not short:
        return None
    worst = min(short, key=lambda r: r.output_tokens / (r.expected_output_tokens or 1))
    return (f"{len(short)} of {len(checked)} requests returned fewer output tokens than asked with "
            f"ignore_eos/min_tokens (shortest: {worst.output_tokens} of {worst.expected_output_tokens})")


def steady_records(records: Sequence[RequestRecord]) -> list[RequestRecord]:
    """The completed requests in send order without the ramp-up and the drain (the first and last
    `peak in flight` sent) and without those in a profiling window."""
    width = peak(in_flight(records))
    sent = sorted((r for r in records if r.sent_s is not None), key=lambda r: (r.sent_s or 0.0, r.index))
    middle = sent[width:len(sent) - width] if len(sent) > 2 * width else []
    return [r for r in middle if r.ok and not r.in_profile_window]


def token_rate_series(records: Sequence[RequestRecord], kept: Sequence[RequestRecord], tpot_p50_s: float,
                      width: int) -> list[float]:
    """Output tokens per second (of every request) in RATE_WINDOWS equal windows from the first kept
    request's send to the last one's end; [] when a window would hold fewer than
    MIN_TOKENS_PER_WINDOW tokens (`width` requests in flight at `tpot_p50_s` each)."""
    if not kept or tpot_p50_s <= 0:
        return []
    start = min(r.sent_s or 0.0 for r in kept)
    end = max(r.token_times_s[-1] for r in kept)
    step = (end - start) / RATE_WINDOWS
    if step <= 0 or step * max(width, 1) / tpot_p50_s < MIN_TOKENS_PER_WINDOW:
        return []
    counts = [0] * RATE_WINDOWS
    for r in records:
        for t in r.token_times_s:
            if start <= t <= end:
                counts[min(int((t - start) / step), RATE_WINDOWS - 1)] += 1
    return [c / step for c in counts]


def _drift_text(what: str, d: Drift, scale: float, unit: str) -> str:
    return (f"no steady state: {what} moved from {d.first * scale:.3g} {unit} (first third, median) to "
            f"{d.last * scale:.3g} {unit} (last third), {d.change:+.0%}, rank test p = {d.p_value:.2g}")


def steady_reasons(records: Sequence[RequestRecord]) -> tuple[list[str], list[str]]:
    """(reasons, unchecked) of the steady-state check."""
    kept = steady_records(records)
    tpots = [t for t in (tpot_s(r) for r in kept) if t is not None]
    d = drift(tpots)
    if d is None:
        return [], [f"steady state: {len(tpots)} requests with a TPOT between the ramp-up and the drain; the "
                    f"drift test needs {3 * MIN_PER_THIRD}"]
    reasons = [_drift_text("per-request TPOT", d, 1e3, "ms")] if d.drifted else []
    rates = token_rate_series(records, kept, sorted(tpots)[len(tpots) // 2], peak(in_flight(records)))
    r = drift(rates)
    if r is not None and r.drifted:
        reasons.append(_drift_text("the output token rate", r, 1.0, "tok/s"))
    return reasons, ([] if rates else ["steady state: windows of the stage too short for the token-rate test"])


def stage_validity(records: Sequence[RequestRecord], planned: int | None, client_bound: str | None = None,
                   saturated: str | None = None) -> Validity:
    """The verdict on one stage from its request records (see the module's text)."""
    reasons = [r for r in (population_reason(records, planned), length_reason(records)) if r]
    steady, unchecked = steady_reasons(records)
    reasons += steady
    reasons += [r for r in (client_bound, saturated) if r]
    if planned is None:
        unchecked.append("population: the stage was bounded by time (no planned count); its sent requests checked")
    return Validity(INVALID if reasons else VALID, tuple(reasons), tuple(unchecked))
