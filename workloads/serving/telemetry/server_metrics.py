"""The server's side of a stage: its Prometheus /metrics scraped before and after, as the
derived numbers of perfkit.workloads.serving.telemetry.prometheus (token counts, prefix-cache hit rate,
KV-cache use, speculative-decoding acceptance), plus how many lines could not be read."""

from __future__ import annotations

import math
from typing import Any

from perfkit.workloads.serving.telemetry.prometheus import delta, derived, parse


def server_metrics(before: str | None, after: str | None) -> dict[str, Any]:
    """{} when either scrape is missing."""
    if before is None or after is None:
        return {}
    b, a = parse(before), parse(after)
    found = derived(delta(b, a))
    out: dict[str, Any] = {k: v for k, v in found.items() if math.isfinite(v)}
    if len(out) < len(found):  # a server's NaN / Infinity (or counters that overflow): never stored
        out["non_finite_dropped"] = len(found) - len(out)
    skipped = a.skipped + b.skipped
    if skipped:
        out["unreadable_lines"] = skipped
    return out
