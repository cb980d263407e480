"""NVTX ranges of an nsys export (`NVTX_EVENTS`) as rows for the event table.

Kept: push/pop ranges (eventType 59, NvtxPushPopRange) and start/end ranges (60,
NvtxStartEndRange) that ended (`end` not NULL, not before `start`). A range's name is its
`text`, else the StringIds value of its `textId`; ranges of a named domain read
`DOMAIN:text` (the domain's name from its NvtxDomainCreate event, eventType 75, else
`domain N`). The range's thread is `globalTid`: for a start/end range that is the thread that
started it. Marks and other NVTX events are not ranges and are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from analyzers.nsys_names import Names
from analyzers.nsys_schema import Export

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


def read_nvtx(export: Export, names: Names) -> NvtxRows:
    """The export's finished NVTX ranges (empty when it has no NVTX_EVENTS table)."""
    if NVTX not in export.tables:
        return _empty()
    export.require(NVTX, ("start", "end", "eventType", "globalTid"))
    text, text_id = _text_exprs(export)
    domain = export.expr(NVTX, "domainId", 0)
    unfinished = export.count(NVTX, f'WHERE {_RANGE} AND ("end" IS NULL OR "end" < "start")')
    sql = (f'SELECT "start", "end" - "start", COALESCE("globalTid", -1), {domain}, {text}, {text_id} '
           f'FROM {NVTX} WHERE {_RANGE} AND "end" IS NOT NULL AND "end" >= "start"')
    keys: dict[tuple[int, Any], int] = {}  # (domain, text or string id) -> local code
    ints: list[npt.NDArray[np.int64]] = []
    codes: list[npt.NDArray[np.int64]] = []
    for rows in export.iter_rows(sql):
        ints.append(np.asarray([r[:3] for r in rows], dtype=np.int64).reshape(len(rows), 3))
        local = [keys.setdefault((int(r[3]), r[4] if r[4] is not None else (-1 if r[5] is None else int(r[5]))), len(keys)) for r in rows]
        codes.append(np.asarray(local, dtype=np.int64))
        del rows
    if not ints:
        out = _empty()
        out.dropped = {"unfinished NVTX range": unfinished} if unfinished else {}
        return out
    cols = np.concatenate(ints)
    del ints
    lut = _resolve(export, names, list(keys))
    return NvtxRows(
        ts_ns=cols[:, 0].copy(),
        dur_ns=cols[:, 1].copy(),
        global_tid=cols[:, 2].copy(),
        name_id=lut[np.concatenate(codes)],
        dropped={"unfinished NVTX range": unfinished} if unfinished else {},
    )


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
