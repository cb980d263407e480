"""Resolve what the user names on the command line to runs: a run directory (or run.json),
`BRANCH@GPU` (the latest stored run of that branch on that GPU of the same spec as the other
side), `BRANCH@GPU:SPEC` (of the spec named SPEC), a stored run id (or a unique prefix of one)
or a commit (the whole hash or a unique prefix). A baseline is never the candidate itself."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from perfkit.comparison.sides import side_from_run, side_from_store
from perfkit.core.errors import StoreError, echo, shorten
from perfkit.core.record import load_run
from perfkit.core.run_layout import RUN_FILE
from perfkit.regression.gate.compare import RunSide
from perfkit.store import read
from perfkit.store.engine import Connection, Engine, describe
from perfkit.store.run_search import RunSearch, find_latest, nearby_runs, runs_of_commit

LIST_HINT = "list runs with `perfkit runs`"


@dataclass(frozen=True)
class Reference:
    """The other side of a comparison (the candidate), which the baseline is resolved against:
    never this run, and of its spec and GPU unless the selector says otherwise."""

    run_id: str
    spec: str
    gpu: str


def reference(side: RunSide) -> Reference:
    return Reference(side.run_id, side.spec, side.gpu)


def is_run_path(selector: str) -> bool:
    p = Path(selector)
    return (p.is_dir() and (p / RUN_FILE).exists()) or (p.is_file() and p.suffix == ".json")


def branch_search(selector: str, ref: Reference | None) -> RunSearch | None:
    """The search BRANCH@GPU[:SPEC] stands for (the reference's spec when SPEC is not given),
    None when `selector` is no BRANCH@GPU."""
    if "@" not in selector:
        return None
    branch, _, rest = selector.partition("@")
    gpu, colon, spec = rest.partition(":")
    if not branch:
        raise StoreError(f"{echo(selector)}: BRANCH@GPU needs a branch (e.g. main@H100)")
    if colon and not spec:
        raise StoreError(f"{echo(selector)}: BRANCH@GPU:SPEC needs a spec name after ':' (e.g. main@H100:kernels)")
    return RunSearch(branch, gpu, spec if colon else (ref.spec if ref else None), ref.run_id if ref else None)


def resolve(selector: str, engine: Engine | None, ref: Reference | None = None) -> RunSide:
    """The run `selector` names; StoreError saying what was searched when nothing matches."""
    path = Path(selector)
    if is_run_path(selector) or path.is_dir():
        return side_from_run(load_run(path), selector, path if path.is_dir() else path.parent)
    if engine is None:
        raise StoreError(f"{echo(selector)}: not a run directory, and there is no store to look it up in; "
                         "pass a run directory or --db (PERFKIT_DB)")
    with engine.connect() as conn:
        search = branch_search(selector, ref)
        if search is not None:
            row = _latest(conn, selector, search, describe(engine))
        else:
            row = read.find_run(conn, selector) or _of_commit(conn, selector, ref, describe(engine))
    return side_from_store(engine, row, selector)


def _latest(conn: Connection, selector: str, search: RunSearch, store: str) -> read.RunRow:
    row = find_latest(conn, search)
    if row is not None:
        return row
    what = f"branch {echo(search.branch)} on a GPU matching {echo(search.gpu)}"
    if search.spec is not None:
        what += f" of spec {search.spec or '(unnamed)'!r}"
    if search.exclude is not None and find_latest(conn, RunSearch(search.branch, search.gpu, search.spec)):
        raise StoreError(f"{shorten(selector)}: the only stored run of {what} is the candidate ({search.exclude}); "
                         f"store another run of {echo(search.branch)} to compare against")
    near = nearby_runs(conn, search)
    closest = f"; closest: {', '.join(b.describe() for b in near)}" if near else "; the store has no run near it"
    raise StoreError(f"{shorten(selector)}: no stored run of {what} in {store}{closest}; {LIST_HINT} "
                     "(BRANCH@GPU:SPEC names another spec)")


def _of_commit(conn: Connection, selector: str, ref: Reference | None, store: str) -> read.RunRow:
    """The run of the commit `selector` names: of the reference's spec and GPU when it has several."""
    rows = runs_of_commit(conn, selector)
    if ref is not None and rows and all(r.run_id == ref.run_id for r in rows):
        raise StoreError(f"commit {echo(selector)}: its only stored run is the candidate ({ref.run_id}); "
                         "name another commit or run")
    if ref is not None:
        rows = [r for r in rows if r.run_id != ref.run_id]
        rows = [r for r in rows if r.spec_name == ref.spec] or rows
        rows = [r for r in rows if r.gpu == ref.gpu] or rows
    if not rows:
        raise StoreError(f"{echo(selector)}: no run directory, stored run id or commit of that name in {store}; "
                         f"{LIST_HINT} or pass a run directory")
    kinds = sorted({(r.spec_name, r.gpu) for r in rows})
    if len(kinds) > 1:
        runs = ", ".join(f"{r.run_id} (spec {r.spec_name or '(unnamed)'!r} on {r.gpu})" for r in rows[:4])
        raise StoreError(f"commit {echo(selector)}: runs of several specs or GPUs ({runs}); pass a run id")
    return rows[0]


def resolve_pair(base_sel: str, cand_sel: str, engine: Engine | None) -> tuple[RunSide, RunSide]:
    """(baseline, candidate): the candidate first, so a BRANCH@GPU or commit baseline is a run of
    the candidate's spec other than the candidate; StoreError when both name the same run."""
    cand = resolve(cand_sel, engine)
    base = resolve(base_sel, engine, reference(cand))
    if base.run_id == cand.run_id:
        raise StoreError(f"{shorten(base_sel)} and {shorten(cand_sel)} are the same run ({cand.run_id}); "
                         "compare a candidate with another run")
    return base, cand


def spec_note(base: RunSide, cand: RunSide) -> str | None:
    """A note when the two runs are of one spec whose content (hash) changed between them."""
    if base.spec != cand.spec or not base.spec_hash or not cand.spec_hash or base.spec_hash == cand.spec_hash:
        return None
    return (f"note: spec {cand.spec or '(unnamed)'!r} changed between the runs (hash {base.spec_hash[:12]} in "
            f"baseline {base.run_id}, {cand.spec_hash[:12]} in candidate {cand.run_id}); points whose settings "
            "differ are incomparable")
