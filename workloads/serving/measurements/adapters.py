"""Per-adapter numbers of a stage whose requests named LoRA adapters (serve-bench --lora).

adapter_table ({} for a stage whose requests named none): one row per adapter, in name order;
columns are lists over the rows of `adapter`:
- adapter: its name; requests: requests that named it (warm-up excluded); requests_ok: of them,
  the succeeded ones;
- ttft_p50_s, tpot_p50_s: the median (numpy "linear", as every percentile) of the succeeded
  requests' TTFT and TPOT (measurements/latency.py), None when it has none. Requests in a
  profiling window are left out, as from every latency number.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from perfkit.workloads.serving.measurements.latency import tpot_s, ttft_s
from perfkit.workloads.serving.records import RequestRecord


def _median(values: list[float]) -> float | None:
    return float(np.median(values)) if values else None


def adapter_metrics(records: Sequence[RequestRecord]) -> dict[str, object]:
    """{"adapter_table": ...} of a stage whose requests named adapters; {} otherwise."""
    by_adapter: dict[str, list[RequestRecord]] = defaultdict(list)
    for r in records:
        if r.adapter is not None:
            by_adapter[r.adapter].append(r)
    if not by_adapter:
        return {}
    table: dict[str, list[object]] = defaultdict(list)
    for name in sorted(by_adapter):
        rows = by_adapter[name]
        timed = [r for r in rows if r.ok and not r.in_profile_window]
        table["adapter"].append(name)
        table["requests"].append(float(len(rows)))
        table["requests_ok"].append(float(sum(r.ok for r in rows)))
        table["ttft_p50_s"].append(_median([t for r in timed if (t := ttft_s(r)) is not None]))
        table["tpot_p50_s"].append(_median([t for r in timed if (t := tpot_s(r)) is not None]))
    return {"adapter_table": dict(table)}
