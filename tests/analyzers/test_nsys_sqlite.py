"""Nsight Systems SQLite exports (../shared/bench/nsys): every number checked against raw SQL.

The two exports are real 2-GPU H100 runs (Nsight Systems 2026.2, export schema 3.25; see the
folder's PROVENANCE.md). Each expected value below is computed in the test with plain SQL over
the export, independently of perfkit's loader.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from perfkit.analyzers.event_table import EventTable, Kind, concat_tables
from perfkit.analyzers.kernel_summary import kernel_summary
from perfkit.analyzers.launch import launch_summary
from perfkit.analyzers.loaders.nsys.sqlite import load_nsys
from perfkit.analyzers.loaders.trace_files import load_trace_files
from perfkit.analyzers.ranges import range_instances, range_projection
from perfkit.analyzers.suite import run_analyses
from perfkit.analyzers.temporal import temporal_breakdown
from tests.helpers.forked_cli import Result, cli_env, run_perfkit

REPO = Path(__file__).resolve().parents[2]
NSYS = REPO.parent / "shared" / "bench" / "nsys"
EXPORTS = ("h100_2gpu_1s.sqlite", "mfu_2gpu_before.sqlite")
GPU_TABLES = {"kernel": "CUPTI_ACTIVITY_KIND_KERNEL", "memcpy": "CUPTI_ACTIVITY_KIND_MEMCPY",
              "memset": "CUPTI_ACTIVITY_KIND_MEMSET"}
KIND = {"kernel": Kind.KERNEL, "memcpy": Kind.MEMCPY, "memset": Kind.MEMSET}
# a range name (as perfkit spells it) and its SQL filter, per export, for the projection check
RANGE_CHECK = {
    "h100_2gpu_1s.sqlite": ("FSDP::pre_forward", "n.text LIKE 'FSDP::pre_forward%'"),
    "mfu_2gpu_before.sqlite": ("domain 1:ncclGroupEnd", "n.domainId = 1 AND s.value = 'ncclGroupEnd'"),
}


def _path(name: str) -> Path:
    path = NSYS / name
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return path


@pytest.fixture(scope="module", params=EXPORTS)
def export(request: pytest.FixtureRequest) -> Iterator[tuple[str, EventTable, sqlite3.Connection]]:
    path = _path(request.param)
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    yield request.param, load_nsys(path), conn
    conn.close()


def _sql(conn: sqlite3.Connection, query: str) -> list[tuple[int, ...]]:
    return [tuple(r) for r in conn.execute(query).fetchall()]


def test_gpu_work_per_device_equals_raw_sql(export: tuple[str, EventTable, sqlite3.Connection]) -> None:
    _, table, conn = export
    for kind, sql_table in GPU_TABLES.items():
        expected = _sql(conn, f'SELECT deviceId, count(*), sum("end" - start), sum({"bytes" if kind != "kernel" else 0}) '
                              f"FROM {sql_table} GROUP BY deviceId ORDER BY deviceId")
        rows = table.mask_kind(KIND[kind])
        got = []
        for dev in np.unique(table["device"][rows]):
            sel = rows & (table["device"] == dev)
            nbytes = int(table["bytes"][sel].sum()) if kind != "kernel" else 0
            got.append((int(dev), int(sel.sum()), int(table["dur_ns"][sel].sum()), nbytes))
        assert got == expected, kind
        assert expected and expected[0][1] > 0, kind  # both exports hold all three kinds


def test_kernel_table_totals_and_names_equal_raw_sql(export: tuple[str, EventTable, sqlite3.Connection]) -> None:
    _, table, conn = export
    summary = kernel_summary(table, by_rank=True)
    kernels = summary[summary["kind"] == "kernel"]
    expected = _sql(conn, 'SELECT deviceId, count(*), sum("end" - start) FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY deviceId')
    got = kernels.groupby("rank").agg(n=("count", "sum"), t=("total_ns", "sum"))
    assert [(int(r), int(v.n), int(v.t)) for r, v in got.iterrows()] == expected
    names = {r[0] for r in _sql(conn, "SELECT DISTINCT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                                      "JOIN StringIds s ON s.id = k.demangledName")}
    assert set(kernels["name"]) == names
    # launch configuration: the most frequent (grid, block) of the longest kernel, as SQL counts it
    top = kernels.sort_values("total_ns", ascending=False).iloc[0]
    mode = _sql(conn, "SELECT gridX, gridY, gridZ, blockX, blockY, blockZ, registersPerThread, "
                      'staticSharedMemory + dynamicSharedMemory, count(*) AS n FROM CUPTI_ACTIVITY_KIND_KERNEL k '
                      f"JOIN StringIds s ON s.id = k.demangledName WHERE s.value = ? AND k.deviceId = {int(top['rank'])} "
                      "GROUP BY 1, 2, 3, 4, 5, 6, 7, 8 ORDER BY n DESC LIMIT 1".replace("?", "'" + top["name"].replace("'", "''") + "'"))[0]
    assert top["grid"] == "x".join(map(str, mode[0:3])) and top["block"] == "x".join(map(str, mode[3:6]))
    assert (int(top["registers"]), int(top["shared_bytes"])) == (mode[6], mode[7])


def test_temporal_counts_every_gpu_op(export: tuple[str, EventTable, sqlite3.Connection]) -> None:
    _, table, conn = export
    union = " UNION ALL ".join(f'SELECT deviceId, start, "end" FROM {t}' for t in GPU_TABLES.values())
    expected = _sql(conn, f'SELECT deviceId, count(*), min(start), max("end") FROM ({union}) GROUP BY deviceId')
    temporal = temporal_breakdown(table, per_step=False)
    got = [(int(r.rank), int(r.gpu_ops), int(r.span_ns)) for r in temporal.itertuples()]
    assert got == [(d, n, end - start) for d, n, start, end in expected]


@pytest.mark.slow
def test_launch_statistics_cover_ops_with_a_runtime_call(export: tuple[str, EventTable, sqlite3.Connection]) -> None:
    _, table, conn = export
    union = " UNION ALL ".join(f"SELECT deviceId, correlationId, globalPid FROM {t}" for t in GPU_TABLES.values())
    expected = _sql(conn, f"SELECT g.deviceId, count(*) FROM ({union}) g WHERE EXISTS (SELECT 1 FROM "
                          "CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.correlationId = g.correlationId "
                          "AND (r.globalTid & ~16777215) = g.globalPid) GROUP BY g.deviceId")
    launch = launch_summary(table)
    assert [(int(r.rank), int(r.linked_ops)) for r in launch.itertuples()] == expected
    assert all(n > 100 for _, n in expected)
    calls = _sql(conn, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME")[0][0]
    assert int(table.mask_kind(Kind.RUNTIME).sum()) == calls  # every call's process drove a GPU


def test_nvtx_ranges_project_onto_the_gpu(export: tuple[str, EventTable, sqlite3.Connection]) -> None:
    name, table, conn = export
    finished = _sql(conn, 'SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60) AND "end" IS NOT NULL')[0][0]
    assert int(table.mask_kind(Kind.USER_ANNOTATION).sum()) == finished > 1000
    ranges = range_projection(table)
    assert (ranges["gpu_time_ns"] > 0).sum() > 10
    prefix, where = RANGE_CHECK[name]
    union = " UNION ALL ".join(f'SELECT correlationId, globalPid, start, "end" FROM {t}' for t in GPU_TABLES.values())
    expected = _sql(conn, f'SELECT count(*), sum(g."end" - g.start) FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId '
                          "JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.globalTid = n.globalTid AND r.start >= n.start "
                          f'AND r.start < n."end" JOIN ({union}) g ON g.correlationId = r.correlationId '
                          f"AND g.globalPid = (r.globalTid & ~16777215) WHERE n.eventType IN (59, 60) AND {where}")[0]
    inst = range_instances(table)
    mine = inst[inst["name"].str.startswith(prefix)]
    assert (int(mine["gpu_ops"].sum()), int(mine["gpu_time_ns"].sum())) == expected
    assert expected[0] > 0


def test_every_table_runs_and_ranks_are_the_gpus(export: tuple[str, EventTable, sqlite3.Connection]) -> None:
    _, table, _ = export
    tables = run_analyses(table)
    assert list(tables["overlap"]["rank"]) == [0, 1] and list(tables["skew"]["rank"]) == [0, 1]
    assert list(tables["idle"]["rank"]) == [0, 1]
    meta = table.meta[0]
    assert meta.source == "nsys" and meta.world_size == 2 and meta.events_kept == len(table)


def test_two_exports_are_numbered_one_after_another() -> None:
    a, b = _path(EXPORTS[0]), _path(EXPORTS[1])
    table = load_trace_files([a, b])
    assert table.ranks == [0, 1, 2, 3]
    kernels = table.mask_kind(Kind.KERNEL)
    assert int(kernels.sum()) == 3442 + 4010
    kernel_rows = np.flatnonzero(kernels)
    assert (table.extra_rows == kernel_rows).all()  # launch configuration: one value per kernel
    assert (table.extra_at("block_x", kernel_rows) > 0).all()
    assert (table.extra_at("block_x", np.flatnonzero(~kernels)) == -1).all()


def test_extra_columns_survive_concat_with_a_kineto_table(cpu_trace: Path) -> None:
    from perfkit.analyzers.loaders.kineto.load import load_trace

    nsys = load_nsys(_path(EXPORTS[0]))
    kineto = load_trace(cpu_trace)
    both = concat_tables([kineto, nsys])
    rows = np.arange(len(both))
    registers = both.extra_at("registers", rows)
    assert (registers[: len(kineto)] == -1).all()
    assert (registers[len(kineto):] == nsys.extra_at("registers", np.arange(len(nsys)))).all()
    assert (registers[len(kineto):] > 0).sum() == 3442
    # take keeps each kept row's values, in the new order
    pick = np.asarray([len(kineto) + 5, 0, len(kineto) + 1])
    part = both.take(pick)
    assert list(part.extra_at("registers", np.arange(3))) == [registers[pick[0]], -1, registers[pick[2]]]
    assert list(part.extra_rows) == [0, 2]
    mask = both.take(both.mask_kind(Kind.KERNEL))
    assert len(mask.extra_rows) == len(mask) == 3442


# --- bad exports: exit 2, one line, no traceback -------------------------------------------------


def _perfkit(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> Result:
    """`python -m perfkit ARGS` in `cwd` (a process forked from the test process's fork server)."""
    return run_perfkit(args, cwd, {**cli_env(), **(env or {})}, timeout_s=120)


def _copy(tmp: Path, sql: str) -> Path:
    out = tmp / "changed.sqlite"
    shutil.copyfile(_path(EXPORTS[0]), out)
    out.chmod(0o644)
    with sqlite3.connect(out) as conn:
        conn.executescript(sql)
    return out


def _truncated(tmp: Path) -> Path:
    data = _path(EXPORTS[0]).read_bytes()
    out = tmp / "truncated.sqlite"
    out.write_bytes(data[: len(data) // 2])
    return out


def _kineto_renamed(tmp: Path) -> Path:
    out = tmp / "kineto.sqlite"
    out.write_text('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2}]}')
    return out


def _not_sqlite(tmp: Path) -> Path:
    out = tmp / "random.sqlite"
    out.write_bytes(bytes(range(256)) * 8)
    return out


BAD = {
    "not-sqlite": (_not_sqlite, "not an SQLite database"),
    "kineto-renamed": (_kineto_renamed, "not an SQLite database"),
    "truncated": (_truncated, "cannot be read as SQLite"),
    "no-stringids": (lambda t: _copy(t, "DROP TABLE StringIds;"), "table StringIds is missing"),
    "no-kernels": (lambda t: _copy(t, "DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL;"), "no CUDA kernels"),
    "no-kernel-table": (lambda t: _copy(t, "DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL;"), "no CUDA kernels"),
    "no-stream-column": (lambda t: _copy(t, "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN streamId;"),
                         "lacks column(s) streamId"),
    "no-usable-kernel": (lambda t: _copy(t, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET \"end\" = start - 1;"),
                         "none of the 3,442 kernels of CUPTI_ACTIVITY_KIND_KERNEL is usable: end before start (3,442)"),
    "not-nsys": (lambda t: _copy(t, "".join(f"DROP TABLE {n};" for n in ("StringIds", "META_DATA_EXPORT",
                                                                          "CUPTI_ACTIVITY_KIND_KERNEL"))),
                 "not an Nsight Systems export"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(BAD))
def test_bad_export_is_one_line_exit_2(tmp_path: Path, case: str) -> None:
    make, needle = BAD[case]
    path = make(tmp_path)
    proc = _perfkit(["analyze", str(path)], tmp_path)
    err = proc.stderr.strip()
    assert proc.returncode == 2, (proc.returncode, err[-2000:])
    assert "Traceback" not in err and len(err.splitlines()) == 1, err[-2000:]
    assert needle in err and str(path) in err


def test_nvtx_range_with_a_text_end_is_left_out_and_counted(tmp_path: Path) -> None:
    clean = load_nsys(_path(EXPORTS[0]))
    path = _copy(tmp_path, "UPDATE NVTX_EVENTS SET \"end\" = 'zz' WHERE rowid = (SELECT min(rowid) FROM NVTX_EVENTS "
                           "WHERE eventType IN (59, 60) AND \"end\" IS NOT NULL);")
    table = load_nsys(path)
    ranges = int(table.mask_kind(Kind.USER_ANNOTATION).sum())
    assert ranges == int(clean.mask_kind(Kind.USER_ANNOTATION).sum()) - 1  # left out, not a negative duration
    assert int(table["dur_ns"].min()) >= 0
    assert dict(table.meta[0].dropped)["NVTX_EVENTS.end not an integer"] == 1


def test_optional_columns_missing_still_load(tmp_path: Path) -> None:
    path = _copy(tmp_path, "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN gridX; "
                           "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN demangledName; DROP TABLE NVTX_EVENTS;")
    table = load_nsys(path)
    assert int(table.mask_kind(Kind.KERNEL).sum()) == 3442
    assert (table.extra["grid_x"] == -1).all() and int(table.mask_kind(Kind.USER_ANNOTATION).sum()) == 0
    assert "elementwise_kernel" in table.names  # shortName when demangledName is absent


@pytest.mark.slow
def test_nsys_rep_without_nsys_is_one_line_and_a_fresh_export_beside_it_is_used(tmp_path: Path) -> None:
    report = tmp_path / "run.nsys-rep"
    report.write_bytes(b"not a real report")
    proc = _perfkit(["analyze", str(report)], tmp_path, env={"PATH": os.path.dirname(sys.executable),
                                                             "CUDA_HOME": str(tmp_path)})
    assert proc.returncode == 2 and "nsys is not on PATH" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    shutil.copyfile(_path(EXPORTS[1]), tmp_path / "run.sqlite")  # newer than the report: used as it is
    table = load_trace_files([report])
    assert int(table.mask_kind(Kind.KERNEL).sum()) == 4010


@pytest.mark.slow
def test_analyze_vs_diffs_two_exports(tmp_path: Path) -> None:
    a, b = _path(EXPORTS[0]), _path(EXPORTS[1])
    proc = _perfkit(["analyze", str(b), "--vs", str(a), "--format", "csv"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    totals = proc.stdout.split("# diff\n")[0]
    all_line = next(line for line in totals.splitlines() if line.startswith("all,"))
    union = " UNION ALL ".join(f'SELECT "end" - start AS d FROM {t}' for t in GPU_TABLES.values())
    total = {}
    for name, path in (("a", a), ("b", b)):
        with sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True) as conn:
            total[name] = conn.execute(f"SELECT sum(d) FROM ({union})").fetchone()[0]
    fields = all_line.split(",")
    assert (int(fields[2]), int(fields[3])) == (total["a"], total["b"])


def test_a_process_driving_two_gpus_projects_its_ranges_onto_both(tmp_path: Path) -> None:
    # every kernel moved into the first process: it now drives GPUs 0 and 1, the other process none
    path = _copy(tmp_path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = (SELECT min(globalPid) FROM "
                           "CUPTI_ACTIVITY_KIND_KERNEL); DROP TABLE CUPTI_ACTIVITY_KIND_MEMCPY; "
                           "DROP TABLE CUPTI_ACTIVITY_KIND_MEMSET;")
    with sqlite3.connect(path) as conn:
        pid = conn.execute("SELECT min(globalPid) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
        own, other = (conn.execute("SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60) AND "
                                   f"(globalTid & ~16777215) {op} {pid}").fetchone()[0] for op in ("=", "!="))
    table = load_nsys(path)
    ranges = table.mask_kind(Kind.USER_ANNOTATION)
    assert int(ranges.sum()) == 2 * own and own > 0
    assert sorted(np.unique(table["rank"][ranges]).tolist()) == [0, 1]
    meta = table.meta[0]
    assert dict(meta.dropped)["NVTX range of a process without GPU work"] == other > 0
    assert any("several GPUs" in w for w in meta.warnings)
    assert not range_projection(table).empty
