"""argparse value types that refuse nonsense at parse time (one line, exit 2) instead of later."""

from __future__ import annotations

import argparse
import math
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

from perfkit.core.errors import echo, shorten


def int_at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{echo(text)} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is below {minimum}; give an integer >= {minimum}")
        return value

    parse.__name__ = f"integer >= {minimum}"
    return parse


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{echo(text)} is not a number") from None


def fraction(text: str) -> float:
    """A number in (0, 1]: a p-value or a relative size."""
    value = _number(text)
    if not (math.isfinite(value) and 0 < value <= 1):
        raise argparse.ArgumentTypeError(f"{shorten(text)} is outside (0, 1]; give e.g. 0.05")
    return value


def finite_at_least(minimum: float) -> Callable[[str], float]:
    """A finite number >= minimum (a magnitude, a duration): `nan` and `inf` refused."""
    def parse(text: str) -> float:
        value = _number(text)
        if not math.isfinite(value) or value < minimum:
            raise argparse.ArgumentTypeError(f"{shorten(text)} is not a finite number >= {minimum:g}")
        return value

    parse.__name__ = f"number >= {minimum:g}"
    return parse


def at_most(parse: Callable[[str], float], maximum: float, unit: str = "") -> Callable[[str], float]:
    """`parse`, and a value above `maximum` refused with both numbers (an absurd size or time
    would allocate or wait past anything sensible)."""
    def bounded(text: str) -> float:
        value = parse(text)
        if value > maximum:
            top = f"{int(maximum):,}" if maximum == int(maximum) else f"{maximum:g}"
            raise argparse.ArgumentTypeError(f"{shorten(text)} is above {top}{unit}; give at most {top}")
        return value

    bounded.__name__ = getattr(parse, "__name__", "value")
    return bounded


def probability(text: str) -> float:
    """A number strictly between 0 and 1: a significance level."""
    value = _number(text)
    if not (math.isfinite(value) and 0 < value < 1):
        raise argparse.ArgumentTypeError(f"{shorten(text)} is outside (0, 1); give e.g. 0.005")
    return value


SEED_MAX = 2**32 - 1  # every generator perfkit seeds (numpy, torch, random) takes these


def seed(text: str) -> int:
    """A random seed: an integer 0 to 2**32 - 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{echo(text)} is not an integer; give a seed 0 to 2**32 - 1") from None
    if not 0 <= value <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"{value} is not a seed; give an integer 0 to 2**32 - 1")
    return value


def regex(text: str) -> str:
    try:
        re.compile(text)
    except re.error as exc:
        raise argparse.ArgumentTypeError(f"{echo(text)} is not a regular expression ({exc})") from None
    return text


non_negative_int = int_at_least(0)
positive_int = int_at_least(1)


def tcp_port(text: str) -> int:
    value = int_at_least(1)(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"{value} is above 65535; give a TCP port 1-65535")
    return value


def output_dir(text: str) -> Path:
    """--out: a directory perfkit can write in (made if missing), checked before any work."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{shorten(text, 160)} is a file; pass a directory (it is created if missing)")
    base = path
    while not base.exists() and base != base.parent:
        base = base.parent
    if not base.is_dir():
        raise argparse.ArgumentTypeError(f"{shorten(base, 160)} (in {shorten(text, 160)}) is a file; pass a directory path")
    try:
        fd, probe = tempfile.mkstemp(prefix=".perfkit-probe.", dir=base)
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot write in {shorten(base, 160)} ({exc.strerror}); pass a directory you can "
                                         "write to") from None
    os.close(fd)
    os.unlink(probe)
    return path


def run_selector(text: str) -> str:
    """A run on the command line (a run directory, a stored run id, a commit, BRANCH@GPU[:SPEC]):
    never empty, which would name the current directory."""
    if not text.strip():
        raise argparse.ArgumentTypeError("empty; name a run directory, a stored run id, a commit or BRANCH@GPU "
                                         "(`perfkit runs` lists them)")
    return text


def run_path(text: str) -> Path:
    """A run directory (or its run.json) on the command line: never empty (the current directory)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("empty; pass a run directory (or its run.json)")
    return Path(text)
