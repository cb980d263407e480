"""Damaged Nsight Systems exports: every column the loader reads, damaged, through `perfkit analyze`.

A tiny export with every table and column the nsys loader reads (tests/helpers/nsys_export.py)
is damaged in one column of a few rows at a time: NULL, text, a real, a negative number, a huge
one (2^63-1), an end before the start, the rows twice. `perfkit analyze` must then either exit 0
with a note that names the table, column and count of what it left out, read as absent or
named as a placeholder, or exit 2 with one line; never a traceback, never a negative total,
never a count doubled. The real exports of ../shared/bench/nsys (skipped when absent) repeat
the cases the hostile-input run found there.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from perfkit.analyzers.loaders.nsys.export import export_report
from perfkit.analyzers.loaders.nsys.sqlite import load_nsys
from perfkit.cli import main
from perfkit.core.errors import TraceError
from tests.helpers.nsys_export import (
    KERNEL,
    MEMCPY,
    MEMSET,
    NVTX,
    RUNTIME,
    SCHEMA,
    damaged_copy,
    write_tiny_export,
)

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "bench" / "nsys"
HUGE = (1 << 63) - 1
DAMAGES: dict[str, Any] = {"null": None, "text": "abc", "real": 1.5, "negative": -7, "huge": HUGE,
                           "not-utf8": "CAST(X'FF61' AS TEXT)"}  # SQL: text whose bytes are not UTF-8
# the rows damaged in each table (NVTX: two ranges; StringIds: two names in use)
ROWS = {KERNEL: "rowid IN (2, 3)", MEMCPY: "rowid IN (2, 3)", MEMSET: "rowid = 2", RUNTIME: "rowid IN (2, 3)",
        NVTX: "rowid IN (2, 3)", "StringIds": "id IN (1, 30)", "TARGET_INFO_GPU": "rowid = 1",
        "META_DATA_EXPORT": "rowid = 1"}
GPU_TABLES = (KERNEL, MEMCPY, MEMSET)
CHECKED = ("kernels", "categories", "temporal", "idle", "ranges", "overlap", "skew")  # no column may be negative
LEFT_OUT, READ_AS, NAMED, WARNED, SILENT = "left out", "fields of odd type", "no name", "warned", ""


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_export(tmp_path_factory.mktemp("nsys") / "clean.sqlite")


_BASE: dict[Path, dict[str, Any]] = {}


def _base(clean: Path) -> dict[str, Any]:
    """What `perfkit analyze --format json` prints for the clean export (once)."""
    if clean not in _BASE:
        import contextlib
        import io

        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            assert main(["analyze", str(clean), "--format", "json"]) == 0
        _BASE[clean] = json.loads(out.getvalue())
    return _BASE[clean]


def _analyze(path: Path, capsys: pytest.CaptureFixture[str], *more: str) -> tuple[int, dict[str, Any], list[str]]:
    capsys.readouterr()
    rc = main(["analyze", str(path), "--format", "json", *more])
    out, err = capsys.readouterr()
    return rc, json.loads(out) if rc == 0 else {}, err.strip().splitlines()


def _no_negative(doc: dict[str, Any]) -> None:
    for name in CHECKED:
        for row in doc.get(name, []):
            for col, value in row.items():
                if isinstance(value, (int, float)) and col not in ("rank", "step", "stream"):
                    assert value >= 0, (name, col, row)


def _kernel_count(doc: dict[str, Any]) -> int:
    return sum(r["count"] for r in doc["kernels"] if r["kind"] == "kernel")


def _expect(table: str, column: str, damage: str) -> tuple[str, str]:
    """(what `perfkit analyze` must say, a text its note holds) for one damaged column."""
    place = {(t, c) for t in GPU_TABLES for c in ("deviceId", "streamId")} | {(RUNTIME, "globalTid"), (NVTX, "globalTid")}
    if column in ("start", "end") and table in (*GPU_TABLES, RUNTIME, NVTX):
        if (table, column, damage) == (NVTX, "end", "null"):
            return LEFT_OUT, f"{NVTX}.end NULL (the range did not end)"
        if damage in ("null", "text", "real"):
            return LEFT_OUT, f"{table}.{column} not an integer"
        if damage == "huge":
            return LEFT_OUT, f"{table}.{column} out of range"
        return (LEFT_OUT, f"{table}.end before start") if column == "end" else (SILENT, "")
    if (table, column) in place:
        if damage in ("null", "text", "real"):
            return LEFT_OUT, f"{table}.{column} not an integer"
        if damage == "huge" and column == "globalTid":  # an integer: a thread of a process with no GPU work
            return LEFT_OUT, "of a process without GPU work"
        return LEFT_OUT, f"{table}.{column} out of range"
    if (table, column) == (NVTX, "eventType"):
        return (LEFT_OUT, f"{NVTX}.eventType not an integer") if damage in ("null", "text", "real") else (SILENT, "")
    if table == "StringIds":
        return (NAMED, "string ids are not in StringIds") if column == "id" or damage == "null" else (SILENT, "")
    if table == "TARGET_INFO_GPU":
        if column == "name" or damage in ("negative", "huge"):
            return SILENT, ""
        return WARNED, "TARGET_INFO_GPU: 1 rows whose id is not an integer are ignored"
    if table == "META_DATA_EXPORT" or (table, column) == (NVTX, "text"):
        return SILENT, ""
    # describing columns: absent when NULL (nameId: counted), read as -1 when unusable
    if damage == "null":
        return (READ_AS, f"{RUNTIME}.nameId: NULL or not an integer") if column == "nameId" else (SILENT, "")
    if damage == "negative" and column == "domainId":
        return SILENT, ""
    if damage == "huge":
        if column in ("demangledName", "nameId") or (table, column) == (NVTX, "textId"):
            return NAMED, "string ids are not in StringIds"
        if column in ("correlationId",) or column in (*_INT32_COLUMNS,):
            return READ_AS, f"{table}.{column}: not an integer"
        return SILENT, ""
    return READ_AS, f"{table}.{column}:"


_INT32_COLUMNS = ("gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ", "registersPerThread", "staticSharedMemory",
                  "dynamicSharedMemory", "copyKind", "srcKind", "dstKind", "memKind")
CASES = [(t, c, d) for t, cols in SCHEMA.items() for c in cols for d in DAMAGES]


def _rows(clean: Path, table: str) -> int:
    with sqlite3.connect(clean) as conn:
        return int(conn.execute(f'SELECT count(*) FROM "{table}" WHERE {ROWS[table]}').fetchone()[0])


def _check(clean: Path, path: Path, capsys: pytest.CaptureFixture[str], table: str, say: str, text: str) -> None:
    base = _base(clean)
    rc, doc, err = _analyze(path, capsys)
    assert not any("Traceback" in line for line in err), err
    assert rc == 0, err
    _no_negative(doc)
    assert _kernel_count(doc) <= _kernel_count(base)
    notes = doc.get("notes", [])
    assert [f"perfkit analyze: {n}" for n in notes] == err  # every note on stderr, one line each
    if say == LEFT_OUT:
        n = _rows(clean, table)
        line = next((x for x in notes if "events left out" in x and text in x), None)
        assert line is not None and f"{text}" in line and f"({n:,})" in line, notes
        assert any("rowid" in x and "left out" in x for x in notes) or "process without" in text, notes
    elif say == READ_AS:
        assert any(READ_AS in x and text in x for x in notes), notes
    elif say in (NAMED, WARNED):
        assert any(text in x for x in notes), notes
    assert not any(r["name"] == "None" for r in doc["kernels"])


@pytest.mark.slow  # the whole matrix (~300 cases, ~20 s) runs in CI; the inner loop keeps the rest
@pytest.mark.parametrize(("table", "column", "damage"), CASES, ids=[f"{t}.{c}-{d}" for t, c, d in CASES])
def test_a_damaged_column_is_left_out_or_read_as_absent_with_a_note(
        clean: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], table: str, column: str, damage: str) -> None:
    path = damaged_copy(clean, tmp_path, "")
    with sqlite3.connect(path) as conn:
        if damage == "not-utf8":
            conn.execute(f'UPDATE "{table}" SET "{column}" = {DAMAGES[damage]} WHERE {ROWS[table]}')
        else:
            conn.execute(f'UPDATE "{table}" SET "{column}" = ? WHERE {ROWS[table]}', (DAMAGES[damage],))
    say, text = _expect(table, column, "text" if damage == "not-utf8" else damage)
    _check(clean, path, capsys, table, say, text)


TIME_TABLES = (*GPU_TABLES, RUNTIME, NVTX)


@pytest.mark.parametrize("table", TIME_TABLES)
def test_an_end_before_its_start_is_left_out_and_counted(
        clean: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], table: str) -> None:
    path = damaged_copy(clean, tmp_path, f'UPDATE "{table}" SET "end" = start - 1000000 WHERE {ROWS[table]};')
    _check(clean, path, capsys, table, LEFT_OUT, f"{table}.end before start")


@pytest.mark.parametrize("table", list(SCHEMA))
def test_rows_given_twice_are_counted_once(
        clean: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], table: str) -> None:
    path = damaged_copy(clean, tmp_path, f'INSERT INTO "{table}" SELECT * FROM "{table}" WHERE {ROWS[table]};')
    base = _base(clean)
    rc, doc, err = _analyze(path, capsys)
    assert rc == 0, err
    _no_negative(doc)
    assert _kernel_count(doc) == _kernel_count(base)
    if table in (*GPU_TABLES, RUNTIME):
        n = _rows(clean, table)
        assert any(f"{table}: a copy of an earlier row (every column read equal) ({n:,})" in x for x in doc["notes"])
        assert doc["kernels"] == base["kernels"]


@pytest.mark.parametrize(("sql", "needle"), [
    (f"UPDATE {KERNEL} SET start = 'abc' WHERE rowid <= 3; UPDATE {KERNEL} SET \"end\" = start - 1 WHERE rowid > 3;",
     "end before start (21), start not an integer (3); first: CUPTI_ACTIVITY_KIND_KERNEL rowid 1: start not an integer"),
    (f"UPDATE {KERNEL} SET deviceId = -1;", "deviceId out of range (24)"),
    (f"UPDATE {KERNEL} SET streamId = NULL;", "streamId not an integer (24)"),
])
def test_an_export_without_one_usable_kernel_is_one_line_exit_2(
        clean: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], sql: str, needle: str) -> None:
    path = damaged_copy(clean, tmp_path, sql)
    rc, _, err = _analyze(path, capsys)
    assert rc == 2 and len(err) == 1, err
    assert str(path) in err[0] and "none of the 24 kernels" in err[0] and needle in err[0], err


def test_huge_times_that_fit_are_refused_once_their_sum_would_not(
        clean: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # each kernel 2^48 ns long (3.3 days: the longest kept); 1,100 of them sum past 2^58 ns
    rows = ", ".join(f"({k * (1 << 48)}, {(k + 1) * (1 << 48)}, 0, 7, {k + 1}, 1)" for k in range(1100))
    path = damaged_copy(clean, tmp_path, f'INSERT INTO {KERNEL} (start, "end", deviceId, streamId, correlationId, '
                                         f"demangledName) VALUES {rows};")
    rc, _, err = _analyze(path, capsys)
    assert rc == 2 and len(err) == 1 and "GPU op durations sum to" in err[0] and "damaged" in err[0], err


def test_kernels_without_any_name_are_named_by_launch_configuration(
        clean: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = damaged_copy(clean, tmp_path, f"UPDATE {KERNEL} SET demangledName = NULL, shortName = 'x', mangledName = -1;")
    rc, doc, _ = _analyze(path, capsys)
    assert rc == 0
    names = [r["name"] for r in doc["kernels"] if r["kind"] == "kernel"]
    assert len(names) == 3 and all(n.startswith("<unnamed kernel: grid 128x1x1, block 256x1x1, ") for n in names)
    assert any("24 kernels have no usable name id" in n for n in doc["notes"])


def test_string_ids_with_no_text_get_one_placeholder_each(
        clean: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = damaged_copy(clean, tmp_path, "UPDATE StringIds SET value = NULL WHERE id IN (1, 4); "
                                     "UPDATE StringIds SET value = '' WHERE id = 7;")
    rc, doc, _ = _analyze(path, capsys)
    assert rc == 0
    names = sorted(r["name"] for r in doc["kernels"] if r["kind"] == "kernel")
    assert names == [f"<no name: string id {i}>" for i in (1, 4, 7)]


def test_a_device_id_of_2_31_is_a_rank_not_an_array_size(
        clean: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    big = (1 << 31) - 1
    path = damaged_copy(clean, tmp_path, f"UPDATE {KERNEL} SET deviceId = {big} WHERE deviceId = 1 AND rowid % 2 = 0; "
                                     f"UPDATE TARGET_INFO_GPU SET id = {big} WHERE id = 1;")
    rc, doc, _ = _analyze(path, capsys)
    assert rc == 0
    assert sorted({r["rank"] for r in doc["temporal"]}) == [0, 1, big]
    _no_negative(doc)


def test_text_in_an_nvtx_range_reads_as_its_text_and_bad_bytes_as_u_fffd(
        clean: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = damaged_copy(clean, tmp_path, f"UPDATE {NVTX} SET text = CAST(X'6465FF636F6465' AS TEXT) WHERE rowid = 1; "
                                     f"UPDATE {NVTX} SET text = 12345 WHERE rowid = 5;")
    rc, doc, _ = _analyze(path, capsys)
    assert rc == 0
    names = {r["name"] for r in doc["ranges"]}
    assert "de\ufffdcode" in names and "12345" in names


def test_the_same_export_twice_is_refused(clean: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "copy.sqlite"
    shutil.copyfile(clean, copy)
    link = tmp_path / "link.sqlite"
    link.symlink_to(clean)
    for pair, needle in (((clean, clean), "the same file as"), ((clean, link), "the same file as"),
                         ((clean, copy), "the same bytes as")):
        capsys.readouterr()
        assert main(["analyze", *map(str, pair)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and needle in err[0] and str(pair[1]) in err[0], err


def test_a_report_beside_its_own_export_is_refused(clean: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "run.nsys-rep"
    report.write_bytes(b"a report")
    shutil.copyfile(clean, tmp_path / "run.sqlite")  # newer than the report: used as its export
    assert main(["analyze", str(report), str(tmp_path / "run.sqlite")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the same file as" in err[0], err


# --- the nsys tool's output that is not UTF-8 --------------------------------------------------


def _fake_nsys(tmp: Path, script: str) -> Path:
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    nsys = bin_dir / "nsys"
    nsys.write_text(f"#!{sys.executable}\nimport sys\n{script}\n")
    nsys.chmod(0o755)
    return bin_dir


def test_nsys_export_failing_with_bytes_that_are_not_utf8_is_one_line(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = _fake_nsys(tmp_path, r"sys.stderr.buffer.write(b'\xff\xfe export failed \x80\n'); sys.exit(1)")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    report = tmp_path / "run.nsys-rep"
    report.write_bytes(b"a report")
    with pytest.raises(TraceError) as err:
        export_report(report)
    assert "export failed" in str(err.value) and "\ufffd" in str(err.value) and "\n" not in str(err.value)


def test_doctor_reads_a_version_that_is_not_utf8(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from perfkit.profiler.doctor.gpu_readings import read_tool

    bin_dir = _fake_nsys(tmp_path, r"sys.stdout.buffer.write(b'NVIDIA Nsight Systems version 2026.2.1 \xff\xfe\n')")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    reading = read_tool("nsys")
    assert reading.error is None and reading.version == "nsys 2026.2.1"


# --- the real exports ---------------------------------------------------------------------------


def _real(name: str, tmp: Path, sql: str, table: str | None = None) -> Path:
    src = SHARED / name
    if not src.is_file():
        pytest.skip(f"{src} is absent")
    out = tmp / name
    shutil.copyfile(src, out)
    out.chmod(0o644)
    with sqlite3.connect(out) as conn:
        if table:  # the same table without nsys's NOT NULL constraints, so NULL can be written
            conn.executescript(f"ALTER TABLE {table} RENAME TO _t; CREATE TABLE {table} AS SELECT * FROM _t; DROP TABLE _t;")
        conn.executescript(sql)
    return out


def _perfkit(args: list[str], cwd: Path, limit_bytes: int | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}

    def limit() -> None:
        if limit_bytes is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    return subprocess.run([sys.executable, "-m", "perfkit", *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=300, check=False, preexec_fn=limit)


def _sql(path: Path, query: str) -> Any:
    with sqlite3.connect(path) as conn:
        return conn.execute(query).fetchone()


@pytest.mark.slow
def test_real_export_kernels_ending_before_they_start_leave_the_totals_true(tmp_path: Path) -> None:
    path = _real("h100_2gpu_1s.sqlite", tmp_path, f'UPDATE {KERNEL} SET "end" = start - 1000000000 WHERE rowid % 5 = 0;')
    proc = _perfkit(["analyze", str(path), "--format", "json", "--only", "kernels,temporal"], tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    n, total = _sql(path, f'SELECT count(*), sum("end" - start) FROM {KERNEL} WHERE "end" >= start')
    dropped = _sql(path, f'SELECT count(*) FROM {KERNEL} WHERE "end" < start')[0]
    assert dropped == 688
    assert f"{KERNEL}.end before start ({dropped:,})" in proc.stderr
    kernels = [r for r in doc["kernels"] if r["kind"] == "kernel"]
    assert (sum(r["count"] for r in kernels), sum(r["total_ns"] for r in kernels)) == (n, total)
    _no_negative(doc)


@pytest.mark.slow
def test_real_export_names_with_no_text_are_never_one_row_none(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _real("h100_2gpu_1s.sqlite", tmp_path, "UPDATE StringIds SET value = NULL;", "StringIds")
    rc, doc, _ = _analyze(path, capsys, "--only", "kernels")
    assert rc == 0
    kernels = [r for r in doc["kernels"] if r["kind"] == "kernel"]
    distinct = _sql(path, f"SELECT count(DISTINCT demangledName) FROM {KERNEL}")[0]
    assert len(kernels) == distinct > 1 and all(r["name"].startswith("<no name: string id ") for r in kernels)
    assert sum(r["count"] for r in kernels) == 3442


@pytest.mark.slow
def test_real_export_a_device_id_of_2_31_needs_no_32_gib(tmp_path: Path) -> None:
    path = _real("h100_2gpu_1s.sqlite", tmp_path, f"UPDATE {KERNEL} SET deviceId = 2147483647 WHERE rowid = 3;")
    proc = _perfkit(["analyze", str(path), "--format", "csv", "--only", "kernels,temporal,launch"], tmp_path,
                    limit_bytes=6 << 30)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "2147483647" in proc.stdout


@pytest.mark.slow
def test_real_export_text_in_integer_columns_is_no_traceback(tmp_path: Path) -> None:
    sql = (f"UPDATE {NVTX} SET globalTid = 'abc' WHERE rowid = 7; UPDATE {NVTX} SET domainId = 'abc' WHERE rowid = 9; "
           f"UPDATE {NVTX} SET start = 'x' WHERE rowid = 11; UPDATE {RUNTIME} SET globalTid = 'abc' WHERE rowid = 5; "
           "CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT); "
           "INSERT INTO TARGET_INFO_GPU VALUES ('abc', 'H100'), (0, 'H100'), (1, 'H100');")
    path = _real("mfu_2gpu_before.sqlite", tmp_path, sql)
    proc = _perfkit(["analyze", str(path), "--format", "csv", "--only", "kernels,ranges"], tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    for needle in (f"{NVTX}.globalTid not an integer (1)", f"{NVTX}.start not an integer (1)",
                   f"{RUNTIME}.globalTid not an integer (1)", f"{NVTX}.domainId: not an integer",
                   "TARGET_INFO_GPU: 1 rows whose id is not an integer are ignored"):
        assert needle in proc.stderr, (needle, proc.stderr)


@pytest.mark.slow
def test_real_export_given_twice_is_one_line_exit_2(tmp_path: Path) -> None:
    path = _real("mfu_2gpu_before.sqlite", tmp_path, "")
    proc = _perfkit(["analyze", str(path), str(path)], tmp_path)
    err = proc.stderr.strip()
    assert proc.returncode == 2 and len(err.splitlines()) == 1 and "the same file as" in err, err


def test_a_clean_export_says_nothing(clean: Path) -> None:
    meta = load_nsys(clean).meta[0]
    assert (meta.dropped, meta.coerced, meta.warnings) == ((), (), ())
    assert meta.events_read == meta.events_kept == 24 + 4 + 2 + 32 + 6



@pytest.mark.parametrize("name", ["tiny", "tiny, unfinished ranges",
                                  pytest.param("mfu_2gpu_before.sqlite", marks=pytest.mark.slow)])
def test_the_row_by_row_checks_read_a_clean_export_as_the_fast_path_does(
        clean: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    from perfkit.analyzers.loaders.nsys import checks

    path = clean if name == "tiny" else SHARED / name
    if name == "tiny, unfinished ranges":  # fast: read unfiltered but for `end IS NOT NULL`
        path = damaged_copy(clean, tmp_path, f'UPDATE {NVTX} SET "end" = NULL WHERE rowid IN (2, 6);')
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    from perfkit.analyzers.loaders.nsys import trusted

    fast = load_nsys(path)  # the trusted read (unfinished ranges: the checked read after its first chunk)

    def damaged(check: checks.TableCheck, raw: object) -> None:
        raise trusted.Damaged(check.table)

    monkeypatch.setattr(trusted, "verify", damaged)  # every export read the checked way
    scanned = load_nsys(path)
    monkeypatch.setattr(checks._Health, "clean", lambda self, found: False)  # every table counted row by row
    slow = load_nsys(path)
    for other in (scanned, slow):
        assert fast.names == other.names and fast.meta == other.meta
        for k, v in fast.columns.items():
            assert (v == other.columns[k]).all() and v.dtype == other.columns[k].dtype, k
        assert fast.extra.keys() == other.extra.keys() and all((fast.extra[k] == other.extra[k]).all() for k in fast.extra)
    if name == "tiny, unfinished ranges":
        assert dict(fast.meta[0].dropped) == {f"{NVTX}.end NULL (the range did not end)": 2}
