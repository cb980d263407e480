"""NVTX ranges of an nsys export (`NVTX_EVENTS`) as rows for the event table.

Kept: push/pop ranges (eventType 59, NvtxPushPopRange) and start/end ranges (60,
NvtxStartEndRange) that ended (`end` not NULL, not before `start`). A range's name is its
`text`, else the StringIds value of its `textId`; ranges of a named domain read
`DOMAIN:text` (the domain's name from its NvtxDomainCreate event, eventType 75, else
`domain N`). The range's thread is `globalTid`: for a start/end range that is the thread that
started it. Marks and other NVTX events are not ranges and are skipped.

Checked before it is read (`nvtx_check`): a range whose times or thread are unusable (not an
integer, out of range, an end before the start) or whose eventType is not an integer is left
out and counted; an `end` that is NULL is an unfinished range (left out, counted). A domainId
that is not an integer reads as the default domain, a textId that is not a string id as none
(counted); `text` of any type is read as its text (bytes that are not UTF-8 as U+FFFD).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from perfkit.analyzers.loaders.nsys.checks import (
    DUR,
    INT64_MAX,
    Clean,
    Rule,
    TableCheck,
    integer_rules,
    is_int,
    time_rules,
)
from perfkit.analyzers.loaders.nsys.names import Names, no_name
from perfkit.analyzers.loaders.nsys.schema import Export, as_text
from perfkit.analyzers.loaders.nsys.trusted import TrustedRead, value

NVTX = "NVTX_EVENTS"
PUSH_POP, START_END, DOMAIN_CREATE = 59, 60, 75
_RANGE = f'"eventType" IN ({PUSH_POP}, {START_END})'
_DOMAIN = Clean("domainId", -INT64_MAX, INT64_MAX, default=0)
_TEXT_ID = Clean("textId", 0, INT64_MAX)
UNNAMED_RANGE = "(unnamed range)"


@dataclass
class NvtxRows:
    ts_ns: npt.NDArray[np.int64]
    dur_ns: npt.NDArray[np.int64]
    global_tid: npt.NDArray[np.int64]
    name_id: npt.NDArray[np.int32]


def _empty() -> NvtxRows:
    i64 = np.empty(0, dtype=np.int64)
    return NvtxRows(i64, i64, i64, np.empty(0, dtype=np.int32))


def nvtx_check(export: Export) -> TableCheck:
    """The NVTX ranges perfkit reads: of the events that are ranges (or whose eventType is not
    an integer, so nobody can tell), those with an end, usable times and a usable thread."""
    rules = [Rule("eventType", "not an integer", f'NOT {is_int("eventType")}', ("eventType",), ("type",)),
             Rule("end", "NULL (the range did not end)", '"end" IS NULL', ("start", "end"), ("null",)),
             *time_rules(), *integer_rules("globalTid", 0, INT64_MAX)]
    scope = f'NOT {is_int("eventType")} OR {_RANGE}'
    return TableCheck(export, NVTX, rules, [_DOMAIN, _TEXT_ID], scope, bounds={"dur_ns": DUR}).start()


def _domain_names(export: Export, names: Names) -> dict[int, str]:
    if not export.has(NVTX, "domainId"):
        return {}
    text, text_id = _text_exprs(export, Clean("textId", 0, INT64_MAX).sql(export, NVTX))
    rows = export.query(f'SELECT "domainId", {text}, {text_id} FROM {NVTX} WHERE "eventType" = {DOMAIN_CREATE} '
                        f'AND {is_int("domainId")}')
    sids = names.strings(r[2] for r in rows if r[1] is None and r[2] >= 0)
    out = {}
    for domain, txt, sid in rows:
        label = as_text(txt) if txt is not None else sids.get(sid)
        if label:
            out[int(domain)] = label
    return out


def _text_exprs(export: Export, text_id: str) -> tuple[str, str]:
    """SQL of a range's text (as bytes: any type, any encoding) and its string id (-1: none)."""
    text = 'CAST("text" AS BLOB)' if export.has(NVTX, "text") else "NULL"
    return text, text_id


class NvtxScan:
    """One scan of the finished ranges, CHUNK_ROWS rows at a time.

    `chunks()` yields (ts_ns, dur_ns, globalTid, local name code) arrays; the text of each range
    is reduced at once to a small code (one per distinct domain and text), and `name_lut()`
    (after the scan) maps those codes to perfkit name ids."""

    def __init__(self, export: Export, names: Names) -> None:
        self.export, self.names = export, names
        self.present = NVTX in export.tables
        self.keys: dict[tuple[int, Any], int] = {}  # (domain, text bytes or string id) -> local code
        self.n = 0
        self.check: TableCheck | None = None
        self.fast: TrustedRead | None = None
        if not self.present:
            return
        export.require(NVTX, ("start", "end", "eventType", "globalTid"))
        check = self.check = nvtx_check(export)
        text, text_id = _text_exprs(export, check.sql(_TEXT_ID))
        domain = check.sql(_DOMAIN)
        where = check.where
        self.n = check.kept
        self.sql = f'SELECT "start", "end" - "start", "globalTid", {domain}, {text}, {text_id} FROM {NVTX} {where}'
        if check.trusted:  # room for every event (ranges are counted as read), the rows verified as read
            self.n = export.count(NVTX)
            self.fast = TrustedRead(check, extra=(text,))

    def chunks(self) -> Iterator[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int32]]]:
        if not self.present:
            return
        check = self.check
        assert check is not None
        if self.fast is not None:
            for raw, (txt,) in self.fast.chunks():
                m, ts = len(txt), raw["start"]
                domains, ids = value(check, _DOMAIN, raw, m), value(check, _TEXT_ID, raw, m)
                yield ts, raw["end"] - ts, raw["globalTid"], self._codes(domains, txt, ids)
            check.total = check.kept = self.fast.rows
            return
        for rows in self.export.iter_rows(self.sql):
            m = len(rows)
            start, dur, tid, dom, txt, sid = zip(*rows, strict=True)
            del rows
            codes = self._codes(np.fromiter(dom, dtype=np.int64, count=m), txt, np.fromiter(sid, dtype=np.int64, count=m))
            yield (np.fromiter(start, dtype=np.int64, count=m), np.fromiter(dur, dtype=np.int64, count=m),
                   np.fromiter(tid, dtype=np.int64, count=m), codes)

    def _codes(self, dom: npt.NDArray[np.int64], txt: tuple[Any, ...], sid: npt.NDArray[np.int64]) -> npt.NDArray[np.int32]:
        """Each range's local code: one per distinct (domain, text, else string id), numbered in the
        order first seen (the chunk's keys hashed by dict operations in C; Python only per new key)."""
        if None in txt or b"" in txt:  # no text: the string id names the range
            ids = sid.tolist()
            named: Any = [t if t else i for t, i in zip(txt, ids, strict=True)]
        else:
            named = txt
        one = dom[0] == dom[-1] and bool((dom == dom[0]).all())  # the usual: one domain
        domains: Any = itertools.repeat(int(dom[0]), len(dom)) if one else dom.tolist()
        rows = list(zip(domains, named, strict=True))
        keys = self.keys
        new = [k for k in dict.fromkeys(rows) if k not in keys]  # numbered in the order first seen
        keys.update(zip(new, range(len(keys), len(keys) + len(new)), strict=True))
        return np.fromiter(map(keys.__getitem__, rows), dtype=np.int32, count=len(rows))

    def name_lut(self) -> npt.NDArray[np.int32]:
        return _resolve(self.export, self.names, list(self.keys))


def read_nvtx(scan: NvtxScan) -> NvtxRows:
    """The scan's ranges as arrays (empty when the export has no NVTX_EVENTS table)."""
    parts = list(scan.chunks())
    if not parts:
        out = _empty()
    else:
        ts, dur, tid, codes = (np.concatenate(c) for c in zip(*parts, strict=True))
        out = NvtxRows(ts, dur, tid, scan.name_lut()[codes])
    return out


def _resolve(export: Export, names: Names, keys: list[tuple[int, Any]]) -> npt.NDArray[np.int32]:
    """perfkit name ids for the local (domain, text or string id) keys."""
    domains = _domain_names(export, names)
    sids = names.strings(k[1] for k in keys if isinstance(k[1], int))
    lut = np.empty(len(keys), dtype=np.int32)
    for i, (dom, key) in enumerate(keys):
        if not isinstance(key, int):
            label = as_text(key) or UNNAMED_RANGE
        elif key < 0:
            label = UNNAMED_RANGE
        elif key in sids:
            label = sids[key]
        else:
            names.unresolved.add(key)
            label = no_name(key)
        text = label if dom == 0 else f"{domains.get(dom, f'domain {dom}')}:{label}"
        lut[i] = names.intern(text)
    return lut
