"""One decoded block's X events, and their fields read into checked columns.

Part of the Kineto loader (analyzers.loaders.kineto.load). `Rows` picks a block's complete events (ph X),
drops what is not an event (no object, no ph, an unknown ph) and maps a row back to its
traceEvents index for warnings. `ColumnReader` reads one field of those rows into a column:
exact times (`times`: the rows whose ts / dur cannot be used are dropped, by reason), integers
(`ints`) and strings (`texts`) coerced where a value has another type, args that are not an
object ignored (`args`); each drop and coercion counted and located in `Notes`. Blocks from the
strict decoder skip the type checks (the decoder guaranteed the types); times are checked in
every block.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
import numpy.typing as npt

from perfkit.analyzers.loaders.kineto.decode import (
    COMM_ARGS,
    INT_ARGS,
    PHASES,
    XL,
    ArgsL,
    LooseEvents,
    X,
)
from perfkit.analyzers.loaders.kineto.fields import (
    INT64_MAX,
    MAX_WARNINGS,
    Notes,
    as_text,
    int_value,
)
from perfkit.analyzers.loaders.kineto.json_numbers import (
    ABSENT,
    FROM_STRING,
    NOT_NUMBER,
    OK,
    OUT_OF_RANGE,
    us_to_ns,
)

GET = {k: operator.attrgetter(k) for k in ("cat", "name", "pid", "tid", "ts", "dur", "args")}
ARG = {k: operator.attrgetter(k) for k in (*INT_ARGS, "dims", "types", "concrete", *COMM_ARGS)}
_FIELD = {"external_id": "args.External id", "nbytes": "args.bytes", "correlation": "args.correlation",
          "stream": "args.stream", "device": "args.device", "pid": "pid", "tid": "tid"}  # fmt: skip


class Rows:
    """The X events of one decoded block, and where each came from (traceEvents index)."""

    def __init__(self, events: list[Any], base: int, notes: Notes) -> None:
        self.events = events
        self.base = base
        self.loose = isinstance(events, LooseEvents)
        self.keep: npt.NDArray[np.int64] | None = None
        self._pos: npt.NDArray[np.int64] | None = None
        if not self.loose:
            self.xs = [e for e in events if e.__class__ is X]
            return
        pos: list[int] = []
        odd: dict[str, list[int]] = {}
        for i, e in enumerate(events):
            if e.__class__ is not XL:
                odd.setdefault("not an event object", []).append(i)
            elif e.ph == "X":
                pos.append(i)
            elif e.ph is None:
                odd.setdefault("no ph", []).append(i)
            elif not isinstance(e.ph, str) or e.ph not in PHASES:
                odd.setdefault("unknown ph", []).append(i)
        for reason, idx in odd.items():
            where = [(base + i, _name_of(events[i])) for i in idx[:MAX_WARNINGS]]
            notes.drop(reason, where, len(idx))
        self._pos = np.asarray(pos, dtype=np.int64)
        self.xs = [events[i] for i in pos]

    def index(self, rows: Any) -> list[int]:
        """traceEvents indices of rows (positions in the current, possibly filtered, X list)."""
        if self._pos is None:
            self._pos = np.flatnonzero(np.fromiter((e.__class__ is X for e in self.events), dtype=bool))
        x = np.asarray(rows, dtype=np.int64)
        if self.keep is not None:
            x = self.keep[x]
        return (self.base + self._pos[x]).tolist()


def _name_of(e: Any) -> str:
    return as_text(getattr(e, "name", ""))[0] if isinstance(e, XL) else as_text(e)[0][:40]


class ColumnReader:
    """Fields of a block's X events read into columns; what was coerced or dropped goes to `notes`."""

    def __init__(self, notes: Notes) -> None:
        self.notes = notes

    def texts(self, values: list[Any], field: str, rows: Rows, names: list[Any]) -> list[str]:
        if set(map(type, values)) <= {str}:
            return values
        out: list[str] = []
        odd: dict[str, list[int]] = {}
        for j, v in enumerate(values):
            text, what = as_text(v)
            out.append(text)
            if what:
                odd.setdefault(f"{field}: {what}", []).append(j)
        for reason, js in odd.items():
            first = js[:MAX_WARNINGS]
            where = list(zip(rows.index(first), [as_text(names[j])[0] for j in first], [values[j] for j in first], strict=True))
            self.notes.coerce(reason, where, len(js))
        return out

    def ints(self, items: list[Any], get: Any, field: str, rows: Rows, at: Any, names: list[str]) -> npt.NDArray[np.int64]:
        """An integer column, get(item) per item; another type is coerced (counted) by int_value."""
        names_rows = field in ("pid", "tid")
        try:
            if rows.loose and not set(map(type, map(get, items))) <= ({int, str} if names_rows else {int}):
                raise TypeError
            return np.fromiter(map(get, items), dtype=np.int64, count=len(items))
        except (TypeError, ValueError, OverflowError):
            pass
        values = list(map(get, items))
        out = np.empty(len(values), dtype=np.int64)
        odd: dict[str, list[int]] = {}
        for j, v in enumerate(values):
            out[j], what = int_value(v, names_rows)
            if what:
                odd.setdefault(f"{_FIELD[field]}: {what}", []).append(j)
        for reason, js in odd.items():
            first = js[:MAX_WARNINGS]
            where = list(zip(rows.index(np.asarray(at)[first]), [names[at[j]] for j in first], [values[j] for j in first], strict=True))
            self.notes.coerce(reason, where, len(js))
        return out

    def args(self, xs: list[Any], rows: Rows, names: list[str]) -> list[Any]:
        args = list(map(GET["args"], xs))
        if rows.loose:
            odd = [j for j, a in enumerate(args) if a.__class__ is not ArgsL]
            if odd:
                where = [(i, names[j], args[j]) for i, j in zip(rows.index(odd[:MAX_WARNINGS]), odd, strict=False)]
                self.notes.coerce("args: not an object, ignored", where, len(odd))
                for j in odd:
                    args[j] = ArgsL()
        return args

    def times(self, xs: list[Any], rows: Rows, names: list[str]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
        """(ts_ns, dur_ns, valid): exact times, and the rows whose times can be used."""
        n = len(xs)
        both, both_st = us_to_ns([*map(GET["ts"], xs), *map(GET["dur"], xs)])  # one parse
        ts, dur, ts_st, dur_st = both[:n], both[n:], both_st[:n], both_st[n:]
        if not (ts_st.any() or dur_st.any() or (dur < 0).any() or (ts > INT64_MAX - np.maximum(dur, 0)).any()):
            return ts, dur, np.ones(len(xs), dtype=bool)
        ok = (ts_st == OK) | (ts_st == FROM_STRING)
        dur_ok = (dur_st == OK) | (dur_st == FROM_STRING)
        checks = (
            (ts_st == ABSENT, "no ts"), (ts_st == NOT_NUMBER, "ts not a number"), (ts_st == OUT_OF_RANGE, "ts out of range"),
            (dur_st == ABSENT, "no dur"), (dur_st == NOT_NUMBER, "dur not a number"), (dur_st == OUT_OF_RANGE, "dur out of range"),
            (dur_ok & (dur < 0), "negative dur"), (ok & dur_ok & (ts > INT64_MAX - np.maximum(dur, 0)), "ts + dur out of range"),
        )  # fmt: skip
        bad = np.zeros(len(xs), dtype=bool)
        for mask, reason in checks:
            hit = np.flatnonzero(mask & ~bad)
            if len(hit):
                first = hit[:MAX_WARNINGS].tolist()
                self.notes.drop(reason, list(zip(rows.index(first), [names[j] for j in first], strict=True)), len(hit))
                bad[hit] = True
        for st, field, raw_of in ((ts_st, "ts", GET["ts"]), (dur_st, "dur", GET["dur"])):
            hit = np.flatnonzero((st == FROM_STRING) & ~bad)
            if len(hit):
                first = hit[:MAX_WARNINGS].tolist()
                values = [bytes(raw_of(xs[j])).decode("utf-8", "replace") for j in first]
                where = list(zip(rows.index(first), [names[j] for j in first], values, strict=True))
                self.notes.coerce(f"{field}: string read as a number", where, len(hit))
        return ts, dur, ~bad
