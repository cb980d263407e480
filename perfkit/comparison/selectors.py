"""Resolve what the user names on the command line to runs: a run directory (or run.json),
`BRANCH@GPU` (the latest stored run of that branch on that GPU), or a stored run id (or a
unique prefix of one). A BRANCH@GPU baseline is never the candidate itself."""

from __future__ import annotations

from pathlib import Path

from perfkit.comparison.sides import side_from_run, side_from_store
from perfkit.core.errors import StoreError
from perfkit.core.record import load_run
from perfkit.core.run_layout import RUN_FILE
from perfkit.regression.gate.compare import RunSide
from perfkit.store import read
from perfkit.store.engine import Connection, Engine


def is_run_path(selector: str) -> bool:
    p = Path(selector)
    return (p.is_dir() and (p / RUN_FILE).exists()) or (p.is_file() and p.suffix == ".json")


def resolve(selector: str, engine: Engine | None, exclude: str | None = None) -> RunSide:
    """The run `selector` names; StoreError saying what was tried when nothing matches.

    `exclude`: a run id BRANCH@GPU must not resolve to (the candidate, when resolving its
    baseline): the latest other run of the branch is taken instead.
    """
    path = Path(selector)
    if is_run_path(selector) or path.is_dir():
        return side_from_run(load_run(path), selector)
    if engine is None:
        raise StoreError(f"{selector!r}: not a run directory, and there is no store to look it up in; "
                         "pass a run directory or --db (PERFKIT_DB)")
    with engine.connect() as conn:
        if "@" in selector:
            branch, _, gpu = selector.partition("@")
            if not branch:
                raise StoreError(f"{selector!r}: BRANCH@GPU needs a branch (e.g. main@H100)")
            row = latest_other_run(conn, branch, gpu, exclude)
        else:
            row = read.get_run(conn, selector)
    return side_from_store(engine, row, selector)


def latest_other_run(conn: Connection, branch: str, gpu: str, exclude: str | None) -> read.RunRow:
    """The latest run of `branch` on `gpu` (read.latest_run) that is not `exclude`."""
    row = read.latest_run(conn, branch, gpu)
    if exclude is None or row.run_id != exclude:
        return row
    other = read.latest_run_except(conn, branch, row.gpu, exclude)
    if other is None:
        raise StoreError(f"{branch}@{gpu}: the only stored run of branch {branch!r} on {row.gpu} is the candidate "
                         f"({exclude}); store another run of {branch!r} to compare against")
    return other


def resolve_pair(base_sel: str, cand_sel: str, engine: Engine | None) -> tuple[RunSide, RunSide]:
    """(baseline, candidate): the candidate first, so a BRANCH@GPU baseline is the latest run
    of that branch other than the candidate; StoreError when both name the same run."""
    cand = resolve(cand_sel, engine)
    base = resolve(base_sel, engine, exclude=cand.run_id)
    if base.run_id == cand.run_id:
        raise StoreError(f"{base_sel} and {cand_sel} are the same run ({cand.run_id}); "
                         "compare a candidate with another run")
    return base, cand
