"""`perfkit dashboard --demo` from an installed perfkit, not a checkout: the demo store is built
from perfkit's wheel extracted into tmp_path (no benchmarks/ beside it, no links), with real CPU
runs of the demo repository's commits, and the installed dashboard app renders it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.wheel import build_wheel, install_wheel

pytest.importorskip("streamlit", reason="the dashboard extra is not installed")
pytestmark = pytest.mark.slow  # a wheel build and three real profile runs

BUILD = """
import json, sys
from pathlib import Path
from perfkit.dashboard import demo
built = demo.build(Path(sys.argv[1]), commits=3, change_at=2, workers=2, progress=lambda _: None)
print(json.dumps({"module": demo.__file__, "checkout_results": str(demo.checkout_results()),
                  "db_url": built.db_url, "runs_dir": str(built.runs_dir), "label": built.label}))
"""

RENDER = """
import json, sys
from streamlit.testing.v1 import AppTest
at = AppTest.from_file(sys.argv[1], default_timeout=120)
at.run()
print(json.dumps({"exceptions": [str(e.value) for e in at.exception],
                  "warnings": [w.value for w in at.warning], "infos": [i.value for i in at.info],
                  "tables": len(at.dataframe)}))
"""


def _python(code: str, *args: str, env: dict[str, str], cwd: Path) -> dict[str, object]:
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def test_the_demo_builds_and_renders_from_an_installed_wheel(tmp_path: Path) -> None:
    site = install_wheel(build_wheel(tmp_path / "wheel"), tmp_path / "site")
    work = tmp_path / "work"  # outside any checkout
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site), "PERFKIT_HOME": str(tmp_path / "home"), "OMP_NUM_THREADS": "1"}

    built = _python(BUILD, str(tmp_path / "demo"), env=env, cwd=work)
    assert Path(str(built["module"])).is_relative_to(site), built["module"]  # the installed file ran
    assert built["checkout_results"] == "None"  # installed: no benchmarks/results/ to look in
    assert "3 real commits" in str(built["label"])

    runs = sorted(p for p in Path(str(built["runs_dir"])).rglob("run.json"))
    assert len(runs) == 3
    shas = subprocess.run(["git", "-C", str(tmp_path / "demo" / "repo"), "rev-list", "--reverse", "main"],
                          capture_output=True, text=True, check=True).stdout.split()
    commits = sorted(json.loads(p.read_text())["env"]["git"]["commit"] for p in runs)
    assert commits == sorted(shas)  # one real run per real commit of the demo repository

    listed = subprocess.run([sys.executable, "-m", "perfkit", "runs", "--db", str(built["db_url"])],
                            capture_output=True, text=True, env=env, cwd=work, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert all(sha[:7] in listed.stdout for sha in shas), listed.stdout

    page = _python(RENDER, str(site / "perfkit" / "dashboard" / "app.py"), cwd=work,
                   env={**env, "PERFKIT_DB": str(built["db_url"]), "PERFKIT_RUNS": str(built["runs_dir"]),
                        "PERFKIT_DASHBOARD_DEMO": str(built["label"])})
    assert page["exceptions"] == []
    assert any("Demo data" in str(w) for w in page["warnings"]), page  # the banner over the demo store
    assert not any("No runs to show" in str(i) for i in page["infos"]), page
    assert page["tables"] >= 1, page  # the Overview's latest runs
