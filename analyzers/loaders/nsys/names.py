"""The string table of an nsys export as perfkit reads it: names interned once, StringIds resolved.

Kernel and API names, and NVTX texts recorded with a registered string, are ids into the
export's `StringIds(id, value)`; only the ids the loaded rows use are looked up (batched
`WHERE id IN (...)`), so a large string table is never read whole. An id StringIds does not
hold, or holds NULL or empty text for, reads `<no name: string id N>`: one name per id, so such
rows are never merged with each other; values are read as bytes and decoded (U+FFFD for bytes
that are not UTF-8, the text of a number for a number).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from perfkit.analyzers.loaders.nsys.schema import Export, as_text

_BATCH = 500
_API_VERSION = re.compile(r"_v\d{4,}$")  # cudaLaunchKernel_v7000 -> cudaLaunchKernel


def api_name(name: str) -> str:
    """A CUDA API name without nsys's version suffix (as Kineto and `nsys stats` spell it)."""
    return _API_VERSION.sub("", name)


def no_name(sid: int) -> str:
    """The placeholder of a string id StringIds does not hold, or holds no text for."""
    return f"<no name: string id {sid}>"


class Names:
    """perfkit's name table for one export (ids in first-seen order)."""

    def __init__(self, export: Export) -> None:
        self.export = export
        self.ids: dict[str, int] = {}
        self.unresolved: set[int] = set()  # string ids StringIds does not hold, or holds no text for
        self._resolved: dict[tuple[Callable[[str], str], int], int] = {}  # (transform, string id) -> name id

    def intern(self, name: str) -> int:
        found = self.ids.get(name)
        if found is None:
            found = self.ids[name] = len(self.ids)
        return found

    def codes(self, names: Iterable[str]) -> npt.NDArray[np.int32]:
        return np.asarray([self.intern(n) for n in names], dtype=np.int32)

    def strings(self, sids: Iterable[Any]) -> dict[int, str]:
        """{string id: text} for the ids that StringIds holds with a text (StringIds must exist:
        checked by the loader); ids that are not non-negative integers are not looked up."""
        wanted = sorted({s for s in sids if isinstance(s, int) and 0 <= s < 1 << 63})
        out: dict[int, str] = {}
        for i in range(0, len(wanted), _BATCH):
            batch = tuple(wanted[i : i + _BATCH])
            marks = ",".join("?" * len(batch))
            for k, v in self.export.query(f"SELECT id, CAST(value AS BLOB) FROM StringIds WHERE id IN ({marks})", batch):
                text = as_text(v)
                if isinstance(k, int) and text:
                    out[k] = text
        return out

    def from_string_ids(self, sids: npt.NDArray[Any], transform: Callable[[str], str] = str,
                        missing: str | None = "<no name>") -> npt.NDArray[np.int32]:
        """perfkit name ids for an array of StringIds ids: an id StringIds does not hold or holds
        no text for reads `<no name: string id N>` (one name per id, never merged); a negative
        id (no id: the column was NULL or unusable) reads `missing`, or -1 when that is None.

        Called chunk by chunk (an SQL chunk's ids): each string id is looked up once."""
        inverse, uniq = pd.factorize(sids)
        lut = self._ids([int(s) for s in uniq.tolist()], transform, missing)
        return lut[inverse]

    def _ids(self, uniq: list[int], transform: Callable[[str], str], missing: str | None) -> npt.NDArray[np.int32]:
        known = self._resolved
        values = self.strings(s for s in uniq if s >= 0 and (transform, s) not in known)
        lut = []
        for sid in uniq:
            if sid < 0:
                lut.append(-1 if missing is None else self.intern(missing))
                continue
            found = known.get((transform, sid))
            if found is None:
                value = values.get(sid)
                if value is None:
                    self.unresolved.add(sid)
                    found = self.intern(no_name(sid))
                else:
                    found = self.intern(transform(value))
                known[(transform, sid)] = found
            lut.append(found)
        return np.asarray(lut, dtype=np.int32)

    def table(self) -> tuple[str, ...]:
        return tuple(self.ids)
