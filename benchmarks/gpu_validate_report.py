"""The GPU validation's two reports: report.json (everything) and report.md (for people).

Both are rewritten atomically after every step (benchmarks/gpu_validate.py), so a run cut short
still leaves a consistent pair. Standard library only.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

STATUSES = ("ok", "fail", "skipped")


def counts(steps: list[dict[str, Any]]) -> dict[str, int]:
    out = dict.fromkeys(STATUSES, 0)
    for s in steps:
        out[s["status"]] = out.get(s["status"], 0) + 1
    return out


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_reports(out: Path, report: dict[str, Any]) -> None:
    full = {**report, "counts": counts(report["steps"])}
    _write(out / "report.json", json.dumps(full, indent=1) + "\n")
    _write(out / "report.md", markdown(full))


def _num(value: Any, digits: int = 4) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown(report: dict[str, Any]) -> str:
    card = report.get("card") or f"no GPU ({report.get('card_reason')})"
    title = f"# GPU validation: {card}{' (dry run)' if report.get('dry_run') else ''}"
    c = report["counts"]
    lines = [
        title, "",
        f"Started {report['started']}, finished {report.get('finished') or '(running)'}; "
        f"{report.get('elapsed_s', 0)} s of the {report['deadline_s']} s deadline. "
        f"Steps: {c['ok']} ok, {c['fail']} failed, {c['skipped']} skipped. ncu: {report.get('ncu') or 'not found'}.",
        "", "| step | status | seconds | limit s | reason |", "|---|---|---:|---:|---|",
    ]
    for s in report["steps"]:
        lines.append(f"| {s['name']} | {s['status']} | {s['seconds']} | {s['limit_s']} | {_cell(s['reason'] or '')} |")
    for s in report["steps"]:
        section = _details_section(s)
        if section:
            lines += ["", f"## {s['name']}", "", *section]
    lines += ["", "Logs of every step: logs.tar.gz; everything above: report.json.", ""]
    return "\n".join(lines)


def _details_section(step: dict[str, Any]) -> list[str]:
    d = step.get("details") or {}
    name = step["name"]
    if "error" in d and len(d) == 1:
        return [f"Could not read the step's results: {_cell(d['error'])}"]
    if name == "gemm" and d.get("points"):
        rows = ["| point | status | median s | flop/s | rel err | SM MHz after timing | throttle after timing |",
                "|---|---|---:|---:|---:|---:|---|"]
        for p in d["points"]:
            throttle = ", ".join(p.get("throttle_after_timing") or []) or "-"
            rows.append(f"| {_cell(p['key'])} | {p['status']} | {_num(p['median_s'])} | {_num(p['flop_per_s'])} | "
                        f"{_num(p['rel_err'])} | {_num(p.get('sm_mhz_after_timing'))} | {_cell(throttle)} |")
        return rows
    if name == "ncu_metrics" and d:
        missing = ", ".join(d.get("missing") or []) or "none"
        return [f"Chip {d.get('chip')}: {len(d.get('requested') or [])} metrics requested, {d.get('known')} known "
                f"to ncu; missing: {missing}." + (f" Error: {_cell(d['error'])}" if d.get("error") else "")]
    if name == "ncu_flops" and d.get("rows"):
        rows = ["| dtype | points | expected flop | ncu flop | ratio | ok |", "|---|---:|---:|---:|---:|---|"]
        for r in d["rows"]:
            rows.append(f"| {r['dtype']} | {len(r['points'])} | {_num(r['expected_flop'])} | {_num(r['ncu_flop'])} | "
                        f"{_num(r.get('ratio'), 5)} | {'yes' if r['ok'] else 'no: ' + _cell(r.get('problem', ''))} |")
        return rows
    if name == "graph_trace" and d:
        seen = "visible" if d.get("kernels_visible") else "NOT visible"
        text = (f"torch {d.get('torch')}, CUDA {d.get('cuda')}: {d.get('graph_launches')} graph launches, "
                f"{d.get('launches_with_kernels')} with kernels in the trace: kernels of graphs captured before "
                f"profiling are {seen} in torch.profiler traces.")
        return [text] + ([f"Recorded on such points: {_cell(d['note'])}"] if d.get("note") else [])
    if name == "wheels" and d.get("wheels"):
        return [f"{len(d['wheels'])} wheels: {', '.join(d['wheels'])}"]
    if d:
        return [f"`{_cell(json.dumps(d)[:500])}`"]
    return []
