"""A `perfkit serve-bench` run that measured the server, not the client.

A loaded test machine (CI runs the suite on every core) can delay the client's own event loop
enough that a stage is client-bound: INVALID, and compare / gate rightly answer "cannot tell".
A test about verdicts needs a run that measured the server, so a client-bound bench is benched
again (up to `tries` times) and the test is skipped when the client never keeps up. Only the
run that measured the server is stored (`perfkit ingest`) and kept on disk: the store's history
and the dashboard's baselines see the runs the test is about, nothing else.
"""

from __future__ import annotations

import contextlib
import io
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from perfkit.cli import main
from perfkit.core.record import load_run


def client_bound(run_dir: Path) -> list[str]:
    """The keys of the run's client-bound stages (none: every stage measured the server)."""
    return [p.key for p in load_run(run_dir).points if p.metrics.get("client_bound")]


def measured_bench(url: str, out: Path, db: str, args: Sequence[str], tries: int = 3) -> Path:
    """Bench `url` into `out` until no stage is client-bound; store that run in `db`."""
    scratch = f"sqlite:///{out.parent / (out.name + '-attempts.db')}"
    bound: list[str] = []
    for _ in range(tries):
        before = set(out.glob("*"))
        said = io.StringIO()
        with contextlib.redirect_stdout(said):
            assert main(["serve-bench", url, "--out", str(out), "--db", scratch, *args]) == 0, said.getvalue()
        (new,) = set(out.glob("*")) - before
        bound = client_bound(new)
        if not bound:
            with contextlib.redirect_stdout(said):
                assert main(["ingest", str(new), "--db", db]) == 0, said.getvalue()
            return new
        shutil.rmtree(new)
    pytest.skip(f"every bench was client-bound ({', '.join(bound)}): this machine is too loaded to measure the server")
