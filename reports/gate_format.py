"""Shared formatting of gate comparisons: numbers, changes, intervals, verdict order."""

from __future__ import annotations

import math

from perfkit.regression.gate_types import Comparison, Verdict

# Most important first: what a reader must act on, then what needs a look.
VERDICT_ORDER = (Verdict.REGRESSED, Verdict.INCOMPARABLE, Verdict.NOISY, Verdict.IMPROVED, Verdict.UNCHANGED)
SYMBOL = {
    Verdict.REGRESSED: "❌",
    Verdict.IMPROVED: "✅",
    Verdict.UNCHANGED: "➖",
    Verdict.NOISY: "〰️",
    Verdict.INCOMPARABLE: "⚠️",
}


def sort_key(c: Comparison) -> tuple[int, float, str]:
    change = abs(math.log(c.ratio)) if c.ratio > 0 and math.isfinite(c.ratio) else 0.0
    return VERDICT_ORDER.index(c.verdict), -change, c.metric


def fmt_value(x: float, unit: str) -> str:
    if not math.isfinite(x):
        return "-"
    if unit == "s":
        for scale, name in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")):
            if abs(x) >= scale or scale == 1e-9:
                return f"{x / scale:.4g} {name}"
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.4g} {prefix}{unit}"
    return f"{x:.4g} {unit}".rstrip()


def fmt_change(c: Comparison) -> str:
    return "-" if not math.isfinite(c.ratio) else f"{(c.ratio - 1.0) * 100:+.2f}%"


def fmt_interval(c: Comparison) -> str:
    if not (math.isfinite(c.ci_low) and math.isfinite(c.ci_high)):
        return "-"
    return f"[{(c.ci_low - 1.0) * 100:+.2f}%, {(c.ci_high - 1.0) * 100:+.2f}%]"


def fmt_p(p: float | None) -> str:
    if p is None or not math.isfinite(p):
        return "-"
    return f"{p:.2g}" if p >= 1e-4 else "<1e-4"
