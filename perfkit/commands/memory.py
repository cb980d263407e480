"""`perfkit memory FILE` / `perfkit memory diff A B` / `perfkit memory --oom MESSAGE`: where every
byte goes.

FILE is a torch memory snapshot (`torch.cuda.memory._dump_snapshot`, a pickle loaded without
running anything in it; or the same as JSON) or a Kineto trace recorded with
`torch.profiler.profile(profile_memory=True)` (.json / .json.gz). Printed: the timeline of
allocated / active / reserved bytes, the peak with the allocations alive at it (stack, stage,
category and how it was decided), per-category totals, per-operator peak and net allocation
(Kineto), fragmentation with each number's definition (snapshots), and every OOM explained.
`diff A B`: peak, per-category, per-op and per-stack-top changes, B - A. `--oom "CUDA out of
memory. Tried to allocate ..."` explains a pasted OOM message (with FILE: against its segments).
FILE may also be a run directory of `profile: {memory: true}` (its points' inference memory
budgets) or one of its RUN/memory/ files (the analysis and that point's budget; docs/memory-budget.md).
Definitions: docs/memory.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from perfkit.commands._types import fraction, non_negative_int

DEFAULT_TOP = 10


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "memory", help="memory snapshots and profile_memory traces: peak, what is alive, fragmentation, OOMs",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("inputs", nargs="*", metavar="FILE",
                        help="a snapshot (.pickle / .json) or Kineto trace; or `diff A B`")
    parser.add_argument("--device", metavar="DEV", help="which device (e.g. cuda:1; default: the one with most events)")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument("--html", type=Path, metavar="OUT.html", help="also write a self-contained HTML view")
    parser.add_argument("--oom", metavar="MESSAGE", help="a pasted 'CUDA out of memory' message to explain")
    parser.add_argument("--gpu-memory-utilization", type=fraction, metavar="U",
                        help="the budget's KV-cache what-if at this share of GPU memory (default: the run's)")
    parser.add_argument("--top", type=non_negative_int, default=DEFAULT_TOP, help="rows per table (0: all)")
    parser.add_argument("--wide", action="store_true", help="every column and whole names")
    return parser


def _print(text: str) -> None:
    sys.stdout.write(text)


def run(args: argparse.Namespace) -> int:
    from perfkit.core.errors import SpecError

    inputs: list[str] = args.inputs
    if inputs[:1] == ["diff"]:
        if len(inputs) != 3:
            raise SpecError("memory diff: pass two inputs, `perfkit memory diff A B`")
        return _diff(args, Path(inputs[1]), Path(inputs[2]))
    if len(inputs) > 1:
        raise SpecError(f"memory: one FILE at a time (got {len(inputs)}); to compare two use `perfkit memory diff A B`")
    if not inputs:
        if args.oom is None:
            raise SpecError("memory: pass a FILE (a snapshot or a profile_memory trace) or --oom MESSAGE")
        return _oom_only(args)
    return _one(args, Path(inputs[0]))


def _width(args: argparse.Namespace) -> int | None:
    from perfkit.core.terminal import terminal_width

    return None if args.wide else terminal_width()


def _html_path(args: argparse.Namespace) -> Path | None:
    from perfkit.commands._out_file import checked_out_file

    return checked_out_file("--html", args.html, "memory.html", (".html", ".htm")) if args.html else None


def _one(args: argparse.Namespace, path: Path) -> int:
    from dataclasses import replace

    from perfkit.analyzers.loaders.memory.load import load_memory_input
    from perfkit.analyzers.memory.analysis import analyze_memory
    from perfkit.analyzers.memory.oom import explain_oom, parse_oom_message
    from perfkit.core.atomic import write_bytes_atomic
    from perfkit.reports.html.memory import memory_html
    from perfkit.reports.memory.as_json import memory_json
    from perfkit.reports.memory.text import memory_text

    if path.is_dir():
        return _run_dir(args, path)
    html = _html_path(args)
    result = analyze_memory(load_memory_input(path), args.device)
    if args.oom is not None:
        facts = parse_oom_message(args.oom)
        frag = result.fragmentation
        if frag is not None:
            facts = replace(facts, largest_free_bytes=frag.largest_free_bytes,
                            cached_free_bytes=facts.cached_free_bytes if facts.cached_free_bytes is not None
                            else frag.free_bytes)
        result = replace(result, ooms=[*result.ooms, explain_oom(facts)])
    if html is not None:
        write_bytes_atomic(html, memory_html(result).encode("utf-8"))
    budgets = _budgets(path)
    if args.format == "json":
        doc = memory_json(result)
        if budgets:
            doc["budgets"] = [_budget_json(point, budget) for point, budget in budgets]
        _print(json.dumps(doc, indent=1) + "\n")
    else:
        _print(memory_text(result, args.top, _width(args)))
        _print_budgets(args, budgets)
        if html is not None:
            _print(f"wrote {html}\n")
    return 0


def _budgets(path: Path) -> list[tuple[Any, Any]]:
    from perfkit.reports.inference_budget import budgets_for_path

    return budgets_for_path(path)


def _budget_json(point: Any, budget: Any) -> dict[str, Any]:
    from perfkit.reports.inference_budget import budget_json

    return {"point": point.key, **budget_json(budget)}


def _print_budgets(args: argparse.Namespace, budgets: list[tuple[Any, Any]]) -> None:
    from perfkit.core.terminal import terminal_safe
    from perfkit.reports.inference_budget import budget_text

    for point, budget in budgets:
        _print(f"\n## memory budget: {terminal_safe(point.key)}\n{budget_text(budget, args.gpu_memory_utilization)}")


def _run_dir(args: argparse.Namespace, path: Path) -> int:
    """A run directory: its points' budgets, and which memory files `perfkit memory` can open."""
    from perfkit.core.errors import SpecError
    from perfkit.core.run_layout import MEMORY_DIR

    budgets = _budgets(path)
    files = sorted((path / MEMORY_DIR).glob("*")) if (path / MEMORY_DIR).is_dir() else []
    if not budgets and not files:
        raise SpecError(f"{path}: a folder without a run's memory budgets or memory/ files; pass a snapshot "
                        "or trace, or a run directory of a spec with `profile: {memory: true}`")
    if args.format == "json":
        _print(json.dumps({"budgets": [_budget_json(p, b) for p, b in budgets],
                           "memory_files": [f"{MEMORY_DIR}/{f.name}" for f in files]}, indent=1) + "\n")
        return 0
    _print_budgets(args, budgets)
    if files:
        from perfkit.core.terminal import terminal_safe

        _print(f"\nmemory files (timeline, peak, fragmentation: perfkit memory {terminal_safe(str(path))}/"
               f"{MEMORY_DIR}/FILE):\n" + "".join(f"  {terminal_safe(f.name)}\n" for f in files))
    return 0


def _diff(args: argparse.Namespace, a: Path, b: Path) -> int:
    from perfkit.analyzers.loaders.memory.load import load_memory_input
    from perfkit.analyzers.memory.analysis import analyze_memory
    from perfkit.analyzers.memory.diff import diff_memory
    from perfkit.reports.memory.as_json import diff_json
    from perfkit.reports.memory.text import diff_text

    d = diff_memory(analyze_memory(load_memory_input(a), args.device),
                    analyze_memory(load_memory_input(b), args.device))
    if args.format == "json":
        _print(json.dumps(diff_json(d), indent=1) + "\n")
    else:
        _print(diff_text(d, args.top, _width(args)))
    return 0


def _oom_only(args: argparse.Namespace) -> int:
    import dataclasses

    from perfkit.analyzers.memory.oom import explain_oom, parse_oom_message
    from perfkit.reports.memory.text import fit_lines, oom_lines

    explained = explain_oom(parse_oom_message(args.oom))
    if args.format == "json":
        _print(json.dumps(dataclasses.asdict(explained), indent=1) + "\n")
    else:
        _print(fit_lines(oom_lines([explained], _width(args)), _width(args)))
    return 0
