"""The kernel level of a serving stage's why (perfkit.regression.kernel_why.KernelWhy) as plain
lines: one per step type, then the alignment note, the client check and the reproduce command.
Same words in the terminal, the gate's Markdown, report --vs and the dashboard (each format
escapes them its own way). Computes nothing beyond formatting.

    decode steps +1.1 ms (+17%): attention +0.9 ms (flash_fwd_splitkv... x32 per step), GEMM unchanged, gaps +0.1 ms
"""

from __future__ import annotations

import shlex

from perfkit.core.units import fmt_change, fmt_time
from perfkit.regression.kernel_why import ClassDelta, KernelWhy, StepTypeDelta
from perfkit.regression.step_verdicts import MOVED, UNCHANGED, WITH_STEP

MAX_CLASSES = 4
TOP_CHARS = 40
STEP_FACTOR_SHOWN = 0.05  # a common factor further from 1 than this is shown beside a moved class


def _signed(x: float) -> str:
    return ("+" if x >= 0 else "-") + fmt_time(abs(x))


def _short(name: str) -> str:
    return name if len(name) <= TOP_CHARS else name[: TOP_CHARS - 3] + "..."


def class_text(c: ClassDelta) -> str:
    """`attention +0.9 ms (+80%) (flash_fwd... x32 per step)`, `GEMM unchanged`, `norm within noise`,
    `MLP -0.1 ms (-14%) like the whole step`,
    `MLP -0.02 ms (-3.7%; +55% against the rest of the step, which moved -38%)`."""
    if c.state == UNCHANGED:
        return f"{c.name} unchanged"
    ratio = c.cand_s / c.base_s if c.base_s > 0 else float("inf")
    if c.state == WITH_STEP:
        return f"{c.name} {_signed(c.delta_s)} ({fmt_change(ratio)}) like the whole step"
    if c.state != MOVED:
        return f"{c.name} within noise"
    top = f" ({_short(c.top)} x{c.top_per_step:.3g} per step)" if c.top else ""
    own = ""
    if abs(c.step_factor - 1) > STEP_FACTOR_SHOWN and c.base_s > 0:
        own = (f"; {fmt_change(c.cand_s / c.step_factor / c.base_s)} against the rest of the step, "
               f"which moved {fmt_change(c.step_factor)}")
    return f"{c.name} {_signed(c.delta_s)} ({fmt_change(ratio)}{own}){top}"


def step_type_text(s: StepTypeDelta) -> str:
    b = s.busy
    head = f"{s.kind} steps"
    if b.state == MOVED:
        ratio = b.cand_s / b.base_s if b.base_s > 0 else float("inf")
        head += f" {_signed(b.delta_s)} ({fmt_change(ratio)})"
    else:
        head += f" {'unchanged' if b.state == UNCHANGED else 'within noise'} ({fmt_time(b.base_s)} -> {fmt_time(b.cand_s)})"
    parts = [class_text(c) for c in s.classes[:MAX_CLASSES]]
    if b.state == MOVED and not any(c.state == MOVED for c in s.classes) and any(c.state == WITH_STEP for c in s.classes):
        parts.insert(0, "no one class, every class by the same factor")
    if s.gaps is not None:
        g = s.gaps
        parts.append(f"launch gaps {_signed(g.delta_s)}" if g.state == MOVED else
                     f"launch gaps {'unchanged' if g.state == UNCHANGED else 'within noise'}")
    return f"{head}: {', '.join(parts)} [{s.n_base} vs {s.n_cand} steps]"


def unattributed_text(s: StepTypeDelta) -> str:
    """The share of a step type's GPU time that no op accounts for: graph replays without their capture."""
    return (f"{s.kind} steps: {s.unattributed_base:.0%} (baseline) / {s.unattributed_cand:.0%} (candidate) of GPU "
            "time replayed by CUDA graphs whose capture trace is not given: not attributed to an op "
            "(GPU work, not idle)")


def first_moved(k: KernelWhy) -> tuple[StepTypeDelta, ClassDelta] | None:
    """The step type and class that moved most (None when nothing moved)."""
    best: tuple[StepTypeDelta, ClassDelta] | None = None
    for s in k.step_types:
        for c in s.classes:
            if c.state == MOVED and (best is None or abs(c.own_delta_s) > abs(best[1].own_delta_s)):
                best = (s, c)
    return best


def reproduce_line(k: KernelWhy) -> str:
    """`reproduce: perfkit replay TRACE --kernel NAME` for the top kernel of the class that moved most."""
    hit = first_moved(k)
    if hit is None or not k.traces_cand:
        return ""
    _, c = hit
    name = c.top or c.name
    flag = "--kernel" if k.on_gpu else "--op"
    return f"reproduce: perfkit replay {shlex.quote(k.traces_cand[0])} {flag} {shlex.quote(name)}"


def kernel_lines(k: KernelWhy) -> list[str]:
    """The lines under a stage's why line."""
    if k.failure:
        return [k.failure]
    unit = "GPU time" if k.on_gpu else "CPU op time"
    lines = []
    for s in k.step_types:
        lines.append(step_type_text(s))
        if s.unattributed_base > 0 or s.unattributed_cand > 0:
            lines.append(unattributed_text(s))
    if k.alignment != "name":
        lines.append(f"kernel names differ between the sides (exact names match {k.exact_share:.0%} of the time): "
                     f"aligned by {'the launching op' if k.alignment == 'op' else 'op category'}, "
                     f"{k.matched_share:.0%} of the time matched")
    lines.append(f"({unit}; steps from {k.method_base}" + (f" / {k.method_cand}" if k.method_cand != k.method_base else "") + ")")
    for side, c in k.client:
        whose = "client time per token p50 inside the window" if c.inside_window else "client TPOT p50 of the stage"
        lines.append(f"{side}: step period {fmt_time(c.step_s)} per step vs {whose} "
                     f"{fmt_time(c.tpot_p50_s)} (x{c.ratio:.2f})")
    rep = k.reproduce or reproduce_line(k)
    if rep:
        lines.append(rep)
    return lines
