"""`perfkit doctor [--format table|json] [--selftest] [--spec FILE]`: is this machine fit to measure on?

Each check prints its status (ok / warn / fail / skip), the value seen and what to do: CPU load,
other busy processes, threads vs cores, governor, turbo, SMT, memory; per GPU clocks, persistence,
throttle reasons, power limit, ECC, MIG, other processes, PCIe link; versions; ncu / nsys (and
whether nsys may sample); NCCL; the GPUs visible against a spec's launch.nproc (--spec).
--selftest also times a fixed workload with perfkit's timer and an independent one and checks
that traces, NVTX ranges and (GPU) CUDA graph replay work. Exit 1 when a check fails, else 0.
Details: docs/doctor.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

STYLE = {"ok": "green", "warn": "yellow", "fail": "bold red", "skip": "dim"}
FOOTNOTE_MIN_CHARS = 16  # a text at least this long, repeated on rows, becomes a footnote


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "doctor",
        help="is this machine fit to measure on: CPU load, threads, GPU clocks, throttling, tools",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--format", choices=("table", "json"), default="table",
                   help="table (default) or json: a list of {name, status, value, advice}")
    p.add_argument("--selftest", action="store_true",
                   help="also time a fixed workload with perfkit's timer and an independent one, "
                        "and check traces, NVTX and CUDA graphs, and read the GPU clocks under load (a few seconds)")
    p.add_argument("--spec", metavar="FILE", help="a model.yaml: compare its launch.nproc with the GPUs visible")
    return p


def footnotes(checks: list[Any]) -> dict[str, int]:
    """Value / advice texts repeated on several rows -> footnote number (first seen first)."""
    counts: dict[str, int] = {}
    for c in checks:
        for text in (c.value, c.advice):
            if len(text) >= FOOTNOTE_MIN_CHARS:
                counts[text] = counts.get(text, 0) + 1
    repeated = [t for t, n in counts.items() if n > 1]
    return {t: i + 1 for i, t in enumerate(repeated)}


def render_table(checks: list[Any], console: Any) -> None:
    from rich.markup import escape
    from rich.table import Table

    notes = footnotes(checks)
    table = Table(show_lines=False, pad_edge=False, box=None, header_style="bold")
    table.add_column("check", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("value seen / what to do", overflow="fold")

    def cell(text: str) -> str:
        return f"[{notes[text]}]" if text in notes else escape(text)

    for c in checks:
        style = STYLE.get(c.status, "")
        table.add_row(escape(c.name), f"[{style}]{c.status}[/{style}]", cell(c.value))
        if c.advice:
            table.add_row("", "", f"[{style}]->[/{style}] {cell(c.advice)}")
    console.print(table)
    for text, n in notes.items():
        console.print(escape(f"[{n}] {text}"), soft_wrap=False)
    console.print(summary_line(checks))


def summary_line(checks: list[Any]) -> str:
    counts = {s: sum(1 for c in checks if c.status == s) for s in ("ok", "warn", "fail", "skip")}
    text = ", ".join(f"{n} {s}" for s, n in counts.items())
    if counts["fail"]:
        return f"{text}: not fit to measure; fix the failed checks first"
    if counts["warn"]:
        return f"{text}: fit to measure, with the warnings above"
    return f"{text}: fit to measure"


def run(args: argparse.Namespace) -> int:
    from perfkit.profiler.doctor.model import exit_code
    from perfkit.profiler.doctor.run import run_doctor

    if args.selftest and args.format == "table" and sys.stderr.isatty():
        print("doctor: reading the machine and running the selftest (a few seconds)...", file=sys.stderr)
    nproc = None
    if args.spec:
        from perfkit.pipeline.spec import load_spec

        nproc = load_spec(args.spec).nproc
    checks = run_doctor(selftest=args.selftest, spec_nproc=nproc)
    if args.format == "json":
        sys.stdout.write(json.dumps([c.to_dict() for c in checks], indent=1) + "\n")
    else:
        from rich.console import Console

        from perfkit.core.terminal import terminal_width

        console = Console(width=min(terminal_width(), 100))
        render_table(checks, console)
    return exit_code(checks)
