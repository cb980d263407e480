"""What every view of a serving run shows besides the stage table (reports/serving/stage_table.py):
the metric formatting (the descriptions in perfkit.core.metric_defs), a stage's notes (client-bound
stages, failed requests, chunk gaps instead of token gaps), the headline, the front point's costs,
the server's /metrics table. Given data, computes none."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from perfkit.core.metric_defs import metric_def
from perfkit.core.point_spec import INVALID
from perfkit.core.record import PointResult
from perfkit.core.units import fmt_num, fmt_value


def is_serving(point: PointResult) -> bool:
    return point.kind == "serving"


def is_front(point: PointResult) -> bool:
    """The `front` point of a serving workload (costs at target interactivities), not a load stage."""
    return is_serving(point) and "front" in point.params


def stage_label(point: PointResult) -> str:
    return ",".join(f"{k}={v}" for k, v in point.params.items()) or point.key


def format_metric(value: Any, key: str) -> str:
    """A metric's value as every view writes it (its description's unit; a fraction as a percentage)."""
    d = metric_def(key)
    if d.shown_as == "fraction" and isinstance(value, (int, float)):
        return fmt_value(value * 100, "%")
    return fmt_value(value, d.unit)


def cell(metrics: dict[str, Any], key: str) -> str:
    return format_metric(metrics.get(key), key)


def stage_notes(point: PointResult) -> tuple[str, ...]:
    m = point.metrics
    notes = []
    if point.error:
        notes.append(point.error)
    if m.get("client_bound"):
        notes.append(str(m["client_bound"]))
    if m.get("saturated"):
        notes.append(str(m["saturated"]))
    failed = m.get("requests_failed")
    if isinstance(failed, (int, float)) and failed:
        reasons = m.get("failures") if isinstance(m.get("failures"), dict) else {}
        why = "; ".join(f"{k} x{v}" for k, v in reasons.items()) if reasons else ""
        notes.append(f"{failed:g} requests failed" + (f" ({why})" if why else ""))
    source = m.get("token_source")
    if isinstance(source, str) and "chunks" in source:
        notes.append("tokens counted as chunks (the server sent no usage, logprobs or token ids): TPOT, ITL and "
                     "tok/s count chunks, not tokens; pass --tokenizer to count the text's tokens")
    for n in m.get("serving_notes") or ():
        notes.append(str(n))
    if m.get("validity") == INVALID:  # its reasons not said above (client-bound, saturated are)
        given = m.get("validity_reasons")
        reasons = [str(r) for r in given] if isinstance(given, list) else []
        notes += [f"INVALID: {r}" for r in reasons if r not in notes]
        if not reasons:
            notes.append("INVALID: no reason recorded")
    return tuple(dict.fromkeys(notes))


def column_label(key: str) -> str:
    return metric_def(key).label


# what one line says about a stage (the terminal summary of `perfkit profile`)
HEADLINE: tuple[str, ...] = ("ttft_p50_s", "tpot_p50_s", "output_tok_per_s", "slo_attainment",
                             "usd_per_1m_output_tok")
SERVING_STAGE = "serving stage"  # the timing cell of a serving point: the load client measured it


def headline(point: PointResult) -> str:
    """`TTFT p50 60 ms · TPOT p50 11 ms · ...` of a stage; a front point's metrics; '' when none."""
    m = point.metrics
    keys = [t.usd_key for t in front_targets(point)] if is_front(point) else list(HEADLINE)
    return " · ".join(f"{column_label(k)} {cell(m, k)}" for k in keys if cell(m, k) != "-")


def stage_points(points: Iterable[PointResult], workload: str | None = None) -> list[PointResult]:
    """The load stages (no front point) of one serving workload, or of all."""
    return [p for p in points if is_serving(p) and not is_front(p) and workload in (None, p.workload)]


@dataclass(frozen=True)
class FrontTarget:
    """One target interactivity of a front point: the metrics of its cost and throughput."""

    text: str  # as the metric names it, '.' for '_': '12.5'
    value: float | None  # tok/s per user (None: a name that is not a number)
    usd_key: str  # usd_per_1m_output_tok_at_<X>_tok_per_user
    throughput_key: str  # throughput_per_gpu_at_<X>_tok_per_user


_USD_AT, _PER_USER = "usd_per_1m_output_tok_at_", "_tok_per_user"


def front_targets(point: PointResult) -> list[FrontTarget]:
    """The targets a front point has a cost for, lowest first."""
    out = []
    for key in point.metrics:
        if key.startswith(_USD_AT) and key.endswith(_PER_USER) and len(key) > len(_USD_AT) + len(_PER_USER):
            name = key[len(_USD_AT):-len(_PER_USER)]
            text = name.replace("_", ".")
            try:
                value: float | None = float(text)
            except ValueError:
                value = None
            out.append(FrontTarget(text, value, key, f"throughput_per_gpu_at_{name}{_PER_USER}"))
    return sorted(out, key=lambda t: (t.value is None, t.value or 0.0, t.text))


@dataclass(frozen=True)
class FrontRow:
    target: str  # the target interactivity, tok/s per user
    usd_per_1m_output_tok: str
    throughput_per_gpu: str


FRONT_HEADERS = ("target interactivity (tok/s per user)", "cost per 1M output tokens", "output per GPU")


def front_rows(point: PointResult) -> list[FrontRow]:
    """The cost and the throughput per GPU of a front point at each target interactivity."""
    m = point.metrics
    return [FrontRow(t.text, cell(m, t.usd_key), cell(m, t.throughput_key)) for t in front_targets(point)]


def count_text(value: Any) -> str:
    """A whole number written out (8192, not 8190); other numbers as fmt_num."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and float(value).is_integer():
        return str(int(value))
    return fmt_num(value)


def server_metric_table(points: Iterable[PointResult]) -> tuple[list[str], list[list[str]]]:
    """The server's /metrics differences over each stage: (stage labels, rows of [name, value per
    stage]); names sorted; ([], []) when no stage has any."""
    stages = [p for p in points if isinstance(p.metrics.get("server_metrics"), dict) and p.metrics["server_metrics"]]
    names = sorted({str(k) for p in stages for k in p.metrics["server_metrics"]})
    rows = [[name, *(count_text(p.metrics["server_metrics"].get(name)) for p in stages)] for name in names]
    return [stage_label(p) for p in stages], rows


def endpoints(points: Iterable[PointResult]) -> list[str]:
    """The endpoints the stages were measured against (user-given URLs), each once."""
    return list(dict.fromkeys(str(p.metrics["endpoint"]) for p in points if p.metrics.get("endpoint")))


def front_lines(points: Iterable[PointResult]) -> list[str]:
    """What each cost-front point says: the cost at every target interactivity, or why not."""
    out = []
    for p in points:
        if not is_front(p):
            continue
        if p.error:
            out.append(f"cost front: {p.error}")
            continue
        for t in front_targets(p):
            out.append(f"at {t.text} tok/s per user: {cell(p.metrics, t.usd_key)} per 1M output tokens "
                       f"({cell(p.metrics, t.throughput_key)} per GPU, interpolated along the measured front)")
        for note in p.metrics.get("serving_notes") or ():
            out.append(f"cost front: {note}")
    return out
