"""NVTX ranges of an nsys export (`NVTX_EVENTS`) as rows for the event table.

Kept: push/pop ranges (eventType 59, NvtxPushPopRange) and start/end ranges (60,
NvtxStartEndRange) that ended (`end` not NULL, not before `start`). A range's name is its
`text`, else the StringIds value of its `textId`; ranges of a named domain read
`DOMAIN:text` (the domain's name from its NvtxDomainCreate event, eventType 75, else
`domain N`). The range's thread is `globalTid`: for a start/end range that is the thread that
started it. Marks and other NVTX events are not ranges and are skipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from perfkit.analyzers.loaders.nsys.names import Names
from perfkit.analyzers.loaders.nsys.schema import Export

NVTX = "NVTX_EVENTS"
PUSH_POP, START_END, DOMAIN_CREATE = 59, 60, 75
_RANGE = f'"eventType" IN ({PUSH_POP}, {START_END})'


@dataclass
class NvtxRows:
    ts_ns: npt.NDArray[np.int64]
    dur_ns: npt.NDArray[np.int64]
    global_tid: npt.NDArray[np.int64]
    name_id: npt.NDArray[np.int32]
    dropped: dict[str, int] = field(default_factory=dict)


def _empty() -> NvtxRows:
    i64 = np.empty(0, dtype=np.int64)
    return NvtxRows(i64, i64, i64, np.empty(0, dtype=np.int32))


def _domain_names(export: Export, names: Names) -> dict[int, str]:
    if not export.has(NVTX, "domainId"):
        return {}
    text = _text_exprs(export)
    rows = export.query(f'SELECT "domainId", {text[0]}, {text[1]} FROM {NVTX} WHERE "eventType" = {DOMAIN_CREATE}')
    sids = names.strings(r[2] for r in rows if r[1] is None and r[2] is not None)
    out = {}
    for domain, txt, sid in rows:
        label = txt if txt is not None else sids.get(int(sid)) if sid is not None else None
        if domain is not None and label:
            out[int(domain)] = str(label)
    return out


def _text_exprs(export: Export) -> tuple[str, str]:
    text = '"text"' if export.has(NVTX, "text") else "NULL"
    text_id = '"textId"' if export.has(NVTX, "textId") else "NULL"
    return text, text_id


class NvtxScan:
    """One scan of the finished ranges, CHUNK_ROWS rows at a time.

    `chunks()` yields (ts_ns, dur_ns, globalTid, local name code) arrays; the text of each range
    is reduced at once to a small code (one per distinct domain and text), and `name_lut()`
    (after the scan) maps those codes to perfkit name ids."""

    def __init__(self, export: Export, names: Names) -> None:
        self.export, self.names = export, names
        self.present = NVTX in export.tables
        self.keys: dict[tuple[int, Any], int] = {}  # (domain, text or string id) -> local code
        self.n = self.unfinished = self.invalid = 0
        self.dur_bounds: tuple[int, int] | None = None  # (min, max) duration of the kept ranges
        if not self.present:
            return
        export.require(NVTX, ("start", "end", "eventType", "globalTid"))
        text, text_id = _text_exprs(export)
        domain = export.expr(NVTX, "domainId", 0)
        kept = 'typeof("start") = \'integer\' AND typeof("end") = \'integer\' AND "end" >= "start"'
        left = export.query(f'SELECT coalesce(sum("end" IS NULL), 0), coalesce(sum("end" IS NOT NULL AND NOT ({kept})), 0) '
                            f"FROM {NVTX} WHERE {_RANGE}")[0]  # one scan for both counts
        self.unfinished, self.invalid = int(left[0]), int(left[1])
        where = f"WHERE {_RANGE} AND {kept}"
        self.n, (self.dur_bounds,) = export.count_and_bounds(NVTX, ['"end" - "start"'], where)
        self.sql = f'SELECT "start", "end" - "start", COALESCE("globalTid", -1), {domain}, {text}, {text_id} FROM {NVTX} {where}'

    def dropped(self) -> dict[str, int]:
        out = {"unfinished NVTX range": self.unfinished} if self.unfinished else {}
        if self.invalid:
            out["NVTX range ending before it starts or with a non-integer time"] = self.invalid
        return out

    def chunks(self) -> Iterator[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int32]]]:
        if not self.present:
            return
        put, keys = self.keys.setdefault, self.keys
        for rows in self.export.iter_rows(self.sql):
            m = len(rows)
            start, dur, tid, dom, txt, sid = zip(*rows, strict=True)
            del rows
            codes = np.fromiter((put((d, t if t is not None else (-1 if i is None else i)), len(keys))
                                 for d, t, i in zip(dom, txt, sid, strict=True)), dtype=np.int32, count=m)
            yield (np.fromiter(start, dtype=np.int64, count=m), np.fromiter(dur, dtype=np.int64, count=m),
                   np.fromiter(tid, dtype=np.int64, count=m), codes)

    def name_lut(self) -> npt.NDArray[np.int32]:
        return _resolve(self.export, self.names, list(self.keys))


def read_nvtx(export: Export, names: Names) -> NvtxRows:
    """The export's finished NVTX ranges as arrays (empty when it has no NVTX_EVENTS table)."""
    scan = NvtxScan(export, names)
    parts = list(scan.chunks())
    if not parts:
        out = _empty()
    else:
        ts, dur, tid, codes = (np.concatenate(c) for c in zip(*parts, strict=True))
        out = NvtxRows(ts, dur, tid, scan.name_lut()[codes])
    out.dropped = scan.dropped()
    return out


def _resolve(export: Export, names: Names, keys: list[tuple[int, Any]]) -> npt.NDArray[np.int32]:
    """perfkit name ids for the local (domain, text or string id) keys."""
    domains = _domain_names(export, names)
    sids = names.strings(k[1] for k in keys if isinstance(k[1], int))
    lut = np.empty(len(keys), dtype=np.int32)
    for i, (dom, label) in enumerate(keys):
        if isinstance(label, int):
            label = sids.get(label, "(unnamed range)" if label < 0 else f"<string id {label}>")
        text = str(label) if dom == 0 else f"{domains.get(dom, f'domain {dom}')}:{label}"
        lut[i] = names.intern(text)
    return lut
