"""`pip install perfkit` adds one top-level import name, and perfkit works beside packages that
take the names of its folders (PyPI has `profiler`, `reports`, `dashboard` and `analyzers`).

The wheel is built from a copy of the working tree (tracked and new files), so the repository
gets no build/ or egg-info folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.helpers.wheel import build_wheel

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("profiler", "workloads", "analyzers", "roofline", "reports", "dashboard")
TRACE = REPO / "examples" / "traces" / "alexnet-a100.json.gz"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


def test_the_wheel_has_one_top_level_name(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        info = next(n for n in names if n.endswith(".dist-info/top_level.txt"))
        record = next(n for n in names if n.endswith(".dist-info/RECORD"))
        top_level = zf.read(info).decode().split()
        record_tops = {line.split(",")[0].split("/")[0] for line in zf.read(record).decode().splitlines() if line}
    assert top_level == ["perfkit"]
    assert {t for t in record_tops if not t.endswith(".dist-info")} == {"perfkit"}
    for folder in FOLDERS:  # each folder is a subpackage, with its files, not a link
        assert f"perfkit/{folder}/__init__.py" in names
    for path in ("perfkit/profiler/timer.py", "perfkit/roofline/devices.yaml", "perfkit/dashboard/app.py",
                 "perfkit/dashboard/views/overview.py", "perfkit/analyzers/loaders/kineto/load.py",
                 "perfkit/workloads/gemm/spec.py"):
        assert path in names, path


def test_perfkit_works_beside_packages_named_like_its_folders(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)  # a pure wheel: extracting it is installing it (no scripts needed here)
    shadow = tmp_path / "shadow"
    seen = tmp_path / "imported"
    for name in FOLDERS:  # stand-ins for the PyPI packages of these names; record any import of them
        (shadow / name).mkdir(parents=True)
        (shadow / name / "__init__.py").write_text(
            f"open({str(seen)!r}, 'a').write({name!r} + '\\n')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(shadow), str(site)]), "OMP_NUM_THREADS": "1"}

    def perfkit(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "perfkit", *args], capture_output=True, text=True,
                              cwd=tmp_path, env=env, timeout=120)

    where = subprocess.run([sys.executable, "-c", "import perfkit.analyzers.suite as s, perfkit; "
                            "print(perfkit.__file__); print(s.__file__)"],
                           capture_output=True, text=True, cwd=tmp_path, env=env, check=True).stdout.split()
    assert all(Path(p).is_relative_to(site) for p in where), where
    assert perfkit("--help").returncode == 0
    analyzed = perfkit("analyze", str(TRACE))
    assert analyzed.returncode == 0, analyzed.stderr
    assert "## kernels" in analyzed.stdout
    doctor = perfkit("doctor", "--help")
    assert doctor.returncode == 0
    assert not seen.exists(), f"perfkit imported a package of another name: {seen.read_text()}"
