"""The inference memory budget of a point (perfkit.core.memory_budget) as display rows, made once
for every view: `perfkit profile`'s summary (one line per point), `perfkit memory RUNDIR` (the
table), the Markdown and HTML reports and the dashboard's Run page. Labels and definitions come
from `TERMS`, numbers from perfkit.core.units; a term not measured reads "not measured" with why.

    from perfkit.reports.inference_budget import budget_rows, budget_text, budget_line, run_budgets
    print(budget_text(point.memory_budget))            # the table, plain text
    print(budget_text(budget, utilization=0.95))       # the what-if at another utilization
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfkit.core.codec import to_builtins
from perfkit.core.memory_budget import (
    NOT_MEASURED,
    PARTITION,
    TERMS,
    KvWhatIf,
    MemoryBudget,
    kv_what_if,
)
from perfkit.core.record import PointResult, Run, load_run
from perfkit.core.run_layout import MEMORY_DIR, RUN_FILE
from perfkit.core.terminal import terminal_safe
from perfkit.core.units import fmt_percent, fmt_value, sig

BUDGET_HEADERS = ("term", "bytes", "source", "how / why", "definition")
TOTAL_LABEL = "= device memory in use"
TOTAL_DEFINITION = "the sum of the terms above (all measured: NVML's used memory at the pass's peak)"
WHAT_IF_DEFINITION = ("vLLM gpu_memory_utilization: KV budget = utilization x device total - (peak "
                      "reserved - KV cache) - non-PyTorch; tokens = KV budget // KV bytes per token")


@dataclass(frozen=True)
class BudgetRow:
    label: str
    value_bytes: int | None
    text: str  # the value formatted ("-" when not measured)
    source: str  # measured | estimated | not measured | derived
    note: str
    definition: str
    indent: int = 0  # 1: an "of which" or a what-if detail


def _bytes(value: int | None) -> str:
    return "-" if value is None else fmt_value(value, "B")


def what_if_rows(budget: MemoryBudget, what_if: KvWhatIf | None) -> list[BudgetRow]:
    if what_if is None:
        return [BudgetRow("KV what-if", None, "-", NOT_MEASURED, "the device's total memory is unknown",
                          WHAT_IF_DEFINITION)]
    u = fmt_percent(what_if.utilization)
    fits = (f"{what_if.tokens:,} tokens = {what_if.sequences:,} sequences of "
            f"{budget.tokens_per_sequence} tokens ({sig(budget.kv_bytes_per_token)} B per token)")
    return [
        BudgetRow(f"KV budget at {u}", what_if.kv_budget_bytes, _bytes(what_if.kv_budget_bytes), "derived",
                  what_if.note, WHAT_IF_DEFINITION),
        BudgetRow(f"fits at {u}", what_if.tokens, fits, "derived", f"the point runs {budget.batch} sequences",
                  "KV-cache tokens (and sequences of the point's cache length) that fit in the KV budget",
                  indent=1),
    ]


def budget_rows(budget: MemoryBudget, utilization: float | None = None) -> list[BudgetRow]:
    """The partition terms, their total, the graph pools ("of which"), the analytic KV estimate,
    the device's total and the KV what-if (at `utilization`, else the one the run recorded)."""
    rows = []
    for key in PARTITION:
        t = budget.term(key)
        if t is not None:
            rows.append(BudgetRow(TERMS[key].label, t.value_bytes, _bytes(t.value_bytes), t.source, t.note,
                                  TERMS[key].definition))
    missing = [r.label for r in rows if r.value_bytes is None]
    total = budget.accounted_bytes
    rows.append(BudgetRow(TOTAL_LABEL, total, _bytes(total), "derived",
                          f"without {', '.join(missing)} (not measured)" if missing else "", TOTAL_DEFINITION))
    for key, indent in (("graph_pool_bytes", 1), ("kv_cache_estimate_bytes", 0), ("device_total_bytes", 0)):
        t = budget.term(key)
        if t is not None:
            rows.append(BudgetRow(TERMS[key].label, t.value_bytes, _bytes(t.value_bytes), t.source, t.note,
                                  TERMS[key].definition, indent))
    what_if = budget.what_if if utilization is None else kv_what_if(budget, utilization)
    return rows + what_if_rows(budget, what_if)


def budget_text(budget: MemoryBudget, utilization: float | None = None) -> str:
    """The budget as a plain-text table (term, bytes, source, how), terminal-safe."""
    rows = budget_rows(budget, utilization)
    width = max(len(("  " * r.indent) + r.label) for r in rows)
    value_width = max(len(r.text) for r in rows if r.indent == 0 or len(r.text) < 20)
    lines = [f"memory budget ({terminal_safe(budget.device)}, batch {budget.batch}, "
             f"{budget.tokens_per_sequence} tokens per sequence)"]
    for r in rows:
        name = ("  " * r.indent + r.label).ljust(width)
        how = f"  {r.note}" if r.note else ""
        lines.append(terminal_safe(f"  {name}  {r.text.rjust(value_width)}  {r.source.ljust(12)}{how}".rstrip()))
    return "\n".join(lines)


def budget_line(budget: MemoryBudget) -> str:
    """One line for a summary: the measured terms and the what-if."""
    parts = []
    for key in ("weights_bytes", "kv_cache_bytes", "activation_peak_bytes", "allocator_cache_bytes",
                "non_torch_bytes"):
        t = budget.term(key)
        if t is not None and t.value_bytes is not None:
            parts.append(f"{TERMS[key].label} {_bytes(t.value_bytes)}")
    w = budget.what_if
    if w is not None:
        parts.append(f"KV fits {w.tokens:,} tokens ({w.sequences:,} seqs) at {fmt_percent(w.utilization)}")
    return " · ".join(parts)


def budget_json(budget: MemoryBudget) -> dict[str, Any]:
    """The record as JSON builtins, each term with its label and definition (`--format json`)."""
    data: dict[str, Any] = to_builtins(budget)
    for term in data["terms"]:
        d = TERMS.get(term["key"])
        if d is not None:
            term.update(label=d.label, definition=d.definition)
    return data


def run_budgets(run: Run) -> list[tuple[PointResult, MemoryBudget]]:
    """The points of `run` with a memory budget, in point order."""
    return [(p, p.memory_budget) for p in run.points if p.memory_budget is not None]


def budgets_for_path(path: str | Path) -> list[tuple[PointResult, MemoryBudget]]:
    """For `perfkit memory PATH`: the budgets of a run directory, or of the one point whose memory
    artifact PATH is (RUN/memory/<file>); [] when PATH is neither (a bare snapshot or trace)."""
    p = Path(path)
    run_dir = p if p.is_dir() else p.parent.parent if p.parent.name == MEMORY_DIR else None
    if run_dir is None or not (run_dir / RUN_FILE).is_file():
        return []
    found = run_budgets(load_run(run_dir))
    if p.is_dir():
        return found
    rel = f"{MEMORY_DIR}/{p.name}"
    return [(q, b) for q, b in found if q.metrics.get("memory_artifact") == rel]
