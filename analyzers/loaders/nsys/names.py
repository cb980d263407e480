"""The string table of an nsys export as perfkit reads it: names interned once, StringIds resolved.

Kernel and API names, and NVTX texts recorded with a registered string, are ids into the
export's `StringIds(id, value)`; only the ids the loaded rows use are looked up (batched
`WHERE id IN (...)`), so a large string table is never read whole.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from perfkit.analyzers.loaders.nsys.schema import Export

_BATCH = 500
_API_VERSION = re.compile(r"_v\d{4,}$")  # cudaLaunchKernel_v7000 -> cudaLaunchKernel


def api_name(name: str) -> str:
    """A CUDA API name without nsys's version suffix (as Kineto and `nsys stats` spell it)."""
    return _API_VERSION.sub("", name)


class Names:
    """perfkit's name table for one export (ids in first-seen order)."""

    def __init__(self, export: Export) -> None:
        self.export = export
        self.ids: dict[str, int] = {}
        self.unresolved = 0  # string ids StringIds did not hold
        self._resolved: dict[tuple[Callable[[str], str], int], int] = {}  # (transform, string id) -> name id

    def intern(self, name: str) -> int:
        found = self.ids.get(name)
        if found is None:
            found = self.ids[name] = len(self.ids)
        return found

    def codes(self, names: Iterable[str]) -> npt.NDArray[np.int32]:
        return np.asarray([self.intern(n) for n in names], dtype=np.int32)

    def strings(self, sids: Iterable[int]) -> dict[int, str]:
        """{string id: value} for the ids (StringIds must exist: checked by the loader)."""
        wanted = sorted({int(s) for s in sids if int(s) >= 0})
        out: dict[int, str] = {}
        for i in range(0, len(wanted), _BATCH):
            batch = tuple(wanted[i : i + _BATCH])
            marks = ",".join("?" * len(batch))
            out.update((int(k), str(v)) for k, v in self.export.query(f"SELECT id, value FROM StringIds WHERE id IN ({marks})", batch))
        return out

    def from_string_ids(self, sids: npt.NDArray[Any], transform: Callable[[str], str] = str) -> npt.NDArray[np.int32]:
        """perfkit name ids for an array of StringIds ids (a missing id reads `<string id N>`).

        Called chunk by chunk (an SQL chunk's ids): each string id is looked up once."""
        inverse, uniq = pd.factorize(sids)
        return self._ids(uniq.tolist(), transform)[inverse]

    def _ids(self, uniq: list[int], transform: Callable[[str], str]) -> npt.NDArray[np.int32]:
        known = self._resolved
        values = self.strings(s for s in uniq if (transform, s) not in known)
        lut = []
        for sid in uniq:
            found = known.get((transform, sid))
            if found is None:
                value = values.get(int(sid))
                if value is None:
                    self.unresolved += 1
                    value = f"<string id {sid}>"
                found = known[(transform, sid)] = self.intern(transform(value))
            lut.append(found)
        return np.asarray(lut, dtype=np.int32)

    def table(self) -> tuple[str, ...]:
        return tuple(self.ids)
