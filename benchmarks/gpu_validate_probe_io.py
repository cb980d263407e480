"""The GPU validation probes' results (benchmarks/gpu_validate_tools.py, gpu_validate_nccl_probe.py):
one JSON (everything) and one Markdown table (for people) per probe, written atomically into OUT.

A result is {"probe", "dry_run", "checks": [{"name", "status", "value", ...}], ...}; status is
ok / warn / fail / skipped (skipped says why, e.g. "dry run: would ..."; warn: works, with a
limit worth knowing). Standard library only.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

STATUSES = ("ok", "warn", "fail", "skipped")


def check(name: str, status: str, value: str, **details: Any) -> dict[str, Any]:
    if status not in STATUSES:
        raise ValueError(f"check {name}: status {status!r} is not one of {STATUSES}")
    return {"name": name, "status": status, "value": value, **details}


def _cell(text: Any) -> str:
    """One Markdown table cell: pipes, newlines and markup characters escaped."""
    s = str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")
    for ch in "*_`[]<>":
        s = s.replace(ch, "\\" + ch)
    return s


def markdown(result: dict[str, Any], title: str) -> str:
    lines = [f"# {_cell(title)}", ""]
    for key in ("device", "backend", "dry_run"):
        if key in result:
            lines.append(f"- {key}: {_cell(result[key])}")
    lines += ["", "| check | status | value |", "|---|---|---|"]
    for c in result["checks"]:
        lines.append(f"| {_cell(c['name'])} | {_cell(c['status'])} | {_cell(c['value'])} |")
    counts = {s: sum(1 for c in result["checks"] if c["status"] == s) for s in STATUSES}
    lines += ["", ", ".join(f"{n} {s}" for s, n in counts.items()), ""]
    return "\n".join(lines)


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_result(out: Path, name: str, title: str, result: dict[str, Any]) -> tuple[Path, Path]:
    """OUT/NAME.json and OUT/NAME.md; their paths."""
    out.mkdir(parents=True, exist_ok=True)
    js, md = out / f"{name}.json", out / f"{name}.md"
    _write(js, json.dumps(result, indent=1, default=str) + "\n")
    _write(md, markdown(result, title))
    return js, md


def exit_code(result: dict[str, Any]) -> int:
    """1 when a check failed, else 0 (warnings and skipped checks say why; they do not fail the probe)."""
    return 1 if any(c["status"] == "fail" for c in result["checks"]) else 0


def finish(out: Path, name: str, title: str, result: dict[str, Any]) -> int:
    """Write the result (write_result), print one line per check and where it went; the exit code."""
    js, md = write_result(out, name, title, result)
    for c in result["checks"]:
        print(f"{c['status']:>7}  {c['name']}: {c['value']}")
    print(f"wrote {js} and {md}")
    return exit_code(result)
