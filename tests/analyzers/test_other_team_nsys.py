"""A real Nsight Systems export of another project (tests/data/nsys/nsys_ai, schema 3.24.14):
every count and total equals plain SQL over the file, and `perfkit analyze` exits 0."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from perfkit.analyzers.event_table import Kind
from perfkit.analyzers.kernel_summary import kernel_summary
from perfkit.analyzers.loaders.nsys.sqlite import load_nsys
from perfkit.analyzers.temporal import temporal_breakdown
from tests.helpers.forked_cli import run_perfkit

REPO = Path(__file__).resolve().parents[2]
EXPORT = REPO / "tests" / "data" / "nsys" / "nsys_ai" / "rtx3080_tiny.sqlite"


def sql(query: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(f"file:{EXPORT}?mode=ro", uri=True) as conn:
        return [tuple(r) for r in conn.execute(query).fetchall()]


def test_every_kernel_copy_and_call_is_read() -> None:
    table = load_nsys(EXPORT)
    kinds = {k: int((table["kind"] == k).sum()) for k in (Kind.KERNEL, Kind.MEMCPY, Kind.RUNTIME)}
    expected = [sql(f"SELECT count(*) FROM CUPTI_ACTIVITY_KIND_{t}")[0][0] for t in ("KERNEL", "MEMCPY", "RUNTIME")]
    assert list(kinds.values()) == expected == [2, 1, 9]
    assert table.meta[0].dropped == () and table.meta[0].devices == ("NVIDIA GeForce RTX 3080",)


def test_kernel_totals_per_name_and_busy_time_equal_sql() -> None:
    table = load_nsys(EXPORT)
    summary = kernel_summary(table)
    got = {(r.name, r.kind): (int(r.count), int(r.total_ns)) for r in summary.itertuples()}
    kernels = sql('SELECT s.value, count(*), sum(k."end" - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k '
                  "JOIN StringIds s ON s.id = k.demangledName GROUP BY s.value")
    copies = sql('SELECT count(*), sum("end" - start), sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY')[0]
    assert {(n, "kernel"): (c, t) for n, c, t in kernels}.items() <= got.items()
    assert got[("Memcpy DtoH (Device -> Pinned)", "memcpy")] == copies[:2]
    assert int(table["bytes"][table["kind"] == Kind.MEMCPY].sum()) == copies[2]
    union = 'SELECT start, "end" FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL SELECT start, "end" FROM CUPTI_ACTIVITY_KIND_MEMCPY'
    spans = sorted(sql(union))
    busy, (lo, hi) = 0, spans[0]
    for s, e in spans[1:]:  # the three ops do not overlap here, but take the union anyway
        if s > hi:
            busy, lo, hi = busy + hi - lo, s, e
        else:
            hi = max(hi, e)
    busy += hi - lo
    [row] = temporal_breakdown(table, per_step=False).itertuples()
    assert (int(row.gpu_ops), int(row.busy_ns), int(row.span_ns)) == (3, busy, max(e for _, e in spans) - spans[0][0])


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["json", "table"])
def test_analyze_exits_0(fmt: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = run_perfkit(["analyze", str(EXPORT), "--format", fmt], Path.cwd(), env)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    if fmt == "json":
        kernels = json.loads(out.stdout)["kernels"]
        assert sum(r["count"] for r in kernels) == 3
