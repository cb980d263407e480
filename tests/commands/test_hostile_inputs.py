"""Hostile inputs through the real CLI: each ends with exit 2 and one short line, never a traceback.

Every case runs `python -m perfkit ...` in a subprocess (the user's view); the store and perfkit
home are the suite's temporary ones (tests/conftest.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TRACE = REPO.parent / "shared" / "bench" / "traces" / "hta_ns_resolution_v100.json.gz"
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


@pytest.mark.parametrize(("argv", "needle"), [pytest.param(c[1], c[2], id=c[0]) for c in CASES])
def test_hostile_input_is_one_line_exit_2(tmp_path: Path, argv: Callable[[Path], list[str]], needle: str) -> None:
    args = argv(tmp_path)
    if str(TRACE) in args and not TRACE.exists():
        pytest.skip(f"{TRACE} is absent")
    proc = subprocess.run([sys.executable, "-m", "perfkit", *args], capture_output=True, text=True,
                          cwd=tmp_path, env={**os.environ, "OMP_NUM_THREADS": "1",
                                             "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get(
                                                 "PYTHONPATH")]))},
                          timeout=120, check=False)
    err = proc.stderr.strip()
    assert proc.returncode == 2, (proc.returncode, err[-2000:])
    assert "Traceback" not in err and len(err.splitlines()) == 1 and len(err) < 1000, err[-2000:]
    assert needle in err
    assert not (tmp_path / "runs").exists()  # nothing half-written
