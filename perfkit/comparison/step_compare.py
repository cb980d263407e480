"""Two stages' per-step tables compared: per step type, its time per step and the time of each
class of work in it, tested with the gate's statistics (the steps are the samples).

Alignment: when the two sides' kernel / op names differ (eager vs torch.compile, CUDA vs ROCm, a
library upgrade), rows are matched by the op that launched them (GPU: the launching CPU op), then
by the op's category (analyzers/steps/op_category.py: Inductor's fused kernels by the aten ops in
their names); the first key that matches MIN_MATCHED of the time on both sides is used and named.
When none reaches MIN_USABLE, the answer is a failure that says so, never a name-only diff.

Classes: the server's own op-class ranges inside its steps (`perfkit_attention`, `perfkit_mlp`)
when both sides have them, else the categories. Each class is tested twice: its time per step, and
its time over the step's common factor (the median ratio of the step's parts: step_verdicts.
common_factor, relative_state), so a shift of the whole step by one factor is the step's, not every
class's.
"""

from __future__ import annotations

import pandas as pd

from perfkit.analyzers.steps.op_category import op_category
from perfkit.analyzers.steps.samples import (
    BUSY,
    GAPS,
    UNATTRIBUTED_GRAPH,
    UNATTRIBUTED_NO_LAUNCH,
    on_gpu,
    unattributed_share,
)
from perfkit.regression.kernel_why import ClassDelta, KernelWhy, StepTypeDelta
from perfkit.regression.step_verdicts import (
    MOVED,
    StepRow,
    StepVerdict,
    common_factor,
    relative_state,
    step_verdicts,
)

MIN_MATCHED = 0.9
MIN_USABLE = 0.5


_NO_OP = (UNATTRIBUTED_GRAPH, UNATTRIBUTED_NO_LAUNCH)  # reasons there is no op: they match nothing


def _totals(s: pd.DataFrame, level: str) -> pd.Series:
    return s[s["level"] == level].groupby("key")["time_ns"].sum()


def _op_totals(s: pd.DataFrame, side: str) -> pd.Series:
    """Time per launching op; time without an op counted, under a key the other side cannot have."""
    t = _totals(s, "op")
    return t.rename(index=lambda k: f"{k} [{side}]" if k in _NO_OP else k)


def matched_share(base: pd.Series, cand: pd.Series) -> float:
    """The smaller side's share of time whose key is on the other side too."""
    if base.sum() <= 0 or cand.sum() <= 0:
        return 0.0
    common = base.index.intersection(cand.index)
    return float(min(base[common].sum() / base.sum(), cand[common].sum() / cand.sum()))


def _category_totals(s: pd.DataFrame, level: str) -> pd.Series:
    t = _totals(s, level)
    return t.groupby([op_category(str(k)) for k in t.index]).sum() if len(t) else t


def alignment(base: pd.DataFrame, cand: pd.DataFrame) -> tuple[str, float, float]:
    """(key, its matched share, the exact-name share) of two sides' samples."""
    exact = matched_share(_totals(base, "name"), _totals(cand, "name"))
    tries = [("name", exact)]
    if (base["level"] == "op").any() and (cand["level"] == "op").any():
        tries.append(("op", matched_share(_op_totals(base, "baseline"), _op_totals(cand, "candidate"))))
    tries.append(("category", matched_share(_category_totals(base, "name"), _category_totals(cand, "name"))))
    for key, share in tries:
        if share >= MIN_MATCHED:
            return key, share, exact
    key, share = max(tries, key=lambda t: t[1])
    return key, share, exact


def _per_step(s: pd.DataFrame, kind: str, level: str, key: str, steps: list[int]) -> list[float]:
    x = s[(s["kind"] == kind) & (s["level"] == level) & (s["key"] == key)].groupby("step")["time_ns"].sum()
    return [float(x.get(i, 0)) / 1e9 for i in steps]


def _class_samples(s: pd.DataFrame, level: str) -> pd.DataFrame:
    """Rows of the class level: ranges as they are, categories recomputed by op_category of names."""
    if level == "range":
        return s[s["level"] == "range"]
    n = s[s["level"] == "name"].copy()
    n["key"] = [op_category(str(k)) for k in n["key"]]
    return n.assign(level="class")


def _top(s: pd.DataFrame, kind: str, cls: str, level: str, n_steps: int) -> tuple[str, float]:
    n = s[(s["kind"] == kind) & (s["level"] == "name")]
    if level != "range":
        n = n[[op_category(str(k)) == cls for k in n["key"]]]
    if n.empty or level == "range":
        return "", 0.0
    g = n.groupby("key").agg(t=("time_ns", "sum"), c=("count", "sum")).sort_values("t", ascending=False)
    return str(g.index[0]), float(g["c"].iloc[0]) / max(n_steps, 1)


def _mean(x: list[float]) -> float:
    return sum(x) / len(x) if x else 0.0


def _delta(v: StepVerdict, name: str, top: tuple[str, float] = ("", 0.0), state: str = "",
           factor: float | None = None) -> ClassDelta:
    return ClassDelta(name, v.base_mean_s, v.cand_mean_s, state or v.state, top[0], top[1], factor or 1.0)


def compare_steps(point_key: str, base: pd.DataFrame, cand: pd.DataFrame, method_base: str = "",
                  method_cand: str = "") -> KernelWhy:
    """The kernel-level why of one stage from both sides' step samples (analyzers.steps.samples)."""
    key, share, exact = alignment(base, cand)
    gpu = on_gpu(base) and on_gpu(cand)
    failure = ""
    if share < MIN_USABLE:
        failure = (f"the two traces' kernels and ops do not line up: {share:.0%} of their time matched by "
                   f"{key} (exact names {exact:.0%}); no kernel-level answer")
    level = "range" if (base["level"] == "range").any() and (cand["level"] == "range").any() else "category"
    cb, cc = _class_samples(base, level), _class_samples(cand, level)
    rows: list[StepRow] = []
    plan: list[tuple[str, str, str]] = []  # (kind, role, name)
    kinds = [k for k in ("decode", "prefill", "mixed", "unknown")
             if (base["kind"] == k).any() and (cand["kind"] == k).any()]
    factors: dict[str, float | None] = {}
    steps = {(side, k): sorted(set(s.loc[s["kind"] == k, "step"])) for side, s in (("b", base), ("c", cand)) for k in kinds}
    for k in kinds:
        sb, sc = steps[("b", k)], steps[("c", k)]
        for role, lvl, name, fb, fc in [("busy", "step", BUSY, base, cand), ("gaps", "step", GAPS, base, cand)]:
            if ((fb["level"] == lvl) & (fb["key"] == name)).any():
                rows.append(StepRow(f"{k}|{role}|{name}", _per_step(fb, k, lvl, name, sb), _per_step(fc, k, lvl, name, sc)))
                plan.append((k, role, name))
        busy_b, busy_c = _per_step(base, k, "step", BUSY, sb), _per_step(cand, k, "step", BUSY, sc)
        lvl_name = "range" if level == "range" else "class"
        names = sorted(set(cb.loc[cb["kind"] == k, "key"]) | set(cc.loc[cc["kind"] == k, "key"]))
        per = {name: (_per_step(cb, k, lvl_name, name, sb), _per_step(cc, k, lvl_name, name, sc)) for name in names}
        parts = [(_mean(xb), _mean(xc)) for xb, xc in per.values()]
        rest = (_mean(busy_b) - sum(b for b, _ in parts), _mean(busy_c) - sum(c for _, c in parts))
        factor = factors[k] = common_factor([*parts, rest], _mean(busy_b), _mean(busy_c))
        for name, (xb, xc) in per.items():
            rows.append(StepRow(f"{k}|class|{name}", xb, xc))
            plan.append((k, "class", name))
            if factor is not None:
                rows.append(StepRow(f"{k}|relative|{name}", xb, [x / factor for x in xc]))
                plan.append((k, "relative", name))
    verdicts = step_verdicts(rows) if rows else []
    relative = {(p[0], p[2]): v for p, v in zip(plan, verdicts, strict=True) if p[1] == "relative"}
    out = []
    for k in kinds:
        mine = [(p, v) for p, v in zip(plan, verdicts, strict=True) if p[0] == k]
        busy = next((_delta(v, "busy") for p, v in mine if p[1] == "busy"), None)
        if busy is None:
            continue
        gaps = next((_delta(v, "gaps") for p, v in mine if p[1] == "gaps"), None)
        classes = [_delta(v, p[2], _top(cand, k, p[2], level, len(steps[("c", k)])), relative_state(v, relative.get((k, p[2]))), factors[k])
                   for p, v in mine if p[1] == "class"]
        classes.sort(key=lambda c: (c.state != MOVED, -abs(c.own_delta_s)))
        out.append(StepTypeDelta(k, len(steps[("b", k)]), len(steps[("c", k)]), busy, tuple(classes), gaps, level,
                                 unattributed_share(base, k), unattributed_share(cand, k)))
    return KernelWhy(point_key, gpu, method_base, method_cand, key, exact, share, tuple(out), failure)
