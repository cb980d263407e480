"""A point's numbers as display text, made once for every renderer: the terminal summary, the
Markdown and HTML reports and the dashboard's run page show the same strings (perfkit.core.units)."""

from __future__ import annotations

from dataclasses import dataclass

from perfkit.core.record import PointResult
from perfkit.core.units import fmt_num, fmt_pct, fmt_rate, fmt_time
from perfkit.reports.serving.rows import SERVING_STAGE, is_serving


@dataclass(frozen=True)
class PointCells:
    median: str  # time per call
    ci: str  # 95% CI of the median, as a relative half-width
    n: str  # timed samples
    stop: str  # why sampling stopped
    flop_per_s: str
    bytes_per_s: str
    rel_err: str  # of the numerics check against the reference

    @property
    def timed(self) -> bool:
        return self.median not in ("-", SERVING_STAGE)


def point_cells(p: PointResult) -> PointCells:
    """The numbers of `p` as text; '-' where the point has none (a serving stage's median says
    "serving stage": the load client measured it request by request, its metrics tell)."""
    m = p.measurement
    st = m.stats if m is not None and m.samples_s else None
    ach = p.achieved
    return PointCells(
        median=fmt_time(st.median_s) if st else (SERVING_STAGE if is_serving(p) else "-"),
        ci=fmt_pct(st.rel_ci_halfwidth) if st else "-",
        n=str(st.n) if st else "-",
        stop=(m.stop_reason or "-") if m is not None and st else "-",
        flop_per_s=_rate(ach.get("flop_per_s"), "flop/s"),
        bytes_per_s=_rate(ach.get("bytes_per_s"), "B/s"),
        rel_err=fmt_num(p.numerics.rel_err) if p.numerics else "-",
    )


def _rate(value: object, unit: str) -> str:
    """A throughput; '-' where the cost counts none (a collective moves bytes but adds no flop)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return fmt_rate(value, unit)
    return "-"
