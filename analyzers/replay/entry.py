"""What a replay class builds: a workload entry, the fields it left FILL, and notes for the header."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from perfkit.core.fill import FILL


@dataclass
class Built:
    entry: dict[str, Any]  # `kind` first, then the fields
    missing: list[str] = field(default_factory=list)  # fields left FILL
    notes: list[str] = field(default_factory=list)

    def fill(self, name: str, why: str = "") -> None:
        """Leave field `name` FILL (and say why in the header when `why` is given)."""
        self.entry[name] = FILL
        if name not in self.missing:
            self.missing.append(name)
        if why:
            self.notes.append(f"`{name}`: {why}")


def unknown(what: str) -> Built:
    """An op no kind runs: kind FILL, and what ran."""
    return Built({"kind": FILL}, ["kind"], [what])
