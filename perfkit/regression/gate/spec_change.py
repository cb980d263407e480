"""A spec that changed between the two runs of a comparison: which measurements it touches.

Two runs of one spec (same name) whose content hash differs ran different code paths or
shapes (n_layers 2 -> 4): their measurements compare configurations, not a change of the code.
A workload whose definition differs touches its points' rows; a change outside the workloads
(device, dtype, seeds, profile settings) touches every row; rows without a point (kernel tables,
ingested metrics) are touched by any change. Touched rows are incomparable unless the user asks
to compare across specs. Pure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ACROSS_FLAG = "--across-specs"
_NOT_CONTENT = ("name",)  # what names the spec, not what it runs


@dataclass(frozen=True)
class SpecChange:
    spec: str  # the spec's name
    base_hash: str
    cand_hash: str
    workloads: tuple[str, ...]  # the workloads whose definition differs (all: empty and `everything`)
    everything: bool  # a setting outside the workloads changed: every row is touched
    across: bool  # the user asked to compare across specs

    def touches(self, workload: str | None) -> bool:
        """Whether a row of a point of `workload` (None: a row without a point) is touched."""
        return self.everything or workload is None or workload in self.workloads

    @property
    def text(self) -> str:
        """'spec 'decode' changed between the runs (hash 1a2b -> 3c4d: workload decode): its rows
        are incomparable; --across-specs compares them'."""
        what = "settings outside the workloads" if self.everything else \
            "workload " + ", ".join(self.workloads) if self.workloads else "no workload"
        head = (f"spec {self.spec or '(unnamed)'!r} changed between the runs (hash {self.base_hash[:12]} -> "
                f"{self.cand_hash[:12]}: {what})")
        if self.across:
            return f"{head}: compared across specs ({ACROSS_FLAG})"
        return f"{head}: the rows it touches are incomparable; {ACROSS_FLAG} compares them"


def _canonical(x: Any) -> str:
    return json.dumps(x, sort_keys=True, default=str)


def spec_change(name_b: str, name_c: str, hash_b: str, hash_c: str, doc_b: Mapping[str, Any],
                doc_c: Mapping[str, Any], across: bool = False) -> SpecChange | None:
    """The change of one spec between the runs; None when the specs differ in name (another
    spec: its rows do not pair up), a hash is missing, or nothing changed."""
    if name_b != name_c or not hash_b or not hash_c or hash_b == hash_c:
        return None
    if not doc_b or not doc_c:  # the definitions are not at hand: every row may be touched
        return SpecChange(name_c, hash_b, hash_c, (), True, across)
    wb = {str(w.get("name")): _canonical(w) for w in doc_b.get("workloads") or () if isinstance(w, Mapping)}
    wc = {str(w.get("name")): _canonical(w) for w in doc_c.get("workloads") or () if isinstance(w, Mapping)}
    rest_b = {k: v for k, v in doc_b.items() if k != "workloads" and k not in _NOT_CONTENT}
    rest_c = {k: v for k, v in doc_c.items() if k != "workloads" and k not in _NOT_CONTENT}
    everything = _canonical(rest_b) != _canonical(rest_c)
    changed = tuple(sorted(n for n in wb.keys() | wc.keys() if wb.get(n) != wc.get(n)))
    if not everything and not changed:  # the same definitions (a hash made another way): no change
        return None
    return SpecChange(name_c, hash_b, hash_c, changed, everything, across)
