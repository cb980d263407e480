"""Reading a result file and checking its values: the boundary where dicts become typed records.

A file is refused whole (`ServingResultsError`, one `FILE[:LINE]: what is wrong; what to do`
line) when it cannot be read as a result at all: missing, a directory, empty, over the size
limit, not UTF-8, not JSON / JSON Lines / YAML, or of no known tool. A single bad request (a
negative or non-finite time, a count that is not a count) is dropped and counted instead
(`Drops`), so one damaged entry does not cost the other thousand.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from perfkit.core.errors import PerfkitError, located
from perfkit.core.finite import digits, finite_float

MAX_FILE_BYTES = 1 << 30  # 1 GiB: a result file past this is refused before it is read
MAX_TIME_S = 1e10  # a time or a timestamp past 300 years (Unix seconds now are 1.8e9) is no request's
MAX_ERROR_CHARS = 300  # a request's error text is cut to its last line, at most this long


class ServingResultsError(PerfkitError):
    """A serving benchmark's result file that cannot be read (bad input: exit 2)."""


def fail(path: str, message: str, line: int | None = None, col: int | None = None) -> NoReturn:
    raise ServingResultsError(located(path, line, col, message))


def counted(n: int, noun: str) -> str:
    """ "1 request", "3 requests"."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


class BadRequest(ValueError):
    """One request's data is unusable; the reader drops it and counts why."""


@dataclass
class Drops:
    """Requests left out of a stage, counted by reason, with the first example of each."""

    what: str = "request"
    counts: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)

    def add(self, reason: str, where: str) -> None:
        self.counts[reason] += 1
        self.examples.setdefault(reason, where)

    def notes(self) -> list[str]:
        return [f"dropped {counted(n, self.what)}: {reason} (first: {self.examples[reason]})"
                for reason, n in self.counts.most_common()]


@dataclass(frozen=True)
class Document:
    """A parsed file: one object (JSON, YAML) or one per line (JSON Lines)."""

    path: str
    kind: str  # "json", "jsonl" or "yaml"
    objects: tuple[tuple[int, Any], ...]  # (1-based line, parsed value) per object
    bad_lines: tuple[tuple[int, str], ...] = ()  # JSON Lines only: (line, why) of unparsable ones


def read_text(path: str | Path, max_bytes: int = MAX_FILE_BYTES) -> str:
    p = Path(path)
    if p.is_dir():
        fail(str(p), "is a directory; pass a result file (benchmarks.json, profile_export.jsonl, ...)")
    try:
        size = p.stat().st_size
    except FileNotFoundError:
        fail(str(p), "no such file; check the path")
    if size > max_bytes:
        fail(str(p), f"{size / 2**30:.2f} GiB is over the {max_bytes / 2**30:.2f} GiB perfkit reads; "
             "pass a smaller run (fewer requests, or the tool's sampling of request data)")
    if size == 0:
        fail(str(p), "the file is empty; pass the result file the benchmark wrote")
    with p.open("rb") as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        fail(str(p), f"grew past {max_bytes / 2**30:.2f} GiB while being read; pass a finished file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        fail(str(p), f"not UTF-8 text (byte {exc.start}); pass the JSON, JSON Lines or YAML result file")


def load_document(path: str | Path, max_bytes: int = MAX_FILE_BYTES) -> Document:
    """Parse `path` as JSON, else JSON Lines (one object per line), else YAML."""
    where = str(path)
    text = read_text(path, max_bytes)
    head = text.lstrip("\ufeff \t\r\n")[:1]
    if head in ("{", "["):
        try:
            return Document(where, "json", ((1, json.loads(text)),))
        except json.JSONDecodeError as exc:
            if exc.msg != "Extra data":
                fail(where, f"not valid JSON ({exc.msg}); pass the file the benchmark wrote, whole",
                     exc.lineno, exc.colno)
        except RecursionError:
            fail(where, "JSON nested too deeply to be a result file; pass the file the benchmark wrote")
        except ValueError:  # JSONDecodeError is caught above: an integer past Python's digit limit
            fail(where, f"an integer of more than {sys.get_int_max_str_digits()} digits; "
                 "pass the file the benchmark wrote")
        return _json_lines(where, text)
    return _yaml(where, text)


def _json_lines(where: str, text: str) -> Document:
    objects: list[tuple[int, Any]] = []
    bad: list[tuple[int, str]] = []
    for lineno, text_line in enumerate(text.splitlines(), 1):
        if not text_line.strip():
            continue
        try:
            objects.append((lineno, json.loads(text_line)))
        except json.JSONDecodeError as exc:
            bad.append((lineno, f"not JSON ({exc.msg})"))
        except RecursionError:
            bad.append((lineno, "nested too deeply"))
        except ValueError:  # an integer past Python's digit limit
            bad.append((lineno, f"an integer of more than {sys.get_int_max_str_digits()} digits"))
    if not objects:
        first, why = bad[0]
        fail(where, f"{why}; pass the JSON or JSON Lines file the benchmark wrote", first)
    return Document(where, "jsonl", tuple(objects), tuple(bad))


def _yaml(where: str, text: str) -> Document:
    import yaml  # GuideLLM's YAML report; a JSON file never gets here

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        value = yaml.load(text, Loader=loader)  # a safe loader: plain data only
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        fail(where, "neither JSON, JSON Lines nor YAML; pass the result file of vllm bench serve, "
             "AIPerf or GuideLLM", line)
    except RecursionError:
        fail(where, "YAML nested too deeply to be a result file; pass the file the benchmark wrote")
    except ValueError:  # an integer past Python's digit limit
        fail(where, f"an integer of more than {sys.get_int_max_str_digits()} digits; "
             "pass the file the benchmark wrote")
    return Document(where, "yaml", ((1, value),))


# -- values -------------------------------------------------------------------------------------


def number(value: Any) -> float | None:
    """A finite real number (bools are not numbers), else None."""
    return finite_float(value)  # an integer past a float's range (a 400-digit count) is None too


def seconds(value: Any) -> float | None:
    """A time in seconds within +-MAX_TIME_S (a clock reading, a duration), else None."""
    x = number(value)
    return x if x is not None and abs(x) <= MAX_TIME_S else None


def time_s(value: Any, what: str, scale: float = 1.0) -> float:
    """A finite, non-negative duration in seconds (value x scale), else BadRequest."""
    x = number(value)
    if x is None:
        raise BadRequest(f"{what} is not a finite number")
    if x < 0:
        raise BadRequest(f"{what} is negative")
    if x * scale > MAX_TIME_S:  # finite, but a sum or a rate of it would not be
        raise BadRequest(f"{what} is past {MAX_TIME_S:.0e} s")
    return x * scale


def optional_time_s(value: Any, what: str, scale: float = 1.0) -> float | None:
    return None if value is None else time_s(value, what, scale)


def count(value: Any, what: str) -> int | None:
    """A token or request count: a non-negative whole number (None stays None)."""
    if value is None:
        return None
    x = number(value)
    if x is None or x < 0 or x != int(x):
        raise BadRequest(f"{what} is not a count")
    return int(x)


def gaps_s(values: Any, what: str, scale: float = 1.0) -> tuple[float, ...]:
    if not isinstance(values, list):
        raise BadRequest(f"{what} is not a list")
    return tuple(time_s(v, what, scale) for v in values)


def error_text(value: Any) -> str | None:
    """A tool's error for a request, as one line (a traceback's last line); None when empty."""
    if value is None or value == "" or value is False:
        return None
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return None
    last = lines[-1]
    return last if len(last) <= MAX_ERROR_CHARS else last[: MAX_ERROR_CHARS - 3] + "..."


def text_field(value: Any, limit: int = 200) -> str | None:
    """A short string for `info` (model names, versions); None for anything else."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int) and digits(value) > limit:
        return None
    if isinstance(value, (str, int, float)):
        text = str(value)
        return text if len(text) <= limit else text[: limit - 3] + "..."
    return None


def mapping(value: Any) -> dict[str, Any]:
    """`value` when it is a dict, else {} (an optional section that is absent or malformed)."""
    return value if isinstance(value, dict) else {}
