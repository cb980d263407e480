"""The rows every view of a serving run shows: one per stage, the same metrics, labels and
formatting (the descriptions in perfkit.core.metric_defs), and the notes that go with them
(client-bound stages, failed requests, chunk gaps instead of token gaps). Given data, computes none."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from perfkit.core.metric_defs import metric_def
from perfkit.core.record import PointResult
from perfkit.core.units import fmt_value

# the columns of the stage table, most important first
STAGE_COLUMNS: tuple[str, ...] = (
    "ttft_p50_s", "tpot_p50_s", "token_itl_p99_s", "chunk_gap_p99_s", "output_tok_per_s",
    "usd_per_1m_output_tok", "goodput_tok_per_s", "slo_attainment", "ttft_p99_s", "e2e_p50_s",
    "ttft_sched_p50_s", "request_per_s",
)


def is_serving(point: PointResult) -> bool:
    return point.kind == "serving"


def is_front(point: PointResult) -> bool:
    """The cost-front point of a serving workload (not a load stage)."""
    return is_serving(point) and "front" in point.params


def stage_label(point: PointResult) -> str:
    return ",".join(f"{k}={v}" for k, v in point.params.items()) or point.key


@dataclass(frozen=True)
class StageRow:
    label: str
    status: str
    cells: dict[str, str]  # metric key -> formatted value ("-" when absent)
    notes: tuple[str, ...]


def cell(metrics: dict[str, Any], key: str) -> str:
    d = metric_def(key)
    value = metrics.get(key)
    if d.shown_as == "fraction" and isinstance(value, (int, float)):
        return fmt_value(value * 100, "%")
    return fmt_value(value, d.unit)


def stage_notes(point: PointResult) -> tuple[str, ...]:
    m = point.metrics
    notes = []
    if point.error:
        notes.append(point.error)
    if m.get("client_bound"):
        notes.append(str(m["client_bound"]))
    failed = m.get("requests_failed")
    if isinstance(failed, (int, float)) and failed:
        reasons = m.get("failures") if isinstance(m.get("failures"), dict) else {}
        why = "; ".join(f"{k} x{v}" for k, v in reasons.items()) if reasons else ""
        notes.append(f"{failed:g} requests failed" + (f" ({why})" if why else ""))
    source = m.get("token_source")
    if isinstance(source, str) and "chunks" in source:
        notes.append("no per-chunk token counts from the server: ITL is chunk gaps, not token gaps")
    for n in m.get("serving_notes") or ():
        notes.append(str(n))
    return tuple(dict.fromkeys(notes))


def stage_rows(points: Iterable[PointResult], columns: tuple[str, ...] = STAGE_COLUMNS) -> list[StageRow]:
    return [StageRow(stage_label(p), p.status, {k: cell(p.metrics, k) for k in columns}, stage_notes(p))
            for p in points if is_serving(p) and not is_front(p)]


def column_label(key: str) -> str:
    return metric_def(key).label


def front_lines(points: Iterable[PointResult]) -> list[str]:
    """What each cost-front point says: the cost at every target interactivity, or why not."""
    out = []
    for p in points:
        if not is_front(p):
            continue
        if p.error:
            out.append(f"cost front: {p.error}")
            continue
        m = p.metrics
        for key in sorted(k for k in m if k.startswith("usd_per_1m_output_tok_at_")):
            target = key.removeprefix("usd_per_1m_output_tok_at_").removesuffix("_tok_per_user").replace("_", ".")
            tput = m.get(f"throughput_per_gpu_at_{target.replace('.', '_')}_tok_per_user")
            out.append(f"at {target} tok/s per user: {fmt_value(m[key], 'USD')} per 1M output tokens "
                       f"({fmt_value(tput, 'tok/s')} per GPU, interpolated along the measured front)")
        for note in m.get("serving_notes") or ():
            out.append(f"cost front: {note}")
    return out
