"""Why two runs have nothing to compare: which runs, which specs, which point keys."""

from __future__ import annotations

from perfkit.regression.gate.compare import GateResult, RunSide


def _side(word: str, side: RunSide) -> str:
    spec = f"spec {side.spec!r}" if side.spec else "no spec name"
    return f"{word} {side.label} (run {side.run_id}, {spec}, {len(side.metrics)} metrics)"


def nothing_in_common(result: GateResult, metric_glob: str | None) -> str | None:
    """One line saying why `result` compares nothing, None when it compares something."""
    if result.comparisons:
        return None
    b, c = result.base, result.cand
    why = []
    if b.spec != c.spec:
        why.append("the specs differ")
    shared_keys = set(b.points) & set(c.points)
    if b.points and c.points and not shared_keys:
        why.append(f"no point key in common ({len(b.points)} vs {len(c.points)} points)")
    shared = {m.name for m in b.metrics} & {m.name for m in c.metrics}
    if not shared:
        why.append("no metric name in common")
    elif metric_glob:
        why.append(f"no common metric matches --metric {metric_glob!r}")
    else:
        why.append("the policy ignores every common metric")
    return (f"nothing in common between {_side('baseline', b)} and {_side('candidate', c)}: {'; '.join(why)}; "
            "compare runs of the same spec (BRANCH@GPU:SPEC names a spec; list runs with `perfkit runs`)")
