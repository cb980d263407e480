"""Sweep axes: a scalar, a list, or a range, expanded to tuples; the cartesian product of axes.

YAML forms of an integer axis:
    m: 1024                                  -> (1024,)
    m: [256, 512, 1024]                      -> (256, 512, 1024)
    m: {start: 256, stop: 1024, step: 256}   -> (256, 512, 768, 1024)   (stop inclusive)
    m: {start: 256, stop: 4096, mul: 2}      -> (256, 512, 1024, 2048, 4096)
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import BeforeValidator

MAX_AXIS_VALUES = 10_000
MAX_POINTS = 100_000


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _range_axis(value: Mapping[str, Any]) -> tuple[int, ...]:
    allowed = {"start", "stop", "step", "mul"}
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise ValueError(
            f"unknown range key '{unknown[0]}'; a range has start, stop and one of step or mul"
        )
    if "start" not in value or "stop" not in value:
        raise ValueError("a range needs start and stop; write {start: 256, stop: 1024, step: 256}")
    if ("step" in value) == ("mul" in value):
        raise ValueError("a range needs exactly one of step or mul; e.g. {start: 256, stop: 4096, mul: 2}")
    start, stop = value["start"], value["stop"]
    if not (_is_int(start) and _is_int(stop)):
        raise ValueError("range start and stop must be integers")
    out: list[int] = []
    if "step" in value:
        step = value["step"]
        if not _is_int(step) or step <= 0:
            raise ValueError(f"range step must be a positive integer, got {step!r}")
        steps = range(start, stop + 1, step)  # sized arithmetically before anything is listed
        if len(steps) > MAX_AXIS_VALUES:
            raise ValueError(f"range has {len(steps)} values (limit {MAX_AXIS_VALUES}); narrow it or raise step")
        out = list(steps)
    else:
        mul = value["mul"]
        if not _is_int(mul) or mul < 2:
            raise ValueError(f"range mul must be an integer >= 2, got {mul!r}")
        if start <= 0:
            raise ValueError("a multiplicative range needs start > 0")
        x = start
        while x <= stop and len(out) <= MAX_AXIS_VALUES:
            out.append(x)
            x *= mul
    if not out:
        raise ValueError(f"range {{start: {start}, stop: {stop}}} is empty; make stop >= start")
    return tuple(out)


def _check_len(values: tuple[Any, ...]) -> tuple[Any, ...]:
    if not values:
        raise ValueError("empty sweep; give at least one value")
    if len(values) > MAX_AXIS_VALUES:
        raise ValueError(f"sweep has more than {MAX_AXIS_VALUES} values; narrow the range")
    seen: set[Any] = set()
    for v in values:
        if not isinstance(v, (int, str, bool, float)):
            continue  # not a value of any axis: its own check names it
        if (type(v), v) in seen:
            raise ValueError(f"value {v!r} is listed twice (two points would have one key); list each once")
        seen.add((type(v), v))
    return values


def int_axis(value: Any, minimum: int = 1) -> tuple[int, ...]:
    if isinstance(value, Mapping):
        values = _range_axis(value)
    elif isinstance(value, Sequence) and not isinstance(value, str):
        values = tuple(value)
    else:
        values = (value,)
    _check_len(values)
    for v in values:
        if not _is_int(v):
            raise ValueError(f"expected integers, got {v!r}; write e.g. 1024 or [256, 512]")
        if v < minimum:
            raise ValueError(f"value {v} is below the minimum {minimum}; use values >= {minimum}")
    return values


def bool_axis(value: Any) -> tuple[bool, ...]:
    values = tuple(value) if isinstance(value, Sequence) and not isinstance(value, str) else (value,)
    _check_len(values)
    for v in values:
        if not isinstance(v, bool):
            raise ValueError(f"expected true/false, got {v!r}; write true, false or [false, true]")
    return values


def str_axis(value: Any) -> tuple[str, ...]:
    values = tuple(value) if isinstance(value, Sequence) and not isinstance(value, str) else (value,)
    for v in values:
        if not isinstance(v, str):
            raise ValueError(f"expected names, got {v!r}; write one name or a list of names, e.g. [a, b]")
    _check_len(values)
    return values


IntAxis = Annotated[tuple[int, ...], BeforeValidator(int_axis)]
NonNegIntAxis = Annotated[tuple[int, ...], BeforeValidator(lambda v: int_axis(v, minimum=0))]
BoolAxis = Annotated[tuple[bool, ...], BeforeValidator(bool_axis)]
StrAxis = Annotated[tuple[str, ...], BeforeValidator(str_axis)]


def cartesian(axes: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the axes, in axis order (the last axis varies fastest)."""
    names = list(axes)
    total = 1
    for name in names:
        total *= max(len(axes[name]), 1)
    if total > MAX_POINTS:
        raise ValueError(f"the sweep has {total} points (limit {MAX_POINTS}); narrow an axis")
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*(axes[n] for n in names))]
