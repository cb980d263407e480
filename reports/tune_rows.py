"""The "Tune winners" table as display text, made once for the HTML and Markdown reports and the
dashboard's Run page: per tuned workload and shape, the best configuration, its median and 95% CI,
the runner-up and its median, the speedup over the runner-up and whether the two are told apart
(perfkit/core/tune_result.py holds the record; numbers by perfkit.core.units)."""

from __future__ import annotations

from dataclasses import astuple, dataclass
from typing import Any

from perfkit.core.tune_result import TuneResult
from perfkit.core.units import fmt_ratio, fmt_time

TUNE_HEADERS = ("workload", "shape", "best config", "median", "95% CI", "runner-up", "runner-up median",
                "speedup", "distinguishable", "configs", "note")
TUNE_NUMERIC = (3, 4, 6, 7)  # right-aligned columns
DISTINCT_TEXT = {True: "yes", False: "no (CIs overlap)", None: "-"}


@dataclass(frozen=True)
class TuneRow:
    workload: str
    shape: str
    best: str  # the winning configuration, `k=v ...`
    median: str
    ci: str  # 95% CI of the best's median, `low..high`
    runner_up: str
    runner_up_median: str
    speedup: str  # runner-up median / best median
    distinguishable: str
    configs: str  # `3 timed, 1 failed`
    note: str  # the verdict in words

    def cells(self) -> tuple[str, ...]:
        """The cells under TUNE_HEADERS."""
        return tuple(astuple(self))


def assignments(values: dict[str, Any]) -> str:
    """`k=v k=v` of a shape or configuration."""
    return " ".join(f"{k}={v}" for k, v in values.items())


def tune_rows(results: list[TuneResult]) -> list[TuneRow]:
    """One row per tuned workload and shape; '-' where there is no winner or runner-up."""
    rows = []
    for r in results:
        b, ru = r.best, r.runner_up
        ci = "-"
        if b is not None and b.ci_low_s is not None and b.ci_high_s is not None:
            ci = f"{fmt_time(b.ci_low_s)}..{fmt_time(b.ci_high_s)}"
        rows.append(TuneRow(
            workload=r.workload, shape=assignments(r.shape),
            best=assignments(b.config) if b is not None else "-",
            median=fmt_time(b.median_s) if b is not None else "-", ci=ci,
            runner_up=assignments(ru.config) if ru is not None else "-",
            runner_up_median=fmt_time(ru.median_s) if ru is not None else "-",
            speedup=fmt_ratio(r.speedup_vs_runner_up),
            distinguishable=DISTINCT_TEXT[r.distinguishable],
            configs=f"{r.timed} timed, {r.failed} failed",
            note=r.note,
        ))
    return rows
