"""Every stored run in one listing: its columns, its spec's name and its points per status."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field

from sqlalchemy import Connection, func, select

from perfkit.store import schema


@dataclass(frozen=True)
class RunListing:
    run_id: str
    created: str
    created_epoch: float
    commit: str | None
    branch: str | None
    gpu: str
    device: str
    status: str
    source: str
    dirty: bool | None
    spec: str  # the spec's name ("" when it has none)
    points: dict[str, int] = field(default_factory=dict)  # point status (ok, failed, skipped) -> points


def run_listing(conn: Connection) -> list[RunListing]:
    """Every stored run (in no particular order)."""
    r, p = schema.runs, schema.points
    rows = conn.execute(select(r.c.run_id, r.c.created, r.c.created_epoch, r.c.commit, r.c.branch, r.c.gpu,
                               r.c.device, r.c.status, r.c.source, r.c.dirty, r.c.spec_json)).all()
    counts: dict[str, dict[str, int]] = defaultdict(dict)
    for run_id, status, n in conn.execute(select(p.c.run_id, p.c.status, func.count()).group_by(p.c.run_id, p.c.status)):
        counts[str(run_id)][str(status)] = int(n)
    return [RunListing(x.run_id, x.created, float(x.created_epoch), x.commit, x.branch, x.gpu, x.device, x.status,
                       x.source, x.dirty, spec_name(x.spec_json), counts.get(x.run_id, {})) for x in rows]


def spec_name(text: str | None) -> str:
    """The `name` of a stored spec (JSON), "" when it has none or is not JSON."""
    try:
        spec = json.loads(text or "{}")
    except json.JSONDecodeError:
        return ""
    return str(spec.get("name") or "") if isinstance(spec, dict) else ""
