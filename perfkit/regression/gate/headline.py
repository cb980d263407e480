"""The answer of a comparison in one line, first in every view: slower / costlier / worse (or
faster / cheaper / better), unchanged, or cannot tell; by how much (the largest change of its
kind, as the ratio of the shown values); and why (the serving stage's attribution, or the row's
reason), with a spec change between the runs said before it.

- regressed rows: the words of their kinds (time and throughput: slower; USD: costlier; other:
  worse), the row that moved most, how many rows regressed;
- else improved rows: faster / cheaper / better likewise;
- else every row decisive: unchanged;
- else: cannot tell, with the undecided rows counted by verdict.

Pure: a GateResult in, a Headline out; every view renders `Headline.text` (and `why`) as it is.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

from perfkit.core.metric_defs import FRACTION, metric_def
from perfkit.core.units import fmt_change, fmt_percent
from perfkit.regression.gate.compare import DECISIVE, GateResult
from perfkit.regression.gate.types import Comparison, Verdict

SLOWER, COSTLIER, WORSE = "slower", "costlier", "worse"
BETTER_WORD = {SLOWER: "faster", COSTLIER: "cheaper", WORSE: "better"}
UNCHANGED, CANNOT_TELL = "unchanged", "cannot tell"


@dataclass(frozen=True)
class Headline:
    word: str  # "slower and costlier", "faster", "unchanged", "cannot tell"
    amount: str  # "E2E p50 +19% (serve-bench concurrency=4); 3 of 26 measurements regressed"
    why: str  # the cause ("" when none is known)
    spec_change: str  # the spec change between the runs ("" when none)

    @property
    def text(self) -> str:
        """The one line: `[spec change. ]word: amount`."""
        head = f"{self.word}: {self.amount}" if self.amount else self.word
        return f"{self.spec_change}. {head}" if self.spec_change else head

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "word": self.word, "amount": self.amount, "why": self.why or None,
                "spec_change": self.spec_change or None}


def shown_ratio(c: Comparison) -> float:
    return c.shown_ratio


def kind(c: Comparison) -> str:
    if c.unit == "USD" or c.metric.endswith("_usd") or ":usd_" in c.metric:
        return COSTLIER
    if c.unit == "s" or c.unit.endswith("/s") or c.metric.endswith("_s") or c.metric.endswith("_per_s"):
        return SLOWER
    return WORSE


def _size(c: Comparison) -> tuple[float, bool]:
    """How far the row moved (log of the shown ratio; infinite at 0 and infinity); among equals, a
    share (SLO attainment: the collapse a reader looks for) first."""
    r = shown_ratio(c)
    share = metric_def(c.metric.rsplit(":", 1)[-1]).shown_as == FRACTION
    if r == 0 or r == math.inf:
        return math.inf, share
    return (abs(math.log(r)) if r > 0 and math.isfinite(r) else 0.0), share


def _name(c: Comparison) -> str:
    """'E2E p50 +19% (serve-bench concurrency=4)'; a share: 'SLO attainment 100% -> 0% (...)'."""
    d = metric_def(c.metric.rsplit(":", 1)[-1] if ":" in c.metric else c.metric)
    if d.shown_as == FRACTION:
        moved = f"{d.label} {fmt_percent(c.base_value)} -> {fmt_percent(c.cand_value)}"
    else:
        moved = f"{d.label} {fmt_change(shown_ratio(c))}"
    return moved + (f" ({c.label})" if c.label and c.point_key else "")


def _why_of(result: GateResult, c: Comparison) -> str:
    for w in result.why:
        if w.point_key == c.point_key:
            return w.text
    return ""


def headline(result: GateResult) -> Headline:
    rows = result.rows
    spec = result.spec_change.text if result.spec_change is not None else ""
    n = len(rows)
    for verdict, words in ((Verdict.REGRESSED, None), (Verdict.IMPROVED, BETTER_WORD)):
        moved = sorted((c for c in rows if c.verdict == verdict), key=_size, reverse=True)
        if not moved:
            continue
        present = {kind(c) for c in moved}
        kinds = [words[k] if words else k for k in (SLOWER, COSTLIER, WORSE) if k in present]
        word = kinds[0] if len(kinds) == 1 else ", ".join(kinds[:-1]) + " and " + kinds[-1]
        top = moved[0]
        amount = f"{_name(top)}; {len(moved)} of {n} measurements {verdict.value}"
        why = _why_of(result, top) or (result.why[0].text if result.why else "")
        return Headline(word, amount, why, spec)
    undecided = Counter(c.verdict.value for c in rows if c.verdict not in DECISIVE)
    if not undecided and rows:
        return Headline(UNCHANGED, f"all {n} measurements within their min_effect", "", spec)
    counts = ", ".join(f"{k} {v}" for k, v in undecided.most_common())
    return Headline(CANNOT_TELL, f"{sum(undecided.values())} of {n} measurements undecided ({counts})",
                    result.why[0].text if result.why else "", spec)
