"""Terminal table and JSON of a gate / compare result."""

from __future__ import annotations

import json
from typing import Any

from perfkit.regression.gate_compare import GateResult
from perfkit.regression.gate_types import Verdict
from reports.gate_format import fmt_change, fmt_interval, fmt_p, fmt_value, sort_key


def to_json_obj(result: GateResult) -> dict[str, Any]:
    return {
        "baseline": _side(result.base),
        "candidate": _side(result.cand),
        "policy": {"source": result.policy.source, "correction": result.policy.correction},
        "summary": {v.value: result.count(v) for v in Verdict},
        "regressed": result.regressed,
        "incomparable_reasons": list(result.run_reasons),
        "only_in_baseline": list(result.only_base),
        "only_in_candidate": list(result.only_cand),
        "metrics": [c.to_dict() for c in result.comparisons],
    }


def _side(side: Any) -> dict[str, Any]:
    return {"run_id": side.run_id, "selector": side.label, "gpu": side.gpu, "commit": side.commit,
            "branch": side.branch}


def render_json(result: GateResult) -> str:
    return json.dumps(to_json_obj(result), indent=1, allow_nan=False)


def render_table(result: GateResult) -> str:
    rows = [("verdict", "metric", "baseline", "candidate", "change", "interval", "p", "reason")]
    for c in sorted(result.comparisons, key=sort_key):
        rows.append((c.verdict.value, c.metric, fmt_value(c.base_value, c.unit), fmt_value(c.cand_value, c.unit),
                     fmt_change(c), fmt_interval(c), fmt_p(c.p_value), c.reason))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r[:-1], widths, strict=True)) + "  " + r[-1] for r in rows]
    head = (f"baseline {result.base.label} ({result.base.run_id}, {result.base.gpu})  vs  "
            f"candidate {result.cand.label} ({result.cand.run_id}, {result.cand.gpu})")
    counts = ", ".join(f"{result.count(v)} {v.value}" for v in Verdict if result.count(v))
    tail = [f"{len(result.comparisons)} metrics: {counts or 'none compared'}"]
    if result.only_base:
        tail.append(f"only in baseline ({len(result.only_base)}): {', '.join(result.only_base[:5])}"
                    + (" ..." if len(result.only_base) > 5 else ""))
    if result.only_cand:
        tail.append(f"only in candidate ({len(result.only_cand)}): {', '.join(result.only_cand[:5])}"
                    + (" ..." if len(result.only_cand) > 5 else ""))
    return "\n".join([head, *[line.rstrip() for line in lines], *tail]) + "\n"
