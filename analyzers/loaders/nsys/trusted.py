"""The fast read of an export's tables: checked on the fetched values, with no SQL pre-scan.

The checked read (analyzers.loaders.nsys.checks) scans every table once in SQL (aggregates of
every column) before it reads it: a large share of the load. Here each table is fetched as it
is stored (`"start"`, `"end"`, every describing column with NULL as `SENTINEL`) and every chunk
is verified with numpy against the same rules the scan proves: every value an integer (the
chunk packed with struct's `q`, which takes nothing else: a real, text, a blob or a NULL where
none may be raises, where numpy would truncate a real or parse text), times in range and in
order, device, stream and thread ids in range, describing values in their range or NULL. The first chunk with a row any rule or clean would
touch raises `Damaged`; the loader then reads the whole export again the checked way, so a
damaged export's counts, located lines and refusals are the checked path's, and a clean one's
table is what the checked path reads (the same SQL values: NULL as the default, `"end" - "start"`).
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from perfkit.analyzers.loaders.nsys.checks import DUR, Bound, Clean, FirstOf, TableCheck, q

SENTINEL = -(1 << 63)  # a describing column's NULL as fetched (a stored -2^63 reads as a real: damaged)
_S = "(-9223372036854775807 - 1)"
Item = Bound | FirstOf


class Damaged(Exception):
    """A row the checks would leave out, or a value they would read as absent: read checked."""


def _fetched(column: str, nullable: bool) -> str:
    if not nullable:
        return q(column)  # NULL reads None: no integer
    c = q(column)
    return f"CASE WHEN {c} IS NULL THEN {_S} WHEN {c} = {_S} THEN 0.5 ELSE {c} END"


class TrustedRead:
    """One table fetched and verified chunk by chunk; `extra` SQL columns are fetched after the
    checked ones and handed over as they are (an NVTX range's text)."""

    def __init__(self, check: TableCheck, extra: tuple[str, ...] = ()) -> None:
        self.check = check
        rules = check.rules
        nullable = {r.column for r in rules if r.test[:1] == ("null",)} | {c.column for c in check.cleans}
        cols = [r.column for r in rules] + [r.test[1] for r in rules if r.test[:1] in (("order",), ("span",))]
        self.columns = list(dict.fromkeys(cols + [c.column for c in check.cleans]))
        sql = [_fetched(c, c in nullable) for c in self.columns] + list(extra)
        self.select = f'SELECT {", ".join(sql)} FROM "{check.table}" {check.where}'
        self.rows = 0

    def chunks(self) -> Iterator[tuple[dict[str, npt.NDArray[np.int64]], list[tuple[Any, ...]]]]:
        """(checked columns as the checked path reads them, extra columns as fetched) per chunk."""
        k = len(self.columns)
        for rows in self.check.export.iter_rows(self.select):
            m = len(rows)
            self.rows += m
            extra: list[tuple[Any, ...]] = []
            try:  # struct's "q" takes integers only: a real, text, a blob or None raises
                if k == len(rows[0]):  # every column checked: one pack of the whole chunk
                    flat = np.frombuffer(struct.pack(f"{m * k}q", *itertools.chain.from_iterable(rows)), dtype=np.int64)
                    del rows
                    table = flat.reshape(m, k)
                    raw = {c: table[:, j] for j, c in enumerate(self.columns)}
                else:
                    cols = list(zip(*rows, strict=True))
                    del rows
                    raw = {c: np.frombuffer(struct.pack(f"{m}q", *v), dtype=np.int64)
                           for c, v in zip(self.columns, cols, strict=False)}
                    extra = cols[k:]
            except struct.error:
                raise Damaged(self.check.table) from None
            verify(self.check, raw)
            yield raw, extra


def verify(check: TableCheck, raw: dict[str, npt.NDArray[np.int64]]) -> None:
    """Raise Damaged unless no row of `raw` breaks a rule of `check` and no describing value
    would be read as absent; describing columns' NULLs become their default (in place of raw)."""
    later = []
    for r in check.rules:
        kind, v = (r.test[0] if r.test else None), raw[r.column]
        if kind == "type":
            continue  # integers by construction
        if kind == "null":
            bad = bool((v == SENTINEL).any())  # an unfinished range: counted by the checked read
        elif kind == "range":
            bad = int(v.min()) < r.test[1] or int(v.max()) > r.test[2]
        elif kind in ("order", "span"):
            later.append(r)
            continue
        else:
            bad = True
        if bad:
            raise Damaged(check.table)
    for r in later:  # both times are within +-TIME_LIMIT now: their difference fits
        d = raw[r.column] - raw[r.test[1]]
        if int(d.min()) < 0 or (r.test[0] == "span" and int(d.max()) > r.test[2]):
            raise Damaged(check.table)
    for c in check.cleans:
        v = raw[c.column]
        null = v == SENTINEL
        some = bool(null.any())
        if (some and c.count_null) or not (null | ((v >= c.lo) & (v <= c.hi))).all():
            raise Damaged(check.table)
        if some:
            raw[c.column] = np.where(null, c.default, v)


def value(check: TableCheck, item: Item, raw: dict[str, npt.NDArray[np.int64]], m: int) -> npt.NDArray[np.int64]:
    """What the checked read's `check.sql(item)` reads, from a verified chunk."""
    if isinstance(item, Clean):
        found = raw.get(item.column)
        return np.full(m, item.default, dtype=np.int64) if found is None else found
    if isinstance(item, FirstOf):  # COALESCE of the present columns (their values are >= 0 or -1)
        out = np.full(m, -1, dtype=np.int64)
        for c in reversed(item.present(check)):
            v = raw[c.column]
            out = np.where(v >= 0, v, out)
        return out
    if item == DUR:
        return raw["end"] - raw["start"]
    if item.startswith('"') and item.endswith('"') and item[1:-1] in raw:
        return raw[item[1:-1]]
    raise ValueError(f"no fast read of {item}")


def structured(check: TableCheck, items: dict[str, tuple[Item, Any]]) -> Iterator[npt.NDArray[Any]]:
    """The chunks `Export.chunks` yields for {name: (item, dtype)}, read the fast way."""
    struct = np.dtype([(name, np.int64) for name in items])
    for raw, _ in TrustedRead(check).chunks():
        m = len(next(iter(raw.values())))
        out = np.empty(m, dtype=struct)
        for name, (item, _dt) in items.items():
            out[name] = value(check, item, raw, m)
        yield out
