"""The run-directory layout: perfkit/core/run_layout.py is the one module that spells its names."""

from __future__ import annotations

import ast
from pathlib import Path

from perfkit.core import run_layout
from perfkit.core.run_layout import RunDir, trace_name

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("perfkit", "profiler", "analyzers", "reports", "dashboard", "roofline", "workloads")
FILE_NAMES = {run_layout.RUN_FILE, run_layout.PARTIAL_FILE, run_layout.TUNE_JSON, run_layout.TUNE_CSV,
              run_layout.ROOFLINE_FIGURE, run_layout.LAUNCH_LOG, "kernels.parquet"}
DIRS = (run_layout.TRACES_DIR, run_layout.ANALYSIS_DIR, run_layout.NCU_DIR, run_layout.NSYS_DIR)


# literals that look like a run-directory name but are not one: (file, literal)
NOT_A_PATH = {("roofline/ncu_kernels.py", "'ncu/'")}  # the key prefix of ncu kernels (kind/...), not a path


def _sources() -> list[Path]:
    out = []
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.is_relative_to(ROOT / "perfkit") and any(p.is_symlink() for p in path.relative_to(ROOT).parents
                                                             if (ROOT / p) != ROOT):
                continue  # perfkit/<folder> links to ../<folder>: read once, under its real name
            out.append(path)
    return out


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            ids.add(id(body[0].value))
    return ids


def _spelled(text: str) -> bool:
    """A literal that is one of the layout's names: a record or tune file, or a path under a run folder."""
    return text in FILE_NAMES or any(text.startswith(f"{d}/") for d in DIRS)


def layout_literals(path: Path, root: Path = ROOT) -> list[str]:
    """`FILE:LINE 'literal'` of every string that spells a run-directory name (docstrings aside),
    and every `x / "traces"`-style join with a run folder's name."""
    tree = ast.parse(path.read_text())
    skip = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip \
                and _spelled(node.value):
            found.append(f"{path.relative_to(root)}:{node.lineno} {node.value!r}")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and isinstance(node.right, ast.Constant) \
                and node.right.value in DIRS:
            found.append(f"{path.relative_to(root)}:{node.lineno} / {node.right.value!r}")
    return sorted(found, key=lambda hit: int(hit.split(" ")[0].rsplit(":", 1)[1]))


def test_only_the_layout_module_spells_run_directory_names() -> None:
    sources = _sources()
    assert ROOT / "perfkit/core/run_layout.py" in sources and ROOT / "reports/html/data.py" in sources
    found = [hit for path in sources if path != ROOT / "perfkit/core/run_layout.py" for hit in layout_literals(path)
             if (hit.split(":")[0], hit.split(" ", 1)[1]) not in NOT_A_PATH]
    assert found == []


def test_the_checker_sees_a_spelled_name(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text('"""Writes run.json."""\nA = "run.json"\nB = f"traces/{1}.json.gz"\nC = run_dir / "ncu"\nD = "ncu"\n')
    assert [h.split(" ", 1)[1] for h in layout_literals(path, tmp_path)] == ["'run.json'", "'traces/'", "/ 'ncu'"]


def test_names_inside_a_run_directory(tmp_path: Path) -> None:
    where = RunDir(tmp_path)
    assert where.run_json == tmp_path / "run.json" and where.partial_json == tmp_path / "run.partial.json"
    assert where.child_runs(run_layout.NCU_DIR) == tmp_path / "ncu" / "runs"
    assert where.worker_task("rank") == tmp_path / "worker.rank.json"
    assert trace_name(3, "gemm/sq/m=1 n=2") == "traces/0003-gemm_sq_m=1_n=2.json.gz"
    assert trace_name(3, "gemm/sq/m=1", rank=1) == "traces/0003-gemm_sq_m=1.rank1.json.gz"
    assert not where.holds_record()
    where.run_json.write_text("{}")
    assert where.holds_record()
