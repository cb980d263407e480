"""One terminal line per profiled stage: its window, the requests left out, the overhead, the traces."""

from __future__ import annotations

from perfkit.core.profile_window import ProfileWindow
from perfkit.core.record import Run
from perfkit.core.terminal import terminal_safe
from perfkit.core.units import fmt_change, fmt_time


def _size(window: ProfileWindow) -> str:
    return f"{window.steps} steps" if window.steps is not None else f"{window.seconds:g} s"


def _versus(inside: float | None, outside: float | None, ratio: float | None) -> str:
    if inside is None or outside is None or ratio is None:
        return "n/a"
    return f"{fmt_time(inside)} vs {fmt_time(outside)} outside ({fmt_change(ratio)})"


def window_line(key: str, window: ProfileWindow, traces: int) -> str:
    where = f"profile window ({window.server}, {_size(window)})"
    if window.start_s == window.end_s == 0.0:
        return terminal_safe(f"{key}: {where} not opened: {window.note or 'no reason given'}")
    o = window.overhead
    text = (f"{key}: {where} {fmt_time(window.start_s)}-{fmt_time(window.end_s)} into the stage; "
            f"{o.requests_inside} requests inside left out of the latency numbers; "
            f"TPOT p50 {_versus(o.tpot_p50_inside_s, o.tpot_p50_outside_s, o.tpot_ratio)}; "
            f"ITL p50 {_versus(o.itl_p50_inside_s, o.itl_p50_outside_s, o.itl_ratio)}; "
            f"{traces} trace file{'s' if traces != 1 else ''}")
    if window.note:
        text += f" ({window.note})"
    return terminal_safe(text)


def window_lines(run: Run) -> list[str]:
    """`perfkit: KEY: profile window ...` for every stage that asked for one."""
    return [f"perfkit: {window_line(p.key, w, len(p.artifacts.server_traces))}"
            for p in run.points if (w := p.artifacts.profile_window) is not None]
