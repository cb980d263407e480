"""Kineto event decoding: one block of the traceEvents array -> a list of event structs.

Part of the Kineto loader (analyzers.loaders.kineto.load). `decode_chunk` tries, in order:
- the strict decoder (the fast path): msgspec typed structs keeping only the fields the
  analyses need (`X`: ph X events; every other known ph decodes to an empty struct), with
  their usual types (pid / tid an integer or a string, the args fields integers);
- the loose decoder, when the strict one refuses the block: every field as whatever JSON value
  it holds (`XL`, `ArgsL`; an item that is not an object is kept as its value);
- event by event, when a number is beyond float range: each field read from its raw text
  (`Unreadable` holds a value msgspec cannot).
A block from the loose paths is a `LooseEvents`: its fields still need checking
(analyzers.loaders.kineto.columns). ts and dur are always kept as their raw text, read exactly later.
"""

from __future__ import annotations

from typing import Any

import msgspec

PHASES_SKIPPED = ["B", "E", "i", "I", "C", "b", "n", "e", "s", "t", "f", "P", "O", "N", "D", "M", "V", "v", "R", "c", "(", ")"]
PHASES = frozenset(["X", *PHASES_SKIPPED])
INT_ARGS = ("correlation", "stream", "device", "external_id", "nbytes")
# args of a collective (record_param_comms ops): raw JSON, read only for those rows
COMM_ARGS = {"coll": "Collective name", "in_nelems": "In msg nelems", "out_nelems": "Out msg nelems",
             "dtype": "dtype", "group_size": "Group size", "pg_name": "Process Group Name"}

_NO_RAW = msgspec.Raw(b"")

# ---- the strict decoder: the fast path, for events whose fields have the usual types --------


class _RawArgs(msgspec.Struct, gc=False):
    """The args every decoder keeps as raw JSON text (shapes, collective fields); the three
    decoders' args structs add correlation, stream, device, External id and bytes, typed
    strictly, loosely or raw."""

    dims: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Input Dims")
    types: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Input type")
    concrete: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Concrete Inputs")
    coll: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Collective name")
    in_nelems: msgspec.Raw = msgspec.field(default=_NO_RAW, name="In msg nelems")
    out_nelems: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Out msg nelems")
    dtype: msgspec.Raw = msgspec.field(default=_NO_RAW, name="dtype")
    group_size: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Group size")
    pg_name: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Process Group Name")


class _Args(_RawArgs, gc=False):
    correlation: int = -1
    stream: int = -1
    device: int = -1
    external_id: int = msgspec.field(default=-1, name="External id")
    nbytes: int = msgspec.field(default=-1, name="bytes")


class X(msgspec.Struct, tag_field="ph", tag="X", gc=False):
    """A complete event (ph X) from the strict decoder."""

    cat: str = ""
    name: str = ""
    pid: int | str = -1
    tid: int | str = -1
    ts: msgspec.Raw = _NO_RAW  # the number's text: read exactly by analyzers.loaders.kineto.json_numbers
    dur: msgspec.Raw = _NO_RAW
    args: _Args = msgspec.field(default_factory=_Args)


_SKIPPED: tuple[type, ...] = tuple(
    msgspec.defstruct(f"_Phase{i}", [], tag_field="ph", tag=ph, gc=False)
    for i, ph in enumerate(PHASES_SKIPPED)
)
_Event: Any = X
for _cls in _SKIPPED:
    _Event = _Event | _cls
_STRICT: Any = msgspec.json.Decoder(list[_Event])  # type: ignore[valid-type]

# ---- the loose decoder: any JSON value in any field (a block the strict one refuses) --------


class ArgsL(_RawArgs, gc=False):
    """args from the loose decoder: the integer fields may hold any JSON value."""

    correlation: Any = -1
    stream: Any = -1
    device: Any = -1
    external_id: Any = msgspec.field(default=-1, name="External id")
    nbytes: Any = msgspec.field(default=-1, name="bytes")


class XL(msgspec.Struct, gc=False):
    """An event object from the loose decoder, of any ph; any field may hold any JSON value."""

    ph: Any = None
    cat: Any = ""
    name: Any = ""
    pid: Any = -1
    tid: Any = -1
    ts: msgspec.Raw = _NO_RAW
    dur: msgspec.Raw = _NO_RAW
    args: ArgsL | list[Any] | str | int | float | bool | None = msgspec.field(default_factory=ArgsL)


_LooseItem = XL | list[Any] | str | int | float | bool | None
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


class _ArgsR(_RawArgs, gc=False):
    correlation: msgspec.Raw = _NO_RAW
    stream: msgspec.Raw = _NO_RAW
    device: msgspec.Raw = _NO_RAW
    external_id: msgspec.Raw = msgspec.field(default=_NO_RAW, name="External id")
    nbytes: msgspec.Raw = msgspec.field(default=_NO_RAW, name="bytes")


_XR_DEC = msgspec.json.Decoder(_XR)
_ARGSR_DEC = msgspec.json.Decoder(_ArgsR)


class Unreadable(str):
    """The text of a value msgspec cannot hold (a number beyond float range)."""


class LooseEvents(list):  # type: ignore[type-arg]
    """Events from the loose decoder (their fields still need checking)."""


def _value(raw: Any, default: Any) -> Any:
    if not len(raw):
        return default
    try:
        return msgspec.json.decode(raw)
    except msgspec.ValidationError:
        return Unreadable(bytes(raw).decode("utf-8", "replace"))


def _one_event(raw: Any) -> Any:
    """One event, however odd its values (the loose decoder refused its block)."""
    try:
        return _LOOSE_ONE.decode(raw)
    except msgspec.ValidationError:
        pass
    if bytes(raw)[:1] != b"{":
        return None  # an array or number beyond float range: not an event object
    r = _XR_DEC.decode(raw)
    args: Any = ArgsL()
    if bytes(r.args)[:1] == b"{":
        a = _ARGSR_DEC.decode(r.args)
        ints = {k: _value(getattr(a, k), -1) for k in INT_ARGS}
        raws = {k: getattr(a, k) for k in ("dims", "types", "concrete", *COMM_ARGS)}
        args = ArgsL(**ints, **raws)
    elif len(r.args):
        args = _value(r.args, None)
    return XL(
        _value(r.ph, None), _value(r.cat, ""), _value(r.name, ""), _value(r.pid, -1), _value(r.tid, -1),
        r.ts, r.dur, args,
    )  # fmt: skip


def decode_chunk(buf: memoryview) -> list[Any]:
    """Strict (fast); else loose; else event by event. A malformed block raises DecodeError."""
    try:
        strict: list[Any] = _STRICT.decode(buf)
        return strict
    except msgspec.ValidationError:
        pass
    try:
        return LooseEvents(_LOOSE.decode(buf))
    except msgspec.ValidationError:
        return LooseEvents(map(_one_event, _RAWS.decode(buf)))
