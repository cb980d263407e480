"""tests/ mirrors the package: every folder of tests is the path of a package folder.

A test of perfkit/<a>/<b>.py (or of the top-level folder <a>/<b>.py, which perfkit/<a> links to)
lives in tests/<a>/, a test of perfkit/<a>/<b>/<c>.py in tests/<a>/<b>/ (or tests/<a>/ while that
folder has few tests). A folder of tests that names no package folder is a room nobody can find.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Folders of tests that mirror no package folder, on purpose:
ALLOWED = {
    "helpers",  # shared test code (servers, runs, records), imported as tests.helpers.<name>
    "data",  # sample files of other tools, read by tests of several folders
    "perfkit",  # perfkit/api.py, perfkit/cli.py, perfkit/pytest_plugin.py: the package's own top files
}
# Top-level folders that are not linked into perfkit/ but have tests of their own.
TOP_LEVEL = ("benchmarks",)


def folders_of_tests(tests: Path) -> list[Path]:
    """Every folder under `tests` that holds tests (data folders and caches left out)."""
    return sorted(d.relative_to(tests) for d in tests.rglob("*")
                  if d.is_dir() and "__pycache__" not in d.parts and "data" not in d.relative_to(tests).parts
                  and not any(p.startswith(".") for p in d.relative_to(tests).parts))


def unmirrored(root: Path) -> list[str]:
    """The folders of root/tests that mirror no folder of root/perfkit (nor an allowed top-level one)."""
    wrong = []
    for rel in folders_of_tests(root / "tests"):
        if rel.parts[0] in ALLOWED:
            continue
        if (root / "perfkit" / rel).is_dir() or (rel.parts[0] in TOP_LEVEL and (root / rel).is_dir()):
            continue
        wrong.append(f"tests/{rel.as_posix()}")
    return wrong


def test_every_test_folder_mirrors_a_package_folder() -> None:
    wrong = unmirrored(ROOT)
    assert wrong == [], (f"{wrong}: no such folder in perfkit/ (or {', '.join(TOP_LEVEL)}/); move the tests to "
                         "tests/<the path of the module they test>, or name the folder in ALLOWED with why")


def test_the_check_finds_a_folder_that_mirrors_nothing(tmp_path: Path) -> None:
    (tmp_path / "perfkit" / "store").mkdir(parents=True)
    (tmp_path / "benchmarks").mkdir()
    for folder in ("store", "store/data/asv", "helpers", "benchmarks", "pipeline", "store/ingest", "store/__pycache__"):
        (tmp_path / "tests" / folder).mkdir(parents=True)
    assert unmirrored(tmp_path) == ["tests/pipeline", "tests/store/ingest"]


def test_the_mirror_holds_the_tests_of_the_rooms_that_moved() -> None:
    # the rooms of regression, pipeline and ingest have their tests beside their names, not elsewhere
    for folder in ("regression/gate", "regression/changepoint", "pipeline/ranks", "ingest/serving", "ingest/asv",
                   "workloads/serving/client", "workloads/serving/measurements", "workloads/serving/server"):
        assert list((ROOT / "tests" / folder).glob("test_*.py")), f"tests/{folder} holds no tests"
    assert not list((ROOT / "tests" / "analyzers").glob("test_gate_*.py"))
