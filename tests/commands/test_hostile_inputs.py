"""Hostile inputs through the real CLI: each ends with exit 2 and one short line, never a traceback.

Every case runs `python -m perfkit ...` as its own process (the user's view), forked from one
interpreter that imported the CLI (tests/helpers/forked_cli.py); the store and perfkit home are
the suite's temporary ones (tests/conftest.py).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.forked_cli import ForkedCli, Result

REPO = Path(__file__).resolve().parents[2]
TRACE = REPO.parent / "shared" / "bench" / "traces" / "hta_ns_resolution_v100.json.gz"
ASV = REPO / "tests" / "data" / "asv" / "asv_example_results" / "results"
GEMM = "name: t\ndevice: cpu\nworkloads:\n  - kind: gemm\n    m: 8\n    n: 8\n    k: 8\n"


def _write(name: str, text: str) -> Callable[[Path], str]:
    def make(tmp: Path) -> str:
        (tmp / name).write_text(text)
        return str(tmp / name)
    return make


def _alias_bomb() -> str:
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    return "\n".join(lines) + "\nname: t\nworkloads: []\n"


def _a_file(tmp: Path) -> str:
    (tmp / "a-file").write_text("")
    return str(tmp / "a-file")


def _spec(tmp: Path) -> str:
    return _write("ok.yaml", GEMM)(tmp)


def _db(kind: str) -> Callable[[Path], str]:
    def make(tmp: Path) -> str:
        path = tmp / f"{kind}.db"
        if kind == "text":
            path.write_text("not a database at all\n")
        elif kind == "random":
            path.write_bytes(bytes(range(256)) * 20)
        elif kind == "truncated":
            path.write_bytes(b"SQLite format 3\x00" + b"\x00" * 50)
        elif kind == "directory":
            path.mkdir()
        return f"sqlite:///{path}"
    return make


# (id, argv builder, substring the one line must hold)
CASES: list[tuple[str, Callable[[Path], list[str]], str]] = [
    ("spec-duplicate-key", lambda t: ["profile", _write("d.yaml", GEMM + "name: u\n")(t)], "given twice"),
    ("spec-alias-bomb", lambda t: ["profile", _write("b.yaml", _alias_bomb())(t)], "aliases are expanded"),
    ("spec-deep-nesting", lambda t: ["profile", _write("n.yaml", "a: " + "[" * 3000 + "]" * 3000 + "\n")(t)],
     "deep"),
    ("spec-repeated-sweep-value", lambda t: ["profile", _write("r.yaml", GEMM.replace("m: 8", "m: [8, 8]"))(t)],
     "listed twice"),
    ("spec-huge-range", lambda t: ["profile", _write("h.yaml", GEMM.replace(
        "m: 8", "m: {start: 1, stop: 1000000000000, step: 1}"))(t)], "limit 10000"),
    ("spec-missing", lambda t: ["profile", str(t / "nope.yaml")], "file not found"),
    ("spec-is-a-directory", lambda t: ["profile", str(t)], "cannot read"),
    ("spec-binary", lambda t: ["profile", _write("bin.yaml", "\x00\x01\x02")(t)], "YAML"),
    ("profile-out-is-a-file", lambda t: ["profile", _spec(t), "--out", _a_file(t), "--quiet"], "pass a directory"),
    ("profile-bad-device", lambda t: ["profile", _spec(t), "--device", "tpu"], "invalid choice"),
    ("unknown-command", lambda t: ["frobnicate"], "invalid choice"),
    ("unknown-option", lambda t: ["history", "--top", "-5"], "unrecognized arguments"),
    ("analyze-bad-regex", lambda t: ["analyze", str(TRACE), "--range", "("], "not a regular expression"),
    ("analyze-negative-top", lambda t: ["analyze", str(TRACE), "--top", "-5"], "below 0"),
    ("analyze-top-not-int", lambda t: ["analyze", str(TRACE), "--top", "many"], "not an integer"),
    ("analyze-missing-trace", lambda t: ["analyze", str(t / "none.json")], "check the path"),
    ("analyze-not-json", lambda t: ["analyze", _write("x.json", "# hello")(t)], "not JSON"),
    ("report-not-a-run", lambda t: ["report", _a_file(t)], ""),
    ("ab-too-few-rounds", lambda t: ["ab", "--rounds", "1", "true", "true"], "below 3"),
    ("gate-no-selectors", lambda t: ["gate"], "required"),
    ("calibrate-zero-threads", lambda t: ["calibrate", "--threads", "0"], "below 1"),
    ("dashboard-bad-port", lambda t: ["dashboard", "--port", "-1"], "below 1"),
    ("store-text-file", lambda t: ["compare", "main", "x", "--db", _db("text")(t)], "not a SQLite database"),
    ("store-random-bytes", lambda t: ["history", "gemm*", "--db", _db("random")(t)], "not a SQLite database"),
    ("store-truncated", lambda t: ["compare", "main", "x", "--db", _db("truncated")(t)], "failed"),
    ("store-is-directory", lambda t: ["gate", "--baseline", "main", "--candidate", "x", "--db",
                                      _db("directory")(t)], "is a directory"),
    ("ingest-into-text-file", lambda t: ["ingest", _a_file(t), "--db", _db("text")(t)], ""),
]


def _gz(name: str, data: bytes) -> Callable[[Path], str]:
    def make(tmp: Path) -> str:
        (tmp / name).write_bytes(data)
        return str(tmp / name)
    return make


def _csv(body: str) -> Callable[[Path], str]:
    return _write("data.csv", "commit,metric,value,unit,direction,gpu,timestamp\n" + body)


def _store_with(tmp: Path, sql: str) -> str:
    """A real perfkit store (schema current) altered by `sql`."""
    from perfkit.store.api import open_store

    path = tmp / "altered.db"
    engine = open_store(str(path))
    with engine.begin() as conn:
        conn.exec_driver_sql(sql)
    engine.dispose()
    return str(path)


def _run_dir(tmp: Path, record: str | None, name: str = "run.json") -> str:
    run = tmp / "20260101-000000-abcdef"
    run.mkdir()
    if record is not None:
        (run / name).write_text(record)
    return str(run)


def _bad_policy(text: str) -> Callable[[Path], str]:
    return _write("policy.yaml", text)


SPEC_CASES: list[tuple[str, Callable[[Path], list[str]], str]] = [
    ("spec-empty-file", lambda t: ["profile", _write("e.yaml", "")(t)], ""),
    ("spec-a-scalar", lambda t: ["profile", _write("s.yaml", "hello\n")(t)], ""),
    ("spec-a-list", lambda t: ["profile", _write("l.yaml", "- 1\n- 2\n")(t)], ""),
    ("spec-workloads-not-a-list", lambda t: ["profile", _write("w.yaml", "name: t\nworkloads: 5\n")(t)], "workloads"),
    ("spec-unknown-kind", lambda t: ["profile", _write("k.yaml", GEMM.replace("kind: gemm", "kind: fft"))(t)], "fft"),
    ("spec-negative-size", lambda t: ["profile", _write("n.yaml", GEMM.replace("m: 8", "m: -8"))(t)], "m"),
    ("spec-zero-size", lambda t: ["profile", _write("z.yaml", GEMM.replace("m: 8", "m: 0"))(t)], "m"),
    ("spec-size-is-text", lambda t: ["profile", _write("x.yaml", GEMM.replace("m: 8", "m: abc"))(t)], "m"),
    ("spec-size-overflows", lambda t: ["profile", _write("o.yaml", GEMM.replace("m: 8", "m: 1e400"))(t)], "m"),
    ("spec-unknown-dtype", lambda t: ["profile", _write("d.yaml", GEMM + "    dtypes: [fp7]\n")(t)], "fp7"),
    ("spec-unknown-top-key", lambda t: ["profile", _write("u.yaml", GEMM + "colour: blue\n")(t)], "colour"),
    ("spec-unknown-timing-key", lambda t: ["profile", _write("tk.yaml", GEMM + "timing: {budget: 1}\n")(t)],
     "budget"),
    ("spec-negative-budget", lambda t: ["profile", _write("b.yaml", GEMM + "timing: {budget_s: -1}\n")(t)],
     "budget_s"),
    ("spec-tab-indent", lambda t: ["profile", _write("tab.yaml", "name: t\nworkloads:\n\t- kind: gemm\n")(t)],
     "YAML"),
    ("spec-not-utf8", lambda t: ["profile", _gz("l1.yaml", b"name: caf\xe9\nworkloads: []\n")(t)], ""),
    ("spec-too-many-points", lambda t: ["profile", _write("p.yaml", GEMM.replace(
        "m: 8", "m: {start: 1, stop: 400, step: 1}").replace("n: 8", "n: {start: 1, stop: 400, step: 1}"))(t)], "limit"),
    ("profile-out-unwritable", lambda t: ["profile", _spec(t), "--out", "/proc/perfkit-runs", "--quiet"], ""),
    ("profile-quick-and-bad-db", lambda t: ["profile", _spec(t), "--quick", "--quiet", "--db", _db("text")(t)],
     "not a SQLite database"),
]

TRACE_CASES: list[tuple[str, Callable[[Path], list[str]], str]] = [
    ("trace-empty-file", lambda t: ["analyze", _write("e.json", "")(t)], ""),
    ("trace-empty-gzip", lambda t: ["analyze", _gz("e.json.gz", b"")(t)], ""),
    ("trace-gzip-garbage", lambda t: ["analyze", _gz("g.json.gz", b"\x1f\x8b\x08\x00garbage")(t)], ""),
    ("trace-is-a-directory", lambda t: ["analyze", str(t)], ""),
    ("trace-events-not-a-list", lambda t: ["analyze", _write("n.json", '{"traceEvents": 5}')(t)], ""),
    ("trace-unknown-analysis", lambda t: ["analyze", str(TRACE), "--only", "kernels,bogus"], "bogus"),
    ("trace-vs-missing", lambda t: ["analyze", str(TRACE), "--vs", str(t / "none.json")], "check the path"),
    ("trace-same-rank-twice", lambda t: ["analyze", _write("r0.json", '{"distributedInfo": {"rank": 0}, '
                                         '"traceEvents": []}')(t),
                                         _write("r0b.json", '{"distributedInfo": {"rank": 0}, "traceEvents": [], '
                                                '"schemaVersion": 1}')(t)], "rank 0"),
    ("trace-same-file-twice", lambda t: ["analyze", _write("r0.json", '{"traceEvents": []}')(t),
                                         str(t / "r0.json")], "given twice"),
]

STORE_CASES: list[tuple[str, Callable[[Path], list[str]], str]] = [
    ("store-missing-table", lambda t: ["history", "*", "--db", _store_with(t, "DROP TABLE samples")], ""),
    ("store-newer-schema", lambda t: ["history", "*", "--db", _store_with(t, "UPDATE perfkit_schema SET version = 99")],
     "newer"),
    ("store-foreign-tables", lambda t: ["history", "*", "--db", _store_with(t, "DROP TABLE perfkit_schema")],
     "not a perfkit store"),
    ("store-folder-missing", lambda t: ["ingest", _a_file(t), "--db", str(t / "no" / "such" / "x.db")], ""),
    ("store-unknown-driver", lambda t: ["history", "*", "--db", "mysql://u@localhost/x"], "--db"),
    ("store-postgres-unreachable", lambda t: ["history", "*", "--db", "postgresql://u@127.0.0.1:9/x"], ""),
    ("store-empty-sqlite-url", lambda t: ["history", "*", "--db", "sqlite:///:memory:"], "always empty"),
    ("ingest-into-memory-store", lambda t: ["ingest", _a_file(t), "--db", "sqlite://"], "keeps nothing"),
    ("profile-into-memory-store", lambda t: ["profile", _spec(t), "--quiet", "--db", "sqlite:///:memory:"],
     "keeps nothing"),
]

INGEST_CASES: list[tuple[str, Callable[[Path], list[str]], str]] = [
    ("csv-missing-columns", lambda t: ["ingest", "--format", "csv", _write("m.csv", "a,b\n1,2\n")(t)], ""),
    ("csv-value-not-a-number", lambda t: ["ingest", "--format", "csv", _csv("c1,m,abc,s,lower,g,1700000000\n")(t)],
     ""),
    ("csv-value-nan", lambda t: ["ingest", "--format", "csv", _csv("c1,m,nan,s,lower,g,1700000000\n")(t)], ""),
    ("csv-value-inf", lambda t: ["ingest", "--format", "csv", _csv("c1,m,inf,s,lower,g,1700000000\n")(t)], ""),
    ("csv-timestamp-1e20", lambda t: ["ingest", "--format", "csv", _csv("c1,m,1,s,lower,g,1e20\n")(t)], "timestamp"),
    ("csv-timestamp-nan", lambda t: ["ingest", "--format", "csv", _csv("c1,m,1,s,lower,g,nan\n")(t)], "timestamp"),
    ("csv-timestamp-words", lambda t: ["ingest", "--format", "csv", _csv("c1,m,1,s,lower,g,yesterday\n")(t)],
     "timestamp"),
    ("csv-bad-direction", lambda t: ["ingest", "--format", "csv", _csv("c1,m,1,s,sideways,g,1700000000\n")(t)], ""),
    ("csv-header-only", lambda t: ["ingest", "--format", "csv", _csv("")(t)], ""),
    ("csv-binary", lambda t: ["ingest", "--format", "csv", _gz("b.csv", bytes(range(256)))(t)], ""),
    ("csv-without-format", lambda t: ["ingest", _csv("c1,m,1,s,lower,g,1700000000\n")(t)], "--format csv"),
    ("pytest-benchmark-not-json", lambda t: ["ingest", "--format", "pytest-benchmark", _write("p.json", "{")(t)], ""),
    ("pytest-benchmark-no-benchmarks", lambda t: ["ingest", "--format", "pytest-benchmark",
                                                  _write("p.json", '{"machine_info": {}}')(t)], ""),
    ("run-json-truncated", lambda t: ["ingest", _run_dir(t, '{"run_id": "x", "points": [')], ""),
    ("run-json-not-an-object", lambda t: ["ingest", _run_dir(t, "[1, 2]")], ""),
    ("run-json-newer-schema", lambda t: ["ingest", _run_dir(t, '{"schema_version": 99, "run_id": "x"}')], ""),
    ("run-dir-empty", lambda t: ["ingest", _run_dir(t, None)], ""),
    ("partial-without-flag", lambda t: ["ingest", _run_dir(t, '{"run_id": "x"}', "run.partial.json")], ""),
    ("report-corrupt-run", lambda t: ["report", _run_dir(t, "{not json")], ""),
    ("roofline-corrupt-run", lambda t: ["roofline", _run_dir(t, "{not json")], ""),
]

OPTION_CASES: list[tuple[str, Callable[[Path], list[str]], str]] = [
    ("gate-junit-missing-folder", lambda t: ["gate", "--baseline", "a", "--candidate", "b",
                                             "--junit", str(t / "no" / "j.xml")], "does not exist"),
    ("gate-junit-over-a-spec", lambda t: ["gate", "--baseline", "a", "--candidate", "b", "--junit", _spec(t)],
     "refusing to overwrite"),
    ("gate-markdown-missing-folder", lambda t: ["gate", "--baseline", "a", "--candidate", "b",
                                                "--markdown", str(t / "no" / "g.md")], "does not exist"),
    ("gate-policy-missing", lambda t: ["gate", "--baseline", "a", "--candidate", "b", "--policy", str(t / "p.yaml")],
     "file not found"),
    ("gate-policy-bad-yaml", lambda t: ["gate", "--baseline", "a", "--candidate", "b",
                                        "--policy", _bad_policy("a: [\n")(t)], "YAML"),
    ("gate-policy-a-list", lambda t: ["gate", "--baseline", "a", "--candidate", "b",
                                      "--policy", _bad_policy("- 1\n")(t)], ""),
    ("gate-history-negative", lambda t: ["gate", "--baseline", "a", "--candidate", "b", "--history", "-1"], ""),
    ("gate-seed-not-int", lambda t: ["gate", "--baseline", "a", "--candidate", "b", "--seed", "x"], ""),
    ("report-out-over-a-spec", lambda t: ["report", _run_dir(t, "{}"), "--out", _spec(t)], ""),
    ("report-out-missing-folder", lambda t: ["report", _run_dir(t, "{}"), "--out", str(t / "no" / "r.html")],
     "does not exist"),
    ("compare-missing-run", lambda t: ["compare", "nope1", "nope2"], ""),
    ("doctor-bad-format", lambda t: ["doctor", "--format", "xml"], "invalid choice"),
    ("calibrate-threads-not-int", lambda t: ["calibrate", "--threads", "many"], "not an integer"),
    ("ab-rounds-not-int", lambda t: ["ab", "--rounds", "x", "true", "true"], ""),
    ("history-bad-format", lambda t: ["history", "*", "--format", "xml"], "invalid choice"),
]

LONG = "b" * 10_000  # a value echoed in a message is shortened (perfkit.core.errors.shorten)


def _dir(name: str) -> Callable[[Path], str]:
    def make(tmp: Path) -> str:
        (tmp / name).mkdir()
        return str(tmp / name)
    return make


NAME_CASES: list[tuple[str, Callable[[Path], list[str]], str]] = [
    ("store-dir-named-sqlite", lambda t: ["ingest", "--format", "csv", _csv("c1,m,1,s,lower,g,1700000000\n")(t),
                                          "--db", _dir("x.sqlite")(t)], "is a directory"),
    ("store-dir-named-db-history", lambda t: ["history", "*", "--db", _dir("x.db")(t)], "is a directory"),
    ("dashboard-db-is-directory", lambda t: ["dashboard", "--db", _dir("x.db")(t)], "is a directory"),
    ("spec-name-too-long", lambda t: ["profile", _write("n.yaml", GEMM.replace("name: t", "name: " + "a" * 201))(t)],
     "201 characters long; the limit is 200"),
    ("spec-long-kind", lambda t: ["profile", _write("k.yaml", GEMM.replace("kind: gemm", "kind: " + LONG))(t)],
     "(10002 characters)"),
    ("spec-long-value", lambda t: ["profile", _write("v.yaml", GEMM.replace("m: 8", "m: " + LONG))(t)],
     "characters)"),
    ("spec-long-dtype", lambda t: ["profile", _write("d.yaml", GEMM + f"    dtypes: [{LONG}]\n")(t)], "characters)"),
    ("option-long-choice", lambda t: ["profile", _spec(t), "--device", LONG], "characters)"),
    ("option-long-integer", lambda t: ["analyze", "x.json", "--top", LONG], "characters)"),
    ("selector-long", lambda t: ["compare", LONG, "main@" + LONG, "--db", _db("empty")(t)], "characters)"),
    ("history-long-metric", lambda t: ["history", LONG], ""),
    ("analyze-long-path", lambda t: ["analyze", LONG], "characters)"),
    ("compare-empty-baseline", lambda t: ["compare", "", "x"], "argument BASE: empty"),
    ("gate-empty-candidate", lambda t: ["gate", "--baseline", "a", "--candidate", " "], "argument --candidate: empty"),
    ("report-empty-run", lambda t: ["report", ""], "argument RUN: empty"),
    ("report-empty-vs", lambda t: ["report", _run_dir(t, "{}"), "--vs", ""], "argument --vs: empty"),
    ("roofline-empty-run", lambda t: ["roofline", ""], "argument RUN: empty"),
]



def _real_run(tmp: Path) -> Path:
    """A copy under `tmp` of one real tiny run (tests/helpers/tiny_run.py), profiled once per
    session (per worker: tmp's parent is the session's base temporary directory)."""
    from tests.helpers.tiny_run import profile_tiny

    cache = tmp.parent / "hostile-real-run"
    if not cache.is_dir():
        work = Path(tempfile.mkdtemp(dir=tmp.parent))
        profile_tiny(work).rename(cache)
    copy = tmp / "real-run"
    shutil.copytree(cache, copy)
    return copy


def _damaged(edit: Callable[[dict[str, Any]], object] | None = None, raw: Callable[[bytes], bytes] | None = None,
             name: str = "run.json") -> Callable[[Path], str]:
    """A copy of a real run whose run.json is edited (as JSON, or as bytes) and saved as `name`."""
    def make(tmp: Path) -> str:
        run = _real_run(tmp)
        text = (run / "run.json").read_bytes()
        if edit is not None:
            data = json.loads(text)
            edit(data)
            text = json.dumps(data).encode()
        (run / "run.json").unlink()
        (run / name).write_bytes(raw(text) if raw is not None else text)
        return str(run)
    return make


def _intact(tmp: Path) -> str:
    (tmp / "intact").mkdir()
    return str(_real_run(tmp / "intact"))


def _fresh_db(tmp: Path) -> str:
    return f"sqlite:///{tmp / 'fresh.db'}"  # the test checks it was never made: nothing stored


def _measured(edit: Callable[[dict[str, Any]], object]) -> Callable[[dict[str, Any]], object]:
    return lambda d: edit(d["points"][0]["measurement"])


def _bomb(text: bytes) -> bytes:
    return text.replace(b'"spec": {', b'"spec": {"bomb": ' + b"[" * 100_000 + b"]" * 100_000 + b", ", 1)


# One case per class of damage a run record can carry, through each command that reads run records.
RECORD_CASES: list[tuple[str, Callable[[Path], list[str]], str]] = [
    ("run-json-not-utf8", lambda t: ["ingest", _damaged(raw=lambda b: b.replace(b'"tiny-gemm"', b'"tiny-g\xe9mm"', 1))(t),
                                     "--db", _fresh_db(t)], "run.json: not UTF-8 at byte"),
    ("run-json-nesting-bomb", lambda t: ["report", _damaged(raw=_bomb)(t)], "nested more than 200 levels deep"),
    ("run-json-calls-infinity", lambda t: ["ingest", _damaged(_measured(lambda m: m.update(calls_per_sample=math.inf)))(t),
                                           "--db", _fresh_db(t)],
     "points[0].measurement.calls_per_sample: Infinity is not a whole number; re-run the point or fix the record"),
    ("run-json-warmup-nan", lambda t: ["report", _damaged(_measured(lambda m: m.update(warmup_reps=math.nan)))(t)],
     "points[0].measurement.warmup_reps: NaN is not a whole number"),
    ("run-json-count-past-64-bits", lambda t: ["compare", _intact(t), _damaged(_measured(
        lambda m: m.update(warmup_reps=2**70)))(t)], "warmup_reps: 1180591620717411303424 is not a whole number below 2**63"),
    ("run-json-5000-digit-number", lambda t: ["gate", "--baseline", _damaged(raw=lambda b: b.replace(
        b'"warmup_reps": ', b'"warmup_reps": 1' + b"0" * 5000 + b", \"x\": ", 1))(t), "--candidate", _intact(t)],
     "not valid JSON (an integer over 4300 digits)"),
    ("run-json-sample-negative", lambda t: ["roofline", _damaged(_measured(lambda m: m["samples_s"].__setitem__(0, -1.0)))(t),
                                            "--no-figure"], "samples_s[0]: -1.0 is not a finite number >= 0"),
    ("run-json-cost-infinite", lambda t: ["ingest", _damaged(lambda d: d["points"][0]["cost"].update(flop=math.inf))(t),
                                          "--db", _fresh_db(t)], "points[0].cost.flop: Infinity is not a finite number"),
    ("run-json-points-a-string", lambda t: ["ingest", _damaged(lambda d: d.update(points="all"))(t), "--db", _fresh_db(t)],
     'points: "all" is not a list'),
    ("run-json-env-a-list", lambda t: ["report", _damaged(lambda d: d.update(env=[1]))(t)], "env: a list is not an object"),
    ("run-json-status-unknown", lambda t: ["ingest", _damaged(lambda d: d["points"][0].update(status="great"))(t),
                                           "--db", _fresh_db(t)], '"great" is not one of ok, failed, skipped'),
    ("run-json-run-id-a-path", lambda t: ["ingest", _damaged(lambda d: d.update(run_id="../../etc"))(t),
                                          "--db", _fresh_db(t)], 'run_id: "../../etc" is not a run id'),
    ("run-json-schema-true", lambda t: ["ingest", _damaged(lambda d: d.update(schema_version=True))(t),
                                        "--db", _fresh_db(t)], "schema_version: true is not a whole number"),
    ("partial-nesting-bomb", lambda t: ["ingest", "--partial", _damaged(raw=_bomb, name="run.partial.json")(t),
                                        "--db", _fresh_db(t)], "nested more than 200 levels deep"),
    ("run-json-kernel-calls-infinity", lambda t: ["ingest", _damaged(lambda d: d["artifacts"].update(
        kernels=[{"name": "k", "calls": math.inf, "total_ns": 1}]))(t), "--db", _fresh_db(t)],
     "artifacts.kernels[0].calls: Infinity is not a whole number >= 0"),
]

OPTION_CLASS_CASES: list[tuple[str, Callable[[Path], list[str]], str]] = [
    ("history-negative-seed", lambda t: ["history", "*", "--seed", "-1"], "-1 is not a seed"),
    ("gate-seed-past-32-bits", lambda t: ["gate", "--baseline", "a", "--candidate", "b", "--seed", str(2**40)],
     "is not a seed"),
    ("ab-seed-not-an-integer", lambda t: ["ab", "--baseline", "true", "--candidate", "true", "--seed", "1e3"],
     "'1e3' is not an integer"),
    ("serve-bench-negative-seed", lambda t: ["serve-bench", "http://127.0.0.1:9", "--seed", "-5"], "is not a seed"),
    ("calibrate-unknown-dtype", lambda t: ["calibrate", "--dtypes", "fp32,fp7"], "unknown dtype 'fp7'"),
    ("history-magnitude-nan", lambda t: ["history", "*", "--min-magnitude", "nan"], "not a finite number"),
    ("history-max-p-one", lambda t: ["history", "*", "--max-p", "1"], "outside (0, 1)"),
    ("history-min-size-zero", lambda t: ["history", "*", "--min-size", "0"], "below 1"),
    ("serve-bench-zero-gpus", lambda t: ["serve-bench", "http://127.0.0.1:9", "--gpus", "0"],
     "serve-bench --gpus: Input should be greater than or equal to 1"),
    ("serve-bench-quantile-two", lambda t: ["serve-bench", "http://127.0.0.1:9", "--slo-quantile", "2"],
     "serve-bench --slo-quantile: Input should be less than or equal to 1"),
    ("serve-infinite-ttft", lambda t: ["serve", "--synthetic", "--ttft-ms", "inf"], "not a finite number"),
]

def _fifo(name: str) -> Callable[[Path], str]:
    """A named pipe no one writes to: opened, it would wait forever."""
    def make(tmp: Path) -> str:
        os.mkfifo(tmp / name)
        return str(tmp / name)
    return make


def _run_dir_fifo(tmp: Path) -> str:
    run = Path(_run_dir(tmp, None))
    os.mkfifo(run / "run.json")
    return str(run)


def _run_dir_loop(tmp: Path) -> str:
    run = Path(_run_dir(tmp, None))
    os.symlink("run.partial.json", run / "run.partial.json")
    return str(run)


def _deep(prefix: str, suffix: str) -> str:
    return prefix + "[" * 5000 + "1" + "]" * 5000 + suffix


# Classes benchmarks/hostile_fuzz.py found: a hang on a FIFO, a traceback on deep nesting or a bad gzip block.
FUZZ_CASES: list[tuple[str, Callable[[Path], list[str]], str]] = [
    ("fifo-as-spec", lambda t: ["profile", _fifo("s.yaml")(t)], "s.yaml: a named pipe (FIFO), not a file"),
    ("fifo-as-trace", lambda t: ["analyze", _fifo("t.json")(t)], "t.json: a named pipe (FIFO)"),
    ("fifo-as-csv", lambda t: ["ingest", "--format", "csv", _fifo("c.csv")(t), "--db", _fresh_db(t)], "c.csv: a named pipe"),
    ("fifo-as-policy", lambda t: ["gate", "--baseline", "a", "--candidate", "b", "--policy", _fifo("p.yaml")(t)],
     "p.yaml: a named pipe"),
    ("fifo-as-store", lambda t: ["history", "*", "--db", "sqlite:///" + _fifo("s.db")(t)], "s.db: a named pipe"),
    ("fifo-as-run-json", lambda t: ["ingest", _run_dir_fifo(t), "--db", _fresh_db(t)], "run.json: a named pipe"),
    ("partial-a-symlink-loop", lambda t: ["ingest", "--partial", _run_dir_loop(t), "--db", _fresh_db(t)],
     "run.partial.json: Too many levels of symbolic links"),
    ("store-table-renamed", lambda t: ["history", "*", "--db", _store_with(t, "ALTER TABLE runs RENAME TO runs_old")],
     "table runs is missing; the store is damaged"),
    ("store-column-dropped", lambda t: ["ingest", "--format", "csv", _csv("c1,m,1,s,lower,g,1700000000\n")(t), "--db",
                                        _store_with(t, "ALTER TABLE metrics DROP COLUMN unit")],
     "table metrics has no column unit"),
    ("store-version-column-dropped", lambda t: ["ingest", "--format", "csv", _csv("c1,m,1,s,lower,g,1700000000\n")(t),
                                                "--db", _store_with(
        t, "ALTER TABLE perfkit_schema DROP COLUMN version")], "table perfkit_schema has no column version"),
    ("device-as-trace", lambda t: ["memory", "/dev/zero"], "/dev/zero: a device, not a file"),
    ("pytest-benchmark-deep", lambda t: ["ingest", "--format", "pytest-benchmark", _write(
        "deep.json", _deep('{"benchmarks": ', "}"))(t), "--db", _fresh_db(t)], "deep.json:1:215: nested more than 200"),
    ("trace-event-nested-deep", lambda t: ["analyze", _write("deep.json", _deep('{"traceEvents": ', "}"))(t)],
     "deep.json: malformed JSON near byte 16"),
    ("memory-gzip-bad-block", lambda t: ["memory", _gz("m.pickle", b"\x1f\x8b\x08\x00" + bytes(range(64)))(t)],
     "m.pickle: damaged gzip"),
]

def _stored_pair(tmp: Path, sql: str) -> tuple[str, str, str]:
    """The real run stored twice (two run ids) in a fresh store, then `sql` run on its rows by
    hand (sqlite3, as another tool would): (store URL, baseline id, candidate id)."""
    from perfkit.cli import main

    run = _real_run(tmp)
    record = json.loads((run / "run.json").read_text())
    other = tmp / "stored" / (record["run_id"][:-6] + "0f0f0f")  # not in the cwd: its id is no path there
    shutil.copytree(run, other)
    (other / "run.json").write_text(json.dumps({**record, "run_id": other.name}))
    url = f"sqlite:///{tmp / 'rows.db'}"
    for stored in (run, other):
        assert main(["ingest", str(stored), "--db", url]) == 0
    conn = sqlite3.connect(tmp / "rows.db")
    conn.execute(sql)
    conn.commit()
    conn.close()
    return url, other.name, record["run_id"]


def _rows_case(command: str, sql: str) -> Callable[[Path], list[str]]:
    def make(tmp: Path) -> list[str]:
        url, base, cand = _stored_pair(tmp, sql)
        if command == "report":
            return ["report", str(tmp / "real-run"), "--vs", base, "--db", url, "--out", str(tmp / "r.html")]
        return [command, *(["--baseline", base, "--candidate", cand] if command == "gate" else [base, cand]), "--db", url]
    return make


def _calibration(raw: Callable[[bytes], bytes]) -> Callable[[Path], list[str]]:
    def make(tmp: Path) -> list[str]:
        run = _real_run(tmp)
        cal = tmp / "cal.json"
        cal.write_bytes(raw(b'{"device": {"name": "caf\xc3\xa9"}}'))
        return ["roofline", str(run), "--no-figure", "--calibration", str(cal)]
    return make


def _asv(edit: Callable[[Path], None]) -> Callable[[Path], list[str]]:
    def make(tmp: Path) -> list[str]:
        shutil.copytree(ASV, tmp / "results")
        edit(tmp / "results" / "cheetah")
        return ["ingest", "--format", "asv", str(tmp / "results"), "--db", _fresh_db(tmp)]
    return make


def _asv_deep(machine: Path) -> None:
    (machine / "bac1f64f-py2.7-Cython-numpy1.8.json").write_text(_deep('{"results": ', "}"))


# Classes the fuzzer's fourth round found (other tools' files, calibrations, ab commands, store rows).
FUZZ4_CASES: list[tuple[str, Callable[[Path], list[str]], str]] = [
    ("calibration-not-utf8", _calibration(lambda b: b.replace(b"\xc3\xa9", b"\xe9")), "cal.json: not UTF-8 at byte"),
    ("calibration-nested-deep", _calibration(lambda b: _deep('{"device": ', "}").encode()),
     "cal.json:1:211: nested more than 200 levels deep; run `perfkit calibrate` again"),
    ("asv-result-nested-deep", _asv(_asv_deep), "bac1f64f-py2.7-Cython-numpy1.8.json:1:212: nested more than 200"),
    ("asv-result-a-fifo", _asv(lambda m: os.mkfifo(m / "ffffffff-py2.7-Cython-numpy1.8.json")),
     "ffffffff-py2.7-Cython-numpy1.8.json: a named pipe (FIFO), not a file"),
    ("ab-empty-command", lambda t: ["ab", "--baseline", "", "--candidate", "true"],
     "--baseline '': an empty command; pass the command to time"),
    ("ab-unbalanced-quote", lambda t: ["ab", "--baseline", "true", "--candidate", "printf 'a"],
     "--candidate \"printf 'a\": no closing quotation"),
    ("store-sample-text", _rows_case("compare", "UPDATE samples SET value = 'abc' WHERE idx = 0"),
     "rows.db: metric 1: stored sample 'abc' is not a finite number; delete the run and store it again"),
    ("store-sample-infinite", _rows_case("gate", "UPDATE samples SET value = 9e999 WHERE idx = 0"),
     "stored sample 'inf' is not a finite number"),
    ("store-sample-negative", _rows_case("gate", "UPDATE samples SET value = -1"),
     "rows.db): nothing comparable (values must be finite and > 0)"),
    ("store-point-not-json", _rows_case("report", "UPDATE points SET point_json = '{not json'"),
     "stored point is malformed (not JSON: "),
    ("store-env-not-json", _rows_case("compare", "UPDATE runs SET env_json = '{not json'"),
     "rows.db: run "),
]

CASES += (SPEC_CASES + TRACE_CASES + STORE_CASES + INGEST_CASES + OPTION_CASES + NAME_CASES + RECORD_CASES
          + OPTION_CLASS_CASES + FUZZ_CASES + FUZZ4_CASES)


def _env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}


@pytest.fixture(scope="module")
def cli() -> Iterator[ForkedCli]:
    """`python -m perfkit` per case, forked from one interpreter that imported the CLI (a real
    process per case: exit code, stderr, a crash; ~0.05 s instead of ~0.7 s each)."""
    server = ForkedCli(_env())
    yield server
    server.close()


@pytest.mark.slow
@pytest.mark.parametrize(("argv", "needle"), [pytest.param(c[1], c[2], id=c[0]) for c in CASES])
def test_hostile_input_is_one_line_exit_2(tmp_path: Path, argv: Callable[[Path], list[str]], needle: str,
                                          cli: ForkedCli) -> None:
    args = argv(tmp_path)
    if str(TRACE) in args and not TRACE.exists():
        pytest.skip(f"{TRACE} is absent")
    proc = cli.run(args, tmp_path, _env(), timeout_s=120)
    err = proc.stderr.strip()
    assert proc.returncode == 2, (proc.returncode, err[-2000:])
    assert "Traceback" not in err and len(err.splitlines()) == 1 and len(err) < 1000, err[-2000:]
    assert needle in err
    assert not (tmp_path / "runs").exists()  # nothing half-written
    assert not (tmp_path / "fresh.db").exists()  # nothing stored: the input was refused before the store


def test_at_least_80_hostile_inputs() -> None:
    assert len(CASES) >= 80
    assert len({c[0] for c in CASES}) == len(CASES)


def _perfkit(cli: ForkedCli, tmp: Path, *args: str) -> Result:
    return cli.run(list(args), tmp, _env(), timeout_s=120)


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncated", "empty", "not-parquet"])
def test_a_damaged_analysis_table_is_left_out_with_a_note(tmp_path: Path, damage: str, cli: ForkedCli) -> None:
    """An analysis table is derived from the traces: damaged, ingest stores the run without it and
    says so in one note; the report shows the rest and names it. Never a traceback."""
    run = _real_run(tmp_path)
    table = run / "analysis" / "kernels.parquet"
    whole = table.read_bytes()
    table.write_bytes({"truncated": whole[: len(whole) // 2], "empty": b"", "not-parquet": b"PAR1" + b"\x00" * 64}[damage])
    db = f"sqlite:///{tmp_path / 'store.db'}"
    stored = _perfkit(cli, tmp_path, "ingest", str(run), "--db", db)
    assert stored.returncode == 0 and "Traceback" not in stored.stderr, stored.stderr
    (note,) = stored.stderr.strip().splitlines()
    assert note.startswith(f"perfkit: note: {run}: analysis table analysis/kernels.parquet unreadable: ")
    assert note.endswith("; left out") and " stored" in stored.stdout
    listed = _perfkit(cli, tmp_path, "runs", "--db", db, "--format", "json")
    run_id = json.loads((run / "run.json").read_text())["run_id"]
    assert listed.returncode == 0 and [r["run_id"] for r in json.loads(listed.stdout)["runs"]] == [run_id]
    report = _perfkit(cli, tmp_path, "report", str(run), "--out", str(tmp_path / "r.html"))
    assert report.returncode == 0 and "Traceback" not in report.stderr, report.stderr
    assert "analysis table analysis/kernels.parquet unreadable: " in (tmp_path / "r.html").read_text()
