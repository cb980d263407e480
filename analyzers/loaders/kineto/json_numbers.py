"""Exact JSON number text -> int64, vectorized: microseconds as written -> integer nanoseconds.

A Kineto trace writes `ts` / `dur` in microseconds, as integers or as decimals with up to three
fraction digits (nanoseconds). Read as float64, a microsecond epoch timestamp (~1.7e15 us) keeps
only 0.25 us; here the digits themselves are read, so `1712195495519695.812` becomes exactly
1712195495519695812 ns. Digits below the nanosecond are rounded half to even (the tie
`0.0005` us -> 0 ns, `0.0015` us -> 2 ns). Exponent forms (`1.7e15`), JSON strings holding a
number (`"32.5"`) and out-of-range values take a slower exact path (decimal arithmetic).

`us_to_ns(tokens)` takes the raw JSON text of each value (msgspec.Raw or bytes; empty = absent) and
returns the values and a status per value (`OK`, `ABSENT`, `NOT_NUMBER`, `OUT_OF_RANGE`,
`FROM_STRING`: a string holding a number, read exactly).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

OK, ABSENT, NOT_NUMBER, OUT_OF_RANGE, FROM_STRING = 0, 1, 2, 3, 4
INT64_MAX = (1 << 63) - 1
BEYOND = 1 << 127
_MAX_INT_DIGITS = 16  # 9.2e15 us is the int64 limit in ns: 17 integer digits never fit
_MAX_WHOLE_US = INT64_MAX // 1000
_ENCODE = msgspec.json.Encoder().encode
_SCALE_UP = np.asarray([1000, 100, 10, 1], dtype=np.int64)  # ns per unit of the last of k digits
_PLAIN_BYTE = np.zeros(256, dtype=bool)
_PLAIN_BYTE[list(b"0123456789.")] = True
_NUMBER_TEXT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_SCALE = 3  # microseconds -> nanoseconds


def decimal_to_int(text: str, scale: int = _SCALE) -> int | None:
    """`text` (a decimal number) times 10**scale, rounded half to even; None if not a number.

    Exact for any number of digits (integer arithmetic on the decimal's digits); a value of more
    than 20 digits comes back as +-BEYOND (2**127, far out of int64) without being computed."""
    text = text.strip()
    if not _NUMBER_TEXT.fullmatch(text):
        return None
    try:
        sign, digits, exponent = Decimal(text).as_tuple()
    except InvalidOperation:  # pragma: no cover - the pattern admits only valid decimals
        return None
    assert isinstance(exponent, int)
    mantissa = int("".join(map(str, digits)) or "0")
    shift = exponent + scale
    if shift >= 0:
        if mantissa and len(str(mantissa)) + shift > 20:  # beyond any int64, no huge power
            return -BEYOND if sign else BEYOND
        value = mantissa * 10**shift
    elif len(digits) + shift < 0:
        value = 0  # below 0.1 of the unit: rounds to zero
    else:
        value, rest = divmod(mantissa, 10**-shift)
        half = 10**-shift
        if 2 * rest > half or (2 * rest == half and value % 2):
            value += 1
    return -value if sign else value


def _slow(token: bytes) -> tuple[int, int]:
    """(value, status) of one token the vectorized path does not handle."""
    if not token:
        return 0, ABSENT
    status = OK
    text: Any = token.decode("utf-8", "replace")
    if token[:1] == b'"':
        try:
            text = msgspec.json.decode(token)
        except msgspec.DecodeError:
            return 0, NOT_NUMBER
        status = FROM_STRING
    if not isinstance(text, str):
        return 0, NOT_NUMBER
    value = decimal_to_int(text)
    if value is None:
        return 0, NOT_NUMBER
    if not -INT64_MAX <= value <= INT64_MAX:
        return 0, OUT_OF_RANGE
    return value, status


def _plain_mask(tokens: Sequence[Any], lengths: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """Tokens made of digits, at most one dot and a leading minus only (no exponent, no quotes)."""
    blob = np.frombuffer(b"".join(tokens), dtype=np.uint8)
    plain = lengths > 0
    if not len(blob):
        return plain
    starts = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    bad = ~_PLAIN_BYTE[blob]
    lead = starts[plain]
    bad[lead[blob[lead] == 45]] = False  # a leading minus sign
    owner = np.searchsorted(starts, np.flatnonzero(bad), side="right") - 1
    plain[owner] = False
    dots = np.searchsorted(starts, np.flatnonzero(blob == 46), side="right") - 1
    plain[dots[1:][dots[1:] == dots[:-1]]] = False  # two dots
    return plain


def _digit_groups(joined: bytes, count: int) -> npt.NDArray[np.int64]:
    """The integers of `joined` (plain tokens, comma-separated) with each `.` read as a comma:
    `12.047,5` -> [12, 47, 5] (the fraction's leading zeros are counted by the caller)."""
    text = joined.replace(b".", b",")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a short read is an error, not a warning
        try:
            flat = np.fromstring(text, dtype=np.int64, sep=",")  # C parsing, no Python ints
        except (DeprecationWarning, ValueError):
            flat = np.empty(0, dtype=np.int64)
    if len(flat) != count:  # numpy stopped early (it reads plain digits; this is a safety net)
        flat = np.asarray([max(-INT64_MAX, min(int(g), INT64_MAX)) for g in text.split(b",")], dtype=np.int64)
    return flat


def _has_empty(joined: bytes) -> bool:
    return not joined or joined[:1] == b"," or joined[-1:] == b"," or b",," in joined


def _plain_ns(joined: bytes, n: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int8], npt.NDArray[np.bool_]]:
    """(ns, status, slow) of `n` plain comma-separated tokens; `slow`: more than 17 fraction
    digits (exact rounding needs the decimal path). Integer tokens and tokens that all have one
    dot (Kineto's two formats) take the shortest paths."""
    blob = np.frombuffer(joined, dtype=np.uint8)
    ends = np.append(np.flatnonzero(blob == 44), len(blob))
    starts = np.empty(n, dtype=np.int64)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    dot_at = np.flatnonzero(blob == 46)
    flat = _digit_groups(joined, n + len(dot_at))
    status = np.zeros(n, dtype=np.int8)
    slow = np.zeros(n, dtype=bool)
    if len(dot_at) == 0:  # integer microseconds: no leading zeros in JSON, so the value says it all
        big = (flat > _MAX_WHOLE_US) | (flat < -_MAX_WHOLE_US)  # numpy saturates past int64
        status[big] = OUT_OF_RANGE
        return np.where(big, 0, flat * 1000), status, slow
    if len(dot_at) == n and (dot_at < ends).all() and (dot_at[1:] > ends[:-1]).all():
        dot, whole, frac = dot_at, flat[0::2], flat[1::2].copy()  # one dot in every token
    else:
        owner = np.searchsorted(starts, dot_at, side="right") - 1
        has_dot = np.zeros(n, dtype=bool)
        has_dot[owner] = True
        dot = ends.copy()
        dot[owner] = dot_at
        first = np.arange(n) + np.cumsum(has_dot) - has_dot
        whole = flat[first]
        frac = np.zeros(n, dtype=np.int64)
        frac[owner] = flat[first[owner] + 1]
    digits = np.where(dot < ends, ends - dot - 1, 0)
    negative = blob[starts] == 45 if b"-" in joined else np.zeros(n, dtype=bool)
    if not (digits == 3).all():
        short = digits <= 3
        frac[short] *= _SCALE_UP[digits[short]]
        long = np.flatnonzero(~short & (digits <= 17))
        if len(long):
            unit = 10 ** (digits[long] - 3)
            q, r = np.divmod(frac[long], unit)
            frac[long] = q + ((2 * r > unit) | ((2 * r == unit) & (q % 2 == 1)))
        slow = digits > 17
    mag = np.abs(whole).astype(np.uint64) * np.uint64(1000) + frac.astype(np.uint64)
    big = (mag > np.uint64(INT64_MAX)) | (dot - starts - negative > _MAX_INT_DIGITS)
    status[big] = OUT_OF_RANGE
    signed = np.where(big, 0, mag.astype(np.int64))
    return np.where(negative, -signed, signed), status, slow


def us_to_ns(tokens: Sequence[Any]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int8]]:
    """Exact nanoseconds from the raw JSON text of microsecond values (see module docstring).

    `tokens`: a list of msgspec.Raw, or of bytes (not mixed); empty = absent.

    The common case costs a join, one numpy parse of the digit groups and a few array operations:
    `12.045` is read as the integers 12 and 45 with three fraction digits. Tokens that are not
    plain numbers (absent, strings, exponents, null) are replaced by `0` there and read one by one.
    """
    n = len(tokens)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int8)
    if type(tokens[0]) is msgspec.Raw:  # the encoder copies Raw text faster than bytes.join
        joined = _ENCODE(tokens)[1:-1]
    else:
        joined = b",".join(tokens)
    odd = np.zeros(n, dtype=bool)
    if joined.translate(None, b"0123456789.-,") or _has_empty(joined):
        odd = ~_plain_mask(tokens, np.fromiter(map(len, tokens), dtype=np.int64, count=n))
        joined = b",".join([b"0" if o else t for t, o in zip(tokens, odd.tolist(), strict=True)])
    out, status, slow = _plain_ns(joined, n)
    for i in np.flatnonzero(odd | slow).tolist():
        out[i], status[i] = _slow(bytes(tokens[i]))
    return out, status
