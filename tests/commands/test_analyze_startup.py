"""`perfkit analyze` starts fast: it imports only the analysis path and starts no other process;
`perfkit --help` imports neither pandas nor numpy (benchmarks/analyze_startup.py times both)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from perfkit.cli import COMMANDS, module_name

REPO = Path(__file__).resolve().parents[2]
TRACE = REPO / "examples" / "traces" / "alexnet-a100.json.gz"

# Installed in the dev environment, none needed to analyze a trace: heavy to import (scipy,
# plotly, streamlit, torch, sqlalchemy, pydantic, rich, jinja2), another layer of perfkit, or
# another command (the cli imports the dispatched command's module only).
NOT_FOR_ANALYZE = (
    "torch", "scipy", "sqlalchemy", "streamlit", "plotly", "pydantic", "rich", "jinja2",
    "perfkit.store", "perfkit.reports", "perfkit.pipeline", "perfkit.workloads", "perfkit.profiler",
    "perfkit.roofline", "perfkit.dashboard", "perfkit.api",
    *(module_name(name) for name in COMMANDS if name != "analyze"),
)  # fmt: skip
NOT_FOR_HELP = ("pandas", "numpy", "pyarrow", "msgspec", "yaml")

CHILD = """
import contextlib, io, json, sys
spawned = []
sys.addaudithook(lambda event, args: spawned.append(event) if event in ("subprocess.Popen", "os.system", "os.posix_spawn", "os.exec") else None)
from perfkit.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        rc = main(sys.argv[1:])
    except SystemExit as exc:  # --help
        rc = exc.code
modules = sorted(sys.modules)
print(json.dumps({"rc": rc, "stdout": out.getvalue(), "modules": modules, "spawned": spawned}))
"""


def _child(*argv: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, *argv], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _loaded(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == n or m.startswith(n + ".") for n in names)]


def test_analyze_imports_only_the_analysis_path_and_spawns_nothing() -> None:
    got = _child("analyze", str(TRACE))
    assert got["rc"] == 0
    assert "## kernels" in got["stdout"] and "## skew" in got["stdout"]  # every table ran
    assert "pandas" in got["modules"]  # the check sees what the analysis imports
    assert _loaded(got["modules"], NOT_FOR_ANALYZE) == []
    assert got["spawned"] == []  # e.g. ctypes.util.find_library runs `ldconfig -p`


def test_help_imports_no_data_library() -> None:
    got = _child("--help")
    assert got["rc"] == 0 and "analyze" in got["stdout"]
    assert all(module_name(name) in got["modules"] for name in COMMANDS)  # --help lists them all
    assert _loaded(got["modules"], NOT_FOR_HELP) == []
