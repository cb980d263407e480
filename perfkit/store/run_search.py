"""Finding stored runs by what they are: the latest run of a branch on a GPU of a spec (by the
spec's name), the runs of a commit, and, when nothing matches, the runs closest to the search."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import Connection, func, or_, select

from perfkit.core.errors import StoreError, echo, shorten
from perfkit.store import schema
from perfkit.store.read import RunRow, get_run
from perfkit.store.run_list import spec_name

MIN_COMMIT_PREFIX = 4  # as git: a shorter prefix names a commit only when it is the whole hash
_NEARBY_ROWS = 2000


@dataclass(frozen=True)
class RunSearch:
    """The latest run of `branch` on the GPU labelled `gpu` (or whose label contains it, any
    case; "" any GPU) of the spec named `spec` (None: any spec), other than `exclude`."""

    branch: str
    gpu: str
    spec: str | None = None
    exclude: str | None = None


@dataclass(frozen=True)
class RunBrief:
    """A stored run as a search names it: id, branch, GPU label, spec name, time."""

    run_id: str
    branch: str | None
    gpu: str
    spec: str
    created_epoch: float

    def describe(self) -> str:
        return f"{self.run_id} ({self.branch or 'no branch'}@{self.gpu}, spec {self.spec or '(unnamed)'!r})"


def gpu_label(conn: Connection, branch: str, gpu: str) -> str | None:
    """The one GPU label of `branch`'s runs that `gpu` names: itself, or the only label that
    contains it; None when none does; StoreError when several do."""
    r = schema.runs
    q = select(r.c.gpu).where(r.c.branch == branch).distinct()
    if gpu:
        q = q.where(or_(r.c.gpu == gpu, func.lower(r.c.gpu).contains(gpu.lower(), autoescape=True)))
    labels = sorted(str(x) for x in conn.execute(q).scalars())
    if gpu in labels:
        return gpu
    if len(labels) > 1:
        raise StoreError(f"{shorten(branch)}@{shorten(gpu)}: GPU {echo(gpu)} matches {', '.join(labels)}; name one exactly")
    return labels[0] if labels else None


def find_latest(conn: Connection, search: RunSearch) -> RunRow | None:
    """The run `search` names, or None."""
    label = gpu_label(conn, search.branch, search.gpu)
    if label is None:
        return None
    r = schema.runs
    q = select(r.c.run_id, r.c.spec_json).where(r.c.branch == search.branch, r.c.gpu == label)
    if search.exclude is not None:
        q = q.where(r.c.run_id != search.exclude)
    if search.spec:  # a cheap filter first (the name as JSON text); the name is checked on the parsed spec
        q = q.where(r.c.spec_json.contains(json.dumps(search.spec), autoescape=True))
    q = q.order_by(r.c.created_epoch.desc(), r.c.run_id.desc())
    for run_id, text in conn.execute(q):
        if search.spec is None or spec_name(text) == search.spec:
            return get_run(conn, str(run_id))
    return None


def runs_of_commit(conn: Connection, commit: str) -> list[RunRow]:
    """The runs of the commit `commit` names (the whole hash, or a prefix of at least
    MIN_COMMIT_PREFIX characters), newest first; StoreError when a prefix names several commits."""
    r = schema.runs
    q = select(r.c.run_id, r.c.commit)
    if len(commit) >= MIN_COMMIT_PREFIX:
        q = q.where(or_(r.c.commit == commit, r.c.commit.startswith(commit, autoescape=True)))
    else:
        q = q.where(r.c.commit == commit)
    rows = conn.execute(q.order_by(r.c.created_epoch.desc(), r.c.run_id.desc())).all()
    exact = [x for x in rows if x.commit == commit]
    commits = sorted({str(x.commit) for x in rows})
    if not exact and len(commits) > 1:
        shown = ", ".join(commits[:3]) + (", ..." if len(commits) > 3 else "")
        raise StoreError(f"commit {echo(commit)}: ambiguous prefix ({shown}); pass more of the hash")
    return [get_run(conn, str(x.run_id)) for x in (exact or rows)]


def nearby_runs(conn: Connection, search: RunSearch, limit: int = 4) -> list[RunBrief]:
    """The runs closest to a search that found nothing, newest first within each kind: the same
    branch and spec on another GPU, the same branch and GPU with another spec, the same GPU and
    spec on another branch, then any run of the branch; one run per (branch, GPU, spec)."""
    r = schema.runs
    near = or_(r.c.branch == search.branch, func.lower(r.c.gpu).contains(search.gpu.lower(), autoescape=True))
    q = (select(r.c.run_id, r.c.branch, r.c.gpu, r.c.spec_json, r.c.created_epoch)
         .where(near).order_by(r.c.created_epoch.desc(), r.c.run_id.desc()).limit(_NEARBY_ROWS))
    briefs = [RunBrief(str(x.run_id), x.branch, str(x.gpu), spec_name(x.spec_json), float(x.created_epoch))
              for x in conn.execute(q) if x.run_id != search.exclude]
    return _closest(briefs, search, limit)


def _closest(briefs: Iterable[RunBrief], search: RunSearch, limit: int) -> list[RunBrief]:
    def same_gpu(b: RunBrief) -> bool:
        return search.gpu.lower() in b.gpu.lower()

    def same_spec(b: RunBrief) -> bool:
        return search.spec is None or b.spec == search.spec

    def rank(b: RunBrief) -> int:
        same_branch = b.branch == search.branch
        order = [same_branch and same_spec(b), same_branch and same_gpu(b), same_gpu(b) and same_spec(b)]
        return order.index(True) if True in order else len(order)

    seen: set[tuple[str | None, str, str]] = set()
    out: list[RunBrief] = []
    for b in sorted(briefs, key=lambda b: (rank(b), -b.created_epoch)):
        if (b.branch, b.gpu, b.spec) not in seen:
            seen.add((b.branch, b.gpu, b.spec))
            out.append(b)
    return out[:limit]
