"""The capacity search of a serving run as text: the answer first, then one line per stage.

    capacity at the SLO (ttft p90 <= 120 ms): 4 in flight, proven at 99% confidence (estimate 4); 6 stages, bracketed
      concurrency 1: pass  ttft 0/48 slower (proven)
      concurrency 8: fail  ttft 44/48 slower (violated)
"""

from __future__ import annotations

from typing import Any

from perfkit.core.record import Run
from perfkit.core.terminal import terminal_safe

_UNIT = {"concurrency": "in flight", "rate": "req/s"}


def _slo_words(rows: list[dict[str, Any]]) -> str:
    first = rows[0].get("slo", []) if rows else []
    return ", ".join(f"{s['metric'].removesuffix('_s')} p{s['quantile'] * 100:g} <= {s['threshold_s'] * 1e3:g} ms"
                     for s in first)


def capacity_lines(run: Run) -> list[str]:
    """Lines for every capacity point of `run` (none when it has none)."""
    out: list[str] = []
    for point in run.points:
        over = point.params.get("capacity")
        m = point.metrics or {}
        rows = m.get("capacity_probes")
        if over not in _UNIT or not isinstance(rows, list):
            continue
        proven, estimate = m.get(f"capacity_proven_{over}"), m.get(f"capacity_estimate_{over}")
        answer = f"{proven:g} {_UNIT[over]}, proven" if proven is not None else "none proven"
        out.append(f"capacity at the SLO ({_slo_words(rows)}): {answer}"
                   f" (estimate {'none' if estimate is None else f'{estimate:g}'}); "
                   f"{m.get('capacity_stages')} stages, {terminal_safe(str(m.get('capacity_stopped', '')))}")
        for row in rows:
            slos = "; ".join(f"{s['metric'].removesuffix('_s')} {s['slower']}/{row['requests']} slower ({s['verdict']}"
                             + (f", {s['requests_needed']} requests would prove it" if s.get("requests_needed") else "")
                             + ")" for s in row.get("slo", []))
            extra = row.get("client_bound") or row.get("saturated") or ""
            out.append(f"  {over} {row['load']:g}: {row['outcome']:<7} {slos}"
                       + (f"  [{terminal_safe(str(extra))}]" if extra else ""))
    return out
