"""Reading the store: runs by id (perfkit.store.run_search finds them by branch, GPU, spec and
commit), a run's metrics with raw samples, a metric's history across runs, and whole perfkit
runs back (round trip)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, func, select

from perfkit.core.artifacts import Artifacts, artifacts_data
from perfkit.core.codec import RecordError, from_builtins
from perfkit.core.direction import LOWER
from perfkit.core.env import Env
from perfkit.core.errors import StoreError
from perfkit.core.migrate import load_env
from perfkit.core.point_spec import PointSpec, point_spec_from_json
from perfkit.core.record import PointResult, Run
from perfkit.store import schema
from perfkit.store.metrics import MetricRecord
from perfkit.store.run_list import spec_doc, spec_name
from perfkit.store.stored_json import damaged_row, stored_object, stored_sample

_CHUNK = 500


@dataclass(frozen=True)
class RunRow:
    run_id: str
    created: str
    created_epoch: float
    commit: str | None
    branch: str | None
    gpu: str
    gpu_driver: str | None
    device: str
    status: str
    source: str
    spec_hash: str | None
    spec_name: str  # the spec's `name` ("" when it has none)
    env: Env
    spec_doc: Mapping[str, Any] = field(default_factory=dict)  # the spec as stored ({} when not JSON)


@dataclass(frozen=True)
class HistoryPoint:
    run_id: str
    created_epoch: float
    created: str
    commit: str | None
    branch: str | None
    gpu: str
    samples: tuple[float, ...]
    value: float


def _run_row(conn: Connection, row: Any) -> RunRow:
    return RunRow(
        run_id=row.run_id,
        created=row.created,
        created_epoch=float(row.created_epoch),
        commit=row.commit,
        branch=row.branch,
        gpu=row.gpu,
        gpu_driver=row.gpu_driver,
        device=row.device,
        status=row.status,
        source=row.source,
        spec_hash=row.spec_hash,
        spec_name=spec_name(row.spec_json),
        env=stored_env(conn, row),
        spec_doc=spec_doc(row.spec_json),
    )


def stored_env(conn: Connection, row: Any) -> Env:
    """The typed env of a `runs` row; rows stored by older perfkits (record schema 1) migrate."""
    data = stored_object(conn, row.env_json, row.run_id, "env")
    try:
        return load_env(data, int(row.record_schema))
    except (RecordError, TypeError, ValueError) as exc:
        raise damaged_row(conn, row.run_id, "env", exc) from None


def get_run(conn: Connection, run_id: str) -> RunRow:
    """The run with this id, or the only one whose id starts with it."""
    row = find_run(conn, run_id)
    if row is None:
        raise StoreError(f"run {run_id!r}: not in the store; list runs with `perfkit runs` or pass a run directory")
    return row


def find_run(conn: Connection, run_id: str) -> RunRow | None:
    """The run with this id, or the only one whose id starts with it; None when there is none,
    StoreError when the prefix names several."""
    r = schema.runs
    row = conn.execute(select(r).where(r.c.run_id == run_id)).first()
    if row is not None:
        return _run_row(conn, row)
    rows = conn.execute(select(r).where(r.c.run_id.startswith(run_id, autoescape=True)).limit(3)).all()
    if len(rows) > 1:
        raise StoreError(f"run {run_id!r}: ambiguous prefix ({', '.join(x.run_id for x in rows)}, ...); "
                         "pass more of the id")
    return _run_row(conn, rows[0]) if rows else None


def run_metrics(conn: Connection, run_id: str) -> list[MetricRecord]:
    """A run's metrics with their raw samples, in insertion order."""
    m = schema.metrics
    rows = conn.execute(
        select(m.c.id, m.c.name, m.c.point_key, m.c.unit, m.c.direction).where(m.c.run_id == run_id).order_by(m.c.id)
    ).all()
    samples = _samples(conn, [row.id for row in rows])
    return [
        MetricRecord(row.name, row.point_key, row.unit, row.direction, samples.get(row.id, ()))
        for row in rows
    ]


def _samples(conn: Connection, metric_ids: Sequence[int]) -> dict[int, tuple[float, ...]]:
    s = schema.samples
    out: dict[int, list[float]] = defaultdict(list)
    for start in range(0, len(metric_ids), _CHUNK):
        chunk = list(metric_ids[start : start + _CHUNK])
        q = select(s.c.metric_id, s.c.value).where(s.c.metric_id.in_(chunk)).order_by(s.c.metric_id, s.c.idx)
        for mid, value in conn.execute(q):
            out[int(mid)].append(stored_sample(conn, value, int(mid)))
    return {k: tuple(v) for k, v in out.items()}


def metric_history(
    conn: Connection,
    metric: str,
    gpu: str | None = None,
    since_epoch: float | None = None,
    until_epoch: float | None = None,
    branch: str | None = None,
    exclude: Iterable[str] = (),
    limit: int | None = None,
) -> list[HistoryPoint]:
    """Runs that have `metric` (on GPU label `gpu`), oldest first; `limit` keeps the newest."""
    m, r = schema.metrics, schema.runs
    q = (
        select(m.c.id, m.c.value, r.c.run_id, r.c.created_epoch, r.c.created, r.c.commit, r.c.branch, r.c.gpu)
        .join(r, r.c.run_id == m.c.run_id)
        .where(m.c.name == metric)
    )
    if gpu is not None:
        q = q.where(r.c.gpu == gpu)
    if since_epoch is not None:
        q = q.where(r.c.created_epoch >= since_epoch)
    if until_epoch is not None:
        q = q.where(r.c.created_epoch <= until_epoch)
    if branch is not None:
        q = q.where(r.c.branch == branch)
    excluded = list(exclude)
    if excluded:
        q = q.where(r.c.run_id.not_in(excluded))
    q = q.order_by(r.c.created_epoch.desc(), r.c.run_id.desc())
    if limit is not None:
        q = q.limit(limit)
    rows = list(reversed(conn.execute(q).all()))
    samples = _samples(conn, [row.id for row in rows])
    return [
        HistoryPoint(row.run_id, float(row.created_epoch), row.created, row.commit, row.branch, row.gpu,
                     samples.get(row.id, ()), float(row.value))
        for row in rows
    ]


def metric_gpus(conn: Connection, metric: str) -> list[str]:
    m, r = schema.metrics, schema.runs
    q = select(r.c.gpu).join(m, m.c.run_id == r.c.run_id).where(m.c.name == metric).distinct()
    return sorted(row[0] for row in conn.execute(q))


def metric_branches(conn: Connection, metric: str) -> list[str]:
    """The branches of the runs that have `metric` (runs without a branch left out), sorted."""
    m, r = schema.metrics, schema.runs
    q = select(r.c.branch).join(m, m.c.run_id == r.c.run_id).where(m.c.name == metric).distinct()
    return sorted(b for b in conn.execute(q).scalars().all() if b)


def metric_unit_direction(conn: Connection, metric: str, run_id: str | None = None) -> tuple[str, str]:
    """(unit, direction) of `metric` as stored (with that run when `run_id` is given); ("", "lower") if absent."""
    m = schema.metrics
    q = select(m.c.unit, m.c.direction).where(m.c.name == metric)
    if run_id is not None:
        q = q.where(m.c.run_id == run_id)
    row = conn.execute(q.limit(1)).first()
    return (row.unit, row.direction) if row else ("", LOWER)


def run_metric_directions(conn: Connection, run_id: str) -> list[tuple[str, str]]:
    """(name, direction) of each metric of a run, in insertion order."""
    m = schema.metrics
    q = select(m.c.name, m.c.direction).where(m.c.run_id == run_id).order_by(m.c.id)
    return [(str(name), str(direction)) for name, direction in conn.execute(q)]


def _stored_points(conn: Connection, run_id: str) -> list[dict[str, Any]]:
    """Each stored point of a run as its JSON object, stored order (read and parsed once)."""
    p = schema.points
    q = select(p.c.point_json).where(p.c.run_id == run_id).order_by(p.c.position)
    return [d for d in (stored_object(conn, x.point_json, run_id, "point") for x in conn.execute(q)) if "key" in d]


def run_point_specs(conn: Connection, run_id: str) -> dict[str, PointSpec]:
    """Point key -> what must match to compare it (workload, params, timing settings), stored order."""
    return run_points(conn, run_id)[0]


def run_points(conn: Connection, run_id: str) -> tuple[dict[str, PointSpec], dict[str, dict[str, Any]]]:
    """From one read of the run's points: key -> its PointSpec, and key -> its workload's own
    `metrics` as stored (the serving attribution reads them)."""
    points = _stored_points(conn, run_id)
    return ({str(d["key"]): point_spec_from_json(d) for d in points},
            {str(d["key"]): dict(d.get("metrics") or {}) for d in points})


def count_runs(conn: Connection) -> int:
    return int(conn.execute(select(func.count()).select_from(schema.runs)).scalar_one())


def metric_names(conn: Connection, pattern: str | None = None) -> list[str]:
    m = schema.metrics
    q = select(m.c.name).distinct()
    names = sorted(row[0] for row in conn.execute(q))
    if pattern:
        import fnmatch

        names = [n for n in names if fnmatch.fnmatchcase(n, pattern)]
    return names


def load_run(conn: Connection, run_id: str) -> Run:
    """The perfkit Run stored under run_id, as it was given to store_run (in the current schema)."""
    r, p = schema.runs, schema.points
    row = conn.execute(select(r).where(r.c.run_id == run_id)).first()
    if row is None:
        raise StoreError(f"run {run_id!r}: not in the store; pass a stored run id (list them with `perfkit runs`)")
    metrics = {mr.name: mr for mr in run_metrics(conn, run_id)}
    points = []
    for prow in conn.execute(select(p.c.point_json).where(p.c.run_id == run_id).order_by(p.c.position)):
        d = stored_object(conn, prow.point_json, run_id, "point")
        meas = d.get("measurement")
        if isinstance(meas, dict) and "samples_in_metric" in meas:
            meas = dict(meas)
            held = metrics.get(meas.pop("samples_in_metric"))
            if held is None:
                raise damaged_row(conn, run_id, f"point {d.get('key')!r}", "its samples' metric is not stored")
            meas["samples_s"] = list(held.samples)
            d["measurement"] = meas
        try:
            points.append(from_builtins(PointResult, d))
        except RecordError as exc:
            raise damaged_row(conn, run_id, f"point {d.get('key')!r}", exc) from None
    extra = stored_object(conn, row.run_json, run_id, "run_json")
    try:
        artifacts = from_builtins(Artifacts, artifacts_data(extra.get("artifacts")))
    except RecordError as exc:
        raise damaged_row(conn, run_id, "artifacts", exc) from None
    return Run(
        run_id=row.run_id,
        created=extra.pop("created_raw", row.created),
        status=row.status,
        spec=stored_object(conn, row.spec_json, run_id, "spec"),
        spec_hash=row.spec_hash or "",
        spec_path=row.spec_path or "",
        device=row.device,
        env=stored_env(conn, row),
        points=tuple(points),
        finished=extra.get("finished"),
        artifacts=artifacts,
    )


def kernel_table(conn: Connection, run_id: str) -> list[dict[str, Any]]:
    k = schema.kernels
    rows = conn.execute(select(k).where(k.c.run_id == run_id).order_by(k.c.id)).all()
    return [
        {"point": x.point_key, "name": x.name, "calls": x.calls, "total_ns": x.total_ns, **stored_object(conn, x.extra_json, run_id, "kernel row")}
        for x in rows
    ]


def count_rows(conn: Connection) -> dict[str, int]:
    """Rows per table (for tests and `perfkit history --stats`)."""
    out = {}
    for t in (schema.runs, schema.points, schema.metrics, schema.samples, schema.kernels):
        out[t.name] = int(conn.execute(select(func.count()).select_from(t)).scalar_one())
    return out
