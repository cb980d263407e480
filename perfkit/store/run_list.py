"""Stored runs in one listing: their columns, their spec's name and hash and their points per
status, newest first, filtered in the query (branch, GPU, spec name, commit prefix, status)."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import JSON, Connection, Select, cast, func, or_, select, type_coerce

from perfkit.store import schema
from perfkit.store.clickhouse_url import is_clickhouse_dialect


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
    source: str  # perfkit (a run directory) | csv | pytest-benchmark | vllm | aiperf | guidellm
    dirty: bool | None
    spec: str  # the spec's name ("" when it has none)
    points: dict[str, int] = field(default_factory=dict)  # point status (ok, failed, skipped) -> points
    spec_hash: str | None = None


@dataclass(frozen=True)
class RunQuery:
    """Which runs to list; None matches every run."""

    branch: str | None = None  # exact
    gpu: str | None = None  # the exact label or a part of it (any case), as `perfkit history --gpu`
    spec: str | None = None  # the spec's name, exact
    commit: str | None = None  # a prefix of the commit
    status: str | None = None  # the run's status, exact
    limit: int | None = None  # the newest `limit` runs


def run_listing(conn: Connection, query: RunQuery | None = None) -> list[RunListing]:
    """The stored runs `query` matches (all without one), newest first (time, then run id)."""
    r, p = schema.runs, schema.points
    stmt = _filtered(select(r.c.run_id, r.c.created, r.c.created_epoch, r.c.commit, r.c.branch, r.c.gpu,
                            r.c.device, r.c.status, r.c.source, r.c.dirty, r.c.spec_json, r.c.spec_hash),
                     query or RunQuery(), conn.dialect.name)
    rows = conn.execute(stmt).all()
    counts: dict[str, dict[str, int]] = defaultdict(dict)
    count_stmt = (select(p.c.run_id, p.c.status, func.count()).group_by(p.c.run_id, p.c.status)
                  .order_by(p.c.run_id, p.c.status))  # the same order of statuses on every backend
    if query is not None and query.limit is not None:
        count_stmt = count_stmt.where(p.c.run_id.in_([x.run_id for x in rows]))
    for run_id, status, n in conn.execute(count_stmt):
        counts[str(run_id)][str(status)] = int(n)
    return [RunListing(x.run_id, x.created, float(x.created_epoch), x.commit, x.branch, x.gpu, x.device, x.status,
                       x.source, x.dirty, spec_name(x.spec_json), counts.get(x.run_id, {}), x.spec_hash)
            for x in rows]


def _filtered(stmt: Select[Any], q: RunQuery, dialect: str) -> Select[Any]:
    r = schema.runs
    if q.branch is not None:
        stmt = stmt.where(r.c.branch == q.branch)
    if q.gpu is not None:
        stmt = stmt.where(or_(r.c.gpu == q.gpu, func.lower(r.c.gpu).contains(q.gpu.lower(), autoescape=True)))
    if q.spec is not None:
        stmt = stmt.where(_spec_name_column(dialect) == q.spec)
    if q.commit is not None:
        stmt = stmt.where(r.c.commit.startswith(q.commit, autoescape=True))
    if q.status is not None:
        stmt = stmt.where(r.c.status == q.status)
    stmt = stmt.order_by(r.c.created_epoch.desc(), r.c.run_id.desc())
    return stmt if q.limit is None else stmt.limit(q.limit)


def _spec_name_column(dialect: str) -> Any:
    """The spec's `name` read from its JSON in the query (PostgreSQL needs the text cast to JSON;
    SQLite's JSON functions read the text as it is)."""
    spec_json = schema.runs.c.spec_json
    if is_clickhouse_dialect(dialect):
        return func.JSONExtractString(spec_json, "name")
    as_json = cast(spec_json, JSON) if dialect == "postgresql" else type_coerce(spec_json, JSON)
    return as_json["name"].as_string()


def spec_doc(text: str | None) -> dict[str, Any]:
    """A stored spec (JSON) as a dict, {} when it is not one."""
    try:
        spec = json.loads(text or "{}")
    except json.JSONDecodeError:
        return {}
    return spec if isinstance(spec, dict) else {}


def spec_name(text: str | None) -> str:
    """The `name` of a stored spec (JSON), "" when it has none or is not JSON."""
    try:
        spec = json.loads(text or "{}")
    except json.JSONDecodeError:
        return ""
    return str(spec.get("name") or "") if isinstance(spec, dict) else ""
