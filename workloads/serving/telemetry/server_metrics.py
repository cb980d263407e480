"""The server's side of a stage: its Prometheus /metrics scraped before and after, as the
derived numbers of perfkit.workloads.serving.telemetry.prometheus (token counts, prefix-cache hit rate,
KV-cache use, speculative-decoding acceptance), plus how many lines could not be read."""

from __future__ import annotations

from typing import Any

from perfkit.workloads.serving.telemetry.prometheus import delta, derived, parse


def server_metrics(before: str | None, after: str | None) -> dict[str, Any]:
    """{} when either scrape is missing; the numbers as the server gave them (keep_plausible checks them)."""
    if before is None or after is None:
        return {}
    b, a = parse(before), parse(after)
    # a server's NaN / Infinity (or counters whose delta overflows) and numbers out of range are
    # dropped, counted and named by telemetry/plausible.py's keep_plausible
    out: dict[str, Any] = dict(derived(delta(b, a)))
    skipped = a.skipped + b.skipped
    if skipped:
        out["unreadable_lines"] = skipped
    return out
