"""The kernel level of a serving stage's why (perfkit.regression.kernel_why.KernelWhy) as a table:
one row per step type and class of work, the rows `kernel_lines` writes as text (busy time per
step, every class, launch gaps), with the verdicts the gate's statistics gave. The dashboard's
Compare page shows it under each stage's why. Formats; computes nothing.
"""

from __future__ import annotations

from pathlib import Path

from perfkit.core.units import fmt_change, fmt_time
from perfkit.regression.kernel_why import ClassDelta, KernelWhy, StepTypeDelta

KERNEL_COLUMNS = ("step type", "steps", "class", "baseline per step", "candidate per step", "change", "verdict",
                  "top kernel / op", "no op (graph replay)")
PERFETTO_URL = "https://ui.perfetto.dev"


def _row(s: StepTypeDelta, c: ClassDelta, label: str) -> dict[str, str]:
    ratio = c.cand_s / c.base_s if c.base_s > 0 else float("inf")
    top = f"{c.top} x{c.top_per_step:.3g} per step" if c.top else ""
    no_op = ""
    if label == "busy" and (s.unattributed_base > 0 or s.unattributed_cand > 0):
        no_op = f"{s.unattributed_base:.0%} / {s.unattributed_cand:.0%}"
    return {"step type": s.kind, "steps": f"{s.n_base} vs {s.n_cand}", "class": label,
            "baseline per step": fmt_time(c.base_s), "candidate per step": fmt_time(c.cand_s),
            "change": fmt_change(ratio), "verdict": c.state, "top kernel / op": top, "no op (graph replay)": no_op}


def kernel_rows(k: KernelWhy) -> list[dict[str, str]]:
    """KERNEL_COLUMNS per row: each step type's busy time, its classes (moved first), its gaps."""
    rows = []
    for s in k.step_types:
        rows.append(_row(s, s.busy, "busy"))
        rows += [_row(s, c, c.name) for c in s.classes]
        if s.gaps is not None:
            rows.append(_row(s, s.gaps, "launch gaps"))
    return rows


def trace_files(k: KernelWhy) -> list[tuple[str, Path]]:
    """(side, path) of every trace file the kernel level was read from, baseline first."""
    return [("baseline", Path(p)) for p in k.traces_base] + [("candidate", Path(p)) for p in k.traces_cand]
