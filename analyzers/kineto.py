"""Kineto (torch.profiler) Chrome traces -> `EventTable`.

    from analyzers.kineto import load_trace, load_traces
    table = load_trace("trace.json.gz")            # one file, rank from distributedInfo
    table = load_traces(["rank0.json", "rank1.json"])  # a multi-rank job

Events are decoded with msgspec typed structs that keep only the fields the analyses need
(ph, cat, name, pid, tid, ts, dur and from args: correlation, stream, device, External id,
bytes, Input Dims, Input type, Concrete Inputs); everything else is skipped by the decoder.
The array is read block by block (analyzers.json_stream), so memory holds one block of
decoded events at a time plus the growing columns (~90 bytes per kept event).

Timestamps are microseconds in the file, integers (torch < 2.3) or decimals with nanosecond
digits; their text is read exactly (analyzers.json_numbers) into int64 nanoseconds (`ts_ns`,
`dur_ns`), sub-nanosecond digits rounded half to even: `1712195495519695.812` us is
1712195495519695812 ns, where a float64 would keep 0.25 us.
Kept: complete events (ph X) except the profiler's own span (cat Trace) and python_function
events (Python stacks, often the bulk of a `with_stack` trace and unused by the analyses).

One odd field never loses the trace. A block whose events do not all match the typed structs
is decoded again with every field read as whatever JSON value it holds (and, if a number is
beyond float range, event by event); then, counted in `TraceMeta.coerced`:
- a string or integral float where an integer is needed (args.bytes "32768") is read as that
  integer; anything else there (null, "n/a", 1.5, a list) becomes -1;
- a name or cat that is not a string becomes its JSON text; args that is not an object is
  ignored; a string pid / tid names its row (as Kineto's "Spans" does);
- ts / dur given as a string holding a number are read exactly.
Dropped, counted by reason in `TraceMeta.dropped` (reasons in DROP_REASONS): an X event with no
ts, a ts or dur that is not a number (null, NaN, "abc"), beyond int64 nanoseconds (1.5e300),
no dur, a negative dur, ts + dur beyond int64; a traceEvents item that is not an object, has no
ph or an unknown ph. `TraceMeta.warnings` locates the first few (`path: traceEvents[i] 'name':
...`, at most MAX_WARNINGS a file, drops first); `TraceMeta.unknown_categories` counts the X
events whose cat perfkit does not read (kept as Kind.OTHER; "(none)" when cat is absent).
Repairs of the bytes themselves (a byte-order mark, invalid UTF-8, NaN literals) are in
analyzers.json_stream and counted in `coerced` too.
"""

from __future__ import annotations

import gc
import itertools
import operator
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from analyzers.event_table import (
    COLUMNS,
    GPU_WORK_KINDS,
    EventTable,
    Kind,
    TraceMeta,
    concat_tables,
)
from analyzers.json_numbers import (
    ABSENT,
    FROM_STRING,
    NOT_NUMBER,
    OK,
    OUT_OF_RANGE,
    decimal_to_int,
    us_to_ns,
)
from analyzers.json_stream import BLOCK_BYTES, StreamResult, iter_event_chunks
from analyzers.op_cost import OP_COSTS
from perfkit.core.errors import TraceError

# cat spelling (Kineto, older torch "Kernel/Runtime/Operator", ROCm) -> Kind; None = drop.
CATEGORY_KIND: dict[str, Kind | None] = {
    "cpu_op": Kind.CPU_OP,
    "operator": Kind.CPU_OP,
    "user_annotation": Kind.USER_ANNOTATION,
    "cuda_runtime": Kind.RUNTIME,
    "cuda_driver": Kind.RUNTIME,
    "runtime": Kind.RUNTIME,
    "driver": Kind.RUNTIME,
    "hip_runtime": Kind.RUNTIME,
    "hip_driver": Kind.RUNTIME,
    "kernel": Kind.KERNEL,
    "gpu_memcpy": Kind.MEMCPY,
    "memcpy": Kind.MEMCPY,
    "gpu_memset": Kind.MEMSET,
    "memset": Kind.MEMSET,
    "gpu_user_annotation": Kind.GPU_ANNOTATION,
    "cuda_sync": Kind.SYNC,
    "trace": None,
    "python_function": None,
}
_GPU_KINDS = np.asarray(GPU_WORK_KINDS, dtype=np.int8)
_DROP = -1
MAX_WARNINGS = 5  # located warning lines per file; the rest are only counted

_PHASES_SKIPPED = ["B", "E", "i", "I", "C", "b", "n", "e", "s", "t", "f", "P", "O", "N", "D", "M", "V", "v", "R", "c", "(", ")"]
_PHASES = frozenset(["X", *_PHASES_SKIPPED])
DROP_REASONS = (
    "not an event object", "no ph", "unknown ph", "no ts", "ts not a number", "ts out of range",
    "no dur", "dur not a number", "dur out of range", "negative dur", "ts + dur out of range",
)  # fmt: skip
_INT64_MAX = np.iinfo(np.int64).max

_NO_RAW = msgspec.Raw(b"")

# ---- the strict decoder: the fast path, for events whose fields have the usual types --------


class _Args(msgspec.Struct, gc=False):
    correlation: int = -1
    stream: int = -1
    device: int = -1
    external_id: int = msgspec.field(default=-1, name="External id")
    nbytes: int = msgspec.field(default=-1, name="bytes")
    dims: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Input Dims")
    types: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Input type")
    concrete: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Concrete Inputs")


class _X(msgspec.Struct, tag_field="ph", tag="X", gc=False):
    cat: str = ""
    name: str = ""
    pid: int | str = -1
    tid: int | str = -1
    ts: msgspec.Raw = _NO_RAW  # the number's text: read exactly by analyzers.json_numbers
    dur: msgspec.Raw = _NO_RAW
    args: _Args = msgspec.field(default_factory=_Args)


_SKIPPED: tuple[type, ...] = tuple(
    msgspec.defstruct(f"_Phase{i}", [], tag_field="ph", tag=ph, gc=False)
    for i, ph in enumerate(_PHASES_SKIPPED)
)
_Event: Any = _X
for _cls in _SKIPPED:
    _Event = _Event | _cls
_STRICT: Any = msgspec.json.Decoder(list[_Event])  # type: ignore[valid-type]

# ---- the loose decoder: any JSON value in any field (a block the strict one refuses) --------


class _ArgsL(msgspec.Struct, gc=False):
    correlation: Any = -1
    stream: Any = -1
    device: Any = -1
    external_id: Any = msgspec.field(default=-1, name="External id")
    nbytes: Any = msgspec.field(default=-1, name="bytes")
    dims: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Input Dims")
    types: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Input type")
    concrete: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Concrete Inputs")


class _XL(msgspec.Struct, gc=False):
    ph: Any = None
    cat: Any = ""
    name: Any = ""
    pid: Any = -1
    tid: Any = -1
    ts: msgspec.Raw = _NO_RAW
    dur: msgspec.Raw = _NO_RAW
    args: _ArgsL | list[Any] | str | int | float | bool | None = msgspec.field(default_factory=_ArgsL)


_LooseItem = _XL | list[Any] | str | int | float | bool | None
_LOOSE: Any = msgspec.json.Decoder(list[_LooseItem])
_LOOSE_ONE: Any = msgspec.json.Decoder(_LooseItem)
_RAWS = msgspec.json.Decoder(list[msgspec.Raw])


class _XR(msgspec.Struct, gc=False):
    """Every field as raw text: the last resort for an event holding a number beyond float range."""

    ph: msgspec.Raw = _NO_RAW
    cat: msgspec.Raw = _NO_RAW
    name: msgspec.Raw = _NO_RAW
    pid: msgspec.Raw = _NO_RAW
    tid: msgspec.Raw = _NO_RAW
    ts: msgspec.Raw = _NO_RAW
    dur: msgspec.Raw = _NO_RAW
    args: msgspec.Raw = _NO_RAW


class _ArgsR(msgspec.Struct, gc=False):
    correlation: msgspec.Raw = _NO_RAW
    stream: msgspec.Raw = _NO_RAW
    device: msgspec.Raw = _NO_RAW
    external_id: msgspec.Raw = msgspec.field(default=_NO_RAW, name="External id")
    nbytes: msgspec.Raw = msgspec.field(default=_NO_RAW, name="bytes")
    dims: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Input Dims")
    types: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Input type")
    concrete: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Concrete Inputs")


_XR_DEC = msgspec.json.Decoder(_XR)
_ARGSR_DEC = msgspec.json.Decoder(_ArgsR)


class _Unreadable(str):
    """The text of a value msgspec cannot hold (a number beyond float range)."""


class _LooseEvents(list):  # type: ignore[type-arg]
    """Events from the loose decoder (their fields still need checking)."""


def _value(raw: Any, default: Any) -> Any:
    if not len(raw):
        return default
    try:
        return msgspec.json.decode(raw)
    except msgspec.ValidationError:
        return _Unreadable(bytes(raw).decode("utf-8", "replace"))


def _one_event(raw: Any) -> Any:
    """One event, however odd its values (the loose decoder refused its block)."""
    try:
        return _LOOSE_ONE.decode(raw)
    except msgspec.ValidationError:
        pass
    if bytes(raw)[:1] != b"{":
        return None  # an array or number beyond float range: not an event object
    r = _XR_DEC.decode(raw)
    args: Any = _ArgsL()
    if bytes(r.args)[:1] == b"{":
        a = _ARGSR_DEC.decode(r.args)
        ints = {k: _value(getattr(a, k), -1) for k in _INT_ARGS}
        args = _ArgsL(**ints, dims=a.dims, types=a.types, concrete=a.concrete)
    elif len(r.args):
        args = _value(r.args, None)
    return _XL(
        _value(r.ph, None), _value(r.cat, ""), _value(r.name, ""), _value(r.pid, -1), _value(r.tid, -1),
        r.ts, r.dur, args,
    )  # fmt: skip


def _decode_chunk(buf: memoryview) -> list[Any]:
    """Strict (fast); else loose; else event by event. A malformed block raises DecodeError."""
    try:
        strict: list[Any] = _STRICT.decode(buf)
        return strict
    except msgspec.ValidationError:
        pass
    try:
        return _LooseEvents(_LOOSE.decode(buf))
    except msgspec.ValidationError:
        return _LooseEvents(map(_one_event, _RAWS.decode(buf)))


_get = {k: operator.attrgetter(k) for k in ("cat", "name", "pid", "tid", "ts", "dur", "args")}
_INT_ARGS = ("correlation", "stream", "device", "external_id", "nbytes")
_arg = {k: operator.attrgetter(k) for k in (*_INT_ARGS, "dims", "types", "concrete")}
_FIELD = {"external_id": "args.External id", "nbytes": "args.bytes", "correlation": "args.correlation",
          "stream": "args.stream", "device": "args.device", "pid": "pid", "tid": "tid"}  # fmt: skip


class _Interner:
    """Global string table built from per-chunk factorized uniques."""

    def __init__(self) -> None:
        self.ids: dict[Any, int] = {}

    def codes(self, values: list[Any]) -> npt.NDArray[np.int32]:
        ids = self.ids
        for u in dict.fromkeys(values):  # first-seen order keeps ids deterministic
            if u not in ids:
                ids[u] = len(ids)
        return np.fromiter(map(ids.__getitem__, values), dtype=np.int32, count=len(values))

    def table(self) -> list[Any]:
        return list(self.ids)

    def __len__(self) -> int:
        return len(self.ids)


def _as_int(value: Any) -> int:
    """A string pid / tid ("Spans", "stream 7") as a row id: its last number, else a hash."""
    if isinstance(value, int):
        return value
    try:
        return int(str(value).split()[-1])  # "stream 7" -> 7
    except (ValueError, IndexError):
        return -(zlib.crc32(str(value).encode()) + 2)  # a deterministic id for a named row


def _int_value(v: Any, names_rows: bool) -> tuple[int, str | None]:
    """(integer, what was done or None) for one value where an integer is needed."""
    if type(v) is int:
        return (v, None) if -_INT64_MAX <= v <= _INT64_MAX else (-1, "out of range, set to -1")
    if isinstance(v, str) and not isinstance(v, _Unreadable):
        if names_rows:
            return _as_int(v), None
        words = v.split()  # "32768", " 7 ", "stream 7"
        milli = decimal_to_int(words[-1], 3) if words else None
        if milli is not None and milli % 1000 == 0 and -_INT64_MAX <= milli // 1000 <= _INT64_MAX:
            return milli // 1000, "string read as integer"
    if type(v) is float and v.is_integer() and abs(v) < 2**63:
        return int(v), "number read as integer"
    return -1, "not an integer, set to -1"


def _text(v: Any) -> tuple[str, str | None]:
    if type(v) is str:
        return v, None
    if isinstance(v, str):
        return str(v), "not a string, read as its text"
    if v is None:
        return "", "null, read as empty"
    return msgspec.json.encode(v).decode(), "not a string, read as its text"


def _short(value: Any, width: int = 60) -> str:
    text = value if isinstance(value, str) else repr(value)
    return repr(text if len(text) <= width else text[: width - 3] + "...")


class _Notes:
    """What reading one file dropped or coerced: counts, and a few located lines."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.dropped: Counter[str] = Counter()
        self.coerced: Counter[str] = Counter()
        self.unknown: Counter[str] = Counter()
        self.drop_lines: list[str] = []
        self.coerce_lines: list[str] = []

    def drop(self, reason: str, where: list[tuple[int, str]], count: int) -> None:
        self.dropped[reason] += count
        for index, name in where[: MAX_WARNINGS - len(self.drop_lines)]:
            self.drop_lines.append(f"{self.path}: traceEvents[{index}] {_short(name)}: {reason}; event dropped")

    def coerce(self, reason: str, where: list[tuple[int, str, Any]], count: int) -> None:
        self.coerced[reason] += count
        for index, name, value in where[: MAX_WARNINGS - len(self.coerce_lines)]:
            self.coerce_lines.append(f"{self.path}: traceEvents[{index}] {_short(name)}: {reason} (value {_short(value, 30)})")

    def stream(self, result: StreamResult[Any]) -> list[str]:
        lines = []
        for what, count in result.repairs.items():
            self.coerced[what] += count
            lines.append(f"{self.path}: byte {result.repair_at[what]}: {what} ({count} in the file)")
        return lines

    def meta(self, meta: TraceMeta, result: StreamResult[Any]) -> TraceMeta:
        repaired = self.stream(result)
        lines = (self.drop_lines + repaired + self.coerce_lines)[:MAX_WARNINGS]
        return replace(
            meta,
            dropped=tuple(sorted(self.dropped.items())),
            coerced=tuple(sorted(self.coerced.items())),
            warnings=tuple(lines),
            unknown_categories=tuple(sorted(self.unknown.items(), key=lambda kv: (-kv[1], kv[0]))),
        )


class _Rows:
    """The X events of one decoded block, and where each came from (traceEvents index)."""

    def __init__(self, events: list[Any], base: int, notes: _Notes) -> None:
        self.events = events
        self.base = base
        self.loose = isinstance(events, _LooseEvents)
        self.keep: npt.NDArray[np.int64] | None = None
        self._pos: npt.NDArray[np.int64] | None = None
        if not self.loose:
            self.xs = [e for e in events if e.__class__ is _X]
            return
        pos: list[int] = []
        odd: dict[str, list[int]] = {}
        for i, e in enumerate(events):
            if e.__class__ is not _XL:
                odd.setdefault("not an event object", []).append(i)
            elif e.ph == "X":
                pos.append(i)
            elif e.ph is None:
                odd.setdefault("no ph", []).append(i)
            elif not isinstance(e.ph, str) or e.ph not in _PHASES:
                odd.setdefault("unknown ph", []).append(i)
        for reason, idx in odd.items():
            where = [(base + i, _name_of(events[i])) for i in idx[:MAX_WARNINGS]]
            notes.drop(reason, where, len(idx))
        self._pos = np.asarray(pos, dtype=np.int64)
        self.xs = [events[i] for i in pos]

    def index(self, rows: Any) -> list[int]:
        """traceEvents indices of rows (positions in the current, possibly filtered, X list)."""
        if self._pos is None:
            self._pos = np.flatnonzero(np.fromiter((e.__class__ is _X for e in self.events), dtype=bool))
        x = np.asarray(rows, dtype=np.int64)
        if self.keep is not None:
            x = self.keep[x]
        return (self.base + self._pos[x]).tolist()


def _name_of(e: Any) -> str:
    return _text(getattr(e, "name", ""))[0] if isinstance(e, _XL) else _text(e)[0][:40]


class _Builder:
    def __init__(self, shapes: str, notes: _Notes) -> None:
        self.names = _Interner()
        self.args = _Interner()
        self.cat_kind: dict[str, int] = {}
        self.shapes = shapes
        self.notes = notes
        self.wants_shape: list[bool] = []  # per name id: keep its shape arguments
        self.parts: dict[str, list[npt.NDArray[Any]]] = {k: [] for k in COLUMNS if k != "rank"}

    def _kinds(self, cats: list[str]) -> npt.NDArray[np.int8]:
        get = self.cat_kind.__getitem__
        try:
            kind = np.fromiter(map(get, cats), dtype=np.int8, count=len(cats))
        except KeyError:  # a category not seen yet: learn it, then the fast path again
            for cat in set(cats) - self.cat_kind.keys():
                known = CATEGORY_KIND.get(cat.lower(), Kind.OTHER)
                self.cat_kind[cat] = _DROP if known is None else int(known)
            kind = np.fromiter(map(get, cats), dtype=np.int8, count=len(cats))
        other = kind == Kind.OTHER
        if other.any():
            self.notes.unknown.update(c or "(none)" for c in itertools.compress(cats, other.tolist()))
        return kind

    def _texts(self, values: list[Any], field: str, rows: _Rows, names: list[Any]) -> list[str]:
        if set(map(type, values)) <= {str}:
            return values
        out: list[str] = []
        odd: dict[str, list[int]] = {}
        for j, v in enumerate(values):
            text, what = _text(v)
            out.append(text)
            if what:
                odd.setdefault(f"{field}: {what}", []).append(j)
        for reason, js in odd.items():
            first = js[:MAX_WARNINGS]
            where = list(zip(rows.index(first), [_text(names[j])[0] for j in first], [values[j] for j in first], strict=True))
            self.notes.coerce(reason, where, len(js))
        return out

    def _ints(self, items: list[Any], get: Any, field: str, rows: _Rows, at: Any, names: list[str]) -> npt.NDArray[np.int64]:
        """An integer column, get(item) per item; another type is coerced (counted) by _int_value."""
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
            out[j], what = _int_value(v, names_rows)
            if what:
                odd.setdefault(f"{_FIELD[field]}: {what}", []).append(j)
        for reason, js in odd.items():
            first = js[:MAX_WARNINGS]
            where = list(zip(rows.index(np.asarray(at)[first]), [names[at[j]] for j in first], [values[j] for j in first], strict=True))
            self.notes.coerce(reason, where, len(js))
        return out

    def _name_codes(self, names: list[str]) -> npt.NDArray[np.int32]:
        codes = self.names.codes(names)
        table = self.names.table() if len(self.wants_shape) < len(self.names.ids) else []
        for name in table[len(self.wants_shape) :]:
            self.wants_shape.append(self.shapes == "all" or (self.shapes == "supported" and name in OP_COSTS))
        return codes

    def _raw_ids(self, raws: list[Any]) -> npt.NDArray[np.int32]:
        present = np.fromiter(map(len, raws), dtype=np.int64, count=len(raws)) > 0
        out = np.full(len(raws), -1, dtype=np.int32)
        if present.any():
            out[present] = self.args.codes(list(map(bytes, itertools.compress(raws, present.tolist()))))
        return out

    def _subset(self, args: list[Any], mask: npt.NDArray[np.bool_], field: str, rows: _Rows, names: list[str]) -> npt.NDArray[np.int64]:
        """An args field (an int, or a raw JSON value's id) read only where `mask` is set; -1 elsewhere."""
        out = np.full(len(args), -1, dtype=np.int64)
        if mask.any():
            sub = list(itertools.compress(args, mask.tolist()))
            if field in ("dims", "types", "concrete"):
                out[mask] = self._raw_ids(list(map(_arg[field], sub)))
            else:
                out[mask] = self._ints(sub, _arg[field], field, rows, np.flatnonzero(mask), names)
        return out

    def _args(self, xs: list[Any], rows: _Rows, names: list[str]) -> list[Any]:
        args = list(map(_get["args"], xs))
        if rows.loose:
            odd = [j for j, a in enumerate(args) if a.__class__ is not _ArgsL]
            if odd:
                where = [(i, names[j], args[j]) for i, j in zip(rows.index(odd[:MAX_WARNINGS]), odd, strict=False)]
                self.notes.coerce("args: not an object, ignored", where, len(odd))
                for j in odd:
                    args[j] = _ArgsL()
        return args

    def _times(self, xs: list[Any], rows: _Rows, names: list[str]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
        """(ts_ns, dur_ns, valid): exact times, and the rows whose times can be used."""
        n = len(xs)
        both, both_st = us_to_ns([*map(_get["ts"], xs), *map(_get["dur"], xs)])  # one parse
        ts, dur, ts_st, dur_st = both[:n], both[n:], both_st[:n], both_st[n:]
        if not (ts_st.any() or dur_st.any() or (dur < 0).any() or (ts > _INT64_MAX - np.maximum(dur, 0)).any()):
            return ts, dur, np.ones(len(xs), dtype=bool)
        ok = (ts_st == OK) | (ts_st == FROM_STRING)
        dur_ok = (dur_st == OK) | (dur_st == FROM_STRING)
        checks = (
            (ts_st == ABSENT, "no ts"), (ts_st == NOT_NUMBER, "ts not a number"), (ts_st == OUT_OF_RANGE, "ts out of range"),
            (dur_st == ABSENT, "no dur"), (dur_st == NOT_NUMBER, "dur not a number"), (dur_st == OUT_OF_RANGE, "dur out of range"),
            (dur_ok & (dur < 0), "negative dur"), (ok & dur_ok & (ts > _INT64_MAX - np.maximum(dur, 0)), "ts + dur out of range"),
        )  # fmt: skip
        bad = np.zeros(len(xs), dtype=bool)
        for mask, reason in checks:
            hit = np.flatnonzero(mask & ~bad)
            if len(hit):
                first = hit[:MAX_WARNINGS].tolist()
                self.notes.drop(reason, list(zip(rows.index(first), [names[j] for j in first], strict=True)), len(hit))
                bad[hit] = True
        for st, field, raw_of in ((ts_st, "ts", _get["ts"]), (dur_st, "dur", _get["dur"])):
            hit = np.flatnonzero((st == FROM_STRING) & ~bad)
            if len(hit):
                first = hit[:MAX_WARNINGS].tolist()
                values = [bytes(raw_of(xs[j])).decode("utf-8", "replace") for j in first]
                where = list(zip(rows.index(first), [names[j] for j in first], values, strict=True))
                self.notes.coerce(f"{field}: string read as a number", where, len(hit))
        return ts, dur, ~bad

    def add(self, events: list[Any], base: int) -> None:
        """Append the kept X events of one decoded block (traceEvents[base:base + len(events)])."""
        rows = _Rows(events, base, self.notes)
        xs = rows.xs
        if not xs:
            return
        cats = list(map(_get["cat"], xs))
        names = list(map(_get["name"], xs))
        if rows.loose:
            names = self._texts(names, "name", rows, names)
            cats = self._texts(cats, "cat", rows, names)
        kind = self._kinds(cats)
        keep = kind != _DROP
        if not keep.all():
            rows.keep = np.flatnonzero(keep)
            xs = list(itertools.compress(xs, keep.tolist()))
            names = list(itertools.compress(names, keep.tolist()))
            kind = kind[keep]
        if not xs:
            return
        ts, dur, valid = self._times(xs, rows, names)
        args = self._args(xs, rows, names)
        every = np.arange(len(xs))
        cols: dict[str, npt.NDArray[Any]] = {"kind": kind, "ts_ns": ts, "dur_ns": dur}
        codes = self._name_codes(names)
        cols["name_id"] = codes
        cols["pid"] = self._ints(xs, _get["pid"], "pid", rows, every, names)
        tid = self._ints(xs, _get["tid"], "tid", rows, every, names)
        cols["tid"] = tid
        gpu = np.isin(kind, _GPU_KINDS)
        on_gpu_row = gpu | (kind == Kind.GPU_ANNOTATION) | (kind == Kind.SYNC)
        stream = self._subset(args, on_gpu_row, "stream", rows, names)
        cols["stream"] = np.where(gpu & (stream < 0), tid, stream)  # a GPU row without args.stream
        cols["device"] = self._subset(args, on_gpu_row, "device", rows, names)
        cols["correlation"] = self._ints(args, _arg["correlation"], "correlation", rows, every, names)
        cols["external_id"] = self._ints(args, _arg["external_id"], "external_id", rows, every, names)
        cols["bytes"] = self._subset(args, (kind == Kind.MEMCPY) | (kind == Kind.MEMSET), "nbytes", rows, names)
        # shapes: CPU ops whose cost the analyses compute (all CPU ops with shapes="all")
        want = (kind == Kind.CPU_OP) & np.asarray(self.wants_shape, dtype=bool)[codes]
        for col, field in (("dims_id", "dims"), ("types_id", "types"), ("concrete_id", "concrete")):
            cols[col] = self._subset(args, want, field, rows, names)
        every_valid = bool(valid.all())
        for k, v in cols.items():
            self.parts[k].append(v if every_valid else v[valid])

    def table(self, meta: TraceMeta) -> EventTable:
        cols: dict[str, npt.NDArray[Any]] = {}
        for k, dt in COLUMNS.items():
            if k == "rank":
                continue
            parts = self.parts[k]
            cols[k] = np.concatenate(parts).astype(dt, copy=False) if parts else np.empty(0, dtype=dt)
            parts.clear()  # release chunk arrays as we go
        cols["rank"] = np.full(len(cols["ts_ns"]), meta.rank, dtype=np.int32)
        texts = tuple(b.decode("utf-8", "replace") for b in self.args.table())
        names = tuple(str(s) for s in self.names.table())
        return EventTable(cols, names, texts, (replace(meta, events_kept=len(cols["ts_ns"])),))


def _meta_from(path: Path, info: dict[str, Any], rank: int | None, events_read: int) -> TraceMeta:
    dist = info.get("distributedInfo")
    dist = dist if isinstance(dist, dict) else {}
    file_rank = dist.get("rank")
    devices = tuple(
        str(d.get("name", "")) for d in (info.get("deviceProperties") or []) if isinstance(d, dict)
    )
    base = info.get("baseTimeNanoseconds")
    world = dist.get("world_size")
    return TraceMeta(
        path=str(path),
        rank=rank if rank is not None else (int(file_rank) if isinstance(file_rank, int) else 0),
        world_size=int(world) if isinstance(world, int) else None,
        backend=str(dist["backend"]) if isinstance(dist.get("backend"), str) else None,
        devices=devices,
        base_time_ns=int(base) if isinstance(base, int) else None,
        events_read=events_read,
        rank_in_file=int(file_rank) if isinstance(file_rank, int) else None,
    )


def load_trace(
    path: str | Path, rank: int | None = None, block_bytes: int = BLOCK_BYTES, shapes: str = "supported"
) -> EventTable:
    """Load one Kineto trace (.json or .json.gz). `rank` overrides distributedInfo.rank.

    `shapes`: whose `Input Dims` / `Input type` / `Concrete Inputs` to keep: "supported" (the
    CPU ops in analyzers.op_cost.OP_COSTS, what the analyses use), "all" CPU ops, or "none".
    `block_bytes` is how much JSON is decoded at a time (memory vs. per-block overhead).
    """
    if shapes not in ("supported", "all", "none"):
        raise ValueError(f"shapes must be 'supported', 'all' or 'none', not {shapes!r}")
    path = Path(path)
    result: StreamResult[Any] = StreamResult()
    notes = _Notes(str(path))
    builder = _Builder(shapes, notes)
    was_enabled = gc.isenabled()
    gc.disable()  # millions of short-lived structs: the cyclic collector only costs time here
    try:
        for events in iter_event_chunks(path, _decode_chunk, result, block_bytes):
            builder.add(events, result.events_read - len(events))
            del events
    finally:
        if was_enabled:
            gc.enable()
    info = {**result.trailer, **result.header}
    return builder.table(notes.meta(_meta_from(path, info, rank, result.events_read), result))


def load_traces(paths: Sequence[str | Path]) -> EventTable:
    """Load the rank files of one job into one table (column `rank`).

    Ranks come from each file's distributedInfo; files without one take their position in
    `paths`. Two files claiming the same rank are an error (compare runs with `--vs` instead).
    """
    if not paths:
        raise TraceError("no trace files given; pass one .json / .json.gz per rank")
    tables = [load_trace(p) for p in paths]
    if len(tables) == 1:
        return tables[0]
    named = [t.meta[0] for t in tables]
    if all(m.rank_in_file is None for m in named):
        tables = [t.with_rank(i) for i, t in enumerate(tables)]
    else:
        seen: dict[int, str] = {}
        for m in named:
            if m.rank in seen:
                raise TraceError(
                    f"{m.path}: rank {m.rank} is also the rank of {seen[m.rank]}; give one file per "
                    "rank (use --vs to compare two runs)"
                )
            seen[m.rank] = m.path
    return concat_tables(tables)
