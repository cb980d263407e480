"""The house's structure (DESIGN.md): package groups import each other in one direction only.

A package group is `perfkit.<sub>` (perfkit/core, perfkit/store, ...; perfkit/cli.py counts as
`perfkit.cli`) or a top-level folder (profiler, workloads, ...). Every import counts, also one
inside a function: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOPS = ("perfkit", "profiler", "workloads", "analyzers", "roofline", "reports", "dashboard")

# Lowest first. A group may import only groups of a lower rank (and itself).
RANK = {
    "perfkit.core": 0,
    "perfkit.regression": 1,
    "analyzers": 1,
    "perfkit.store": 2,
    "profiler": 3,
    "roofline": 4,
    "workloads": 5,
    "reports": 6,
    "perfkit.pipeline": 7,
    "dashboard": 7,
    "perfkit.api": 8,
    "perfkit.pytest_plugin": 9,
    "perfkit.commands": 9,
    "perfkit.cli": 10,
    "perfkit": 10,  # perfkit/__init__.py (its lazy `bench` reaches perfkit.api)
    "perfkit.__main__": 11,
}


def group(module: str) -> str:
    parts = module.split(".")
    return f"perfkit.{parts[1]}" if parts[0] == "perfkit" and len(parts) > 1 else parts[0]


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    name = ".".join(rel.parts)
    return name[: -len(".__init__")] if name.endswith(".__init__") else name


def import_edges() -> dict[tuple[str, str], list[str]]:
    """(importing group, imported group) -> the 'module -> module' lines that make the edge."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for top in TOPS:
        for path in sorted((ROOT / top).rglob("*.py")):
            src = module_name(path)
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    targets = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    targets = [node.module]
                else:
                    continue
                for target in targets:
                    if target.split(".")[0] in TOPS and group(target) != group(src):
                        edges[(group(src), group(target))].append(f"{src} -> {target}")
    return edges


def cycles(edges: dict[tuple[str, str], list[str]]) -> list[list[str]]:
    """Strongly connected components of more than one group (Tarjan)."""
    adj: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        adj[a].add(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(adj[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(adj):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_between_package_groups() -> None:
    assert cycles(import_edges()) == []


def test_every_group_has_a_rank() -> None:
    groups = {g for edge in import_edges() for g in edge}
    assert groups <= set(RANK), f"give these groups a layer in RANK: {sorted(groups - set(RANK))}"


def test_imports_point_down_the_layers() -> None:
    upward = [line for (a, b), lines in import_edges().items() if RANK[b] >= RANK[a] for line in lines]
    assert upward == [], "imports from a layer to one not below it:\n" + "\n".join(upward)


def test_nothing_below_the_cli_imports_it() -> None:
    allowed = {"perfkit.cli", "perfkit.commands", "perfkit.__main__"}
    bad = [line for (a, b), lines in import_edges().items()
           if b in ("perfkit.cli", "perfkit.commands") and a not in allowed for line in lines]
    assert bad == []


def test_core_imports_nothing_else_of_the_project() -> None:
    assert [edge for edge in import_edges() if edge[0] == "perfkit.core"] == []


def test_the_checker_sees_a_cycle() -> None:
    fake = {("a", "b"): ["a.x -> b.y"], ("b", "a"): ["b.y -> a.x"], ("b", "c"): ["b -> c"]}
    assert cycles(fake) == [["a", "b"]]


def test_one_writer_each_for_run_json_and_run_partial_json() -> None:
    """Only perfkit/pipeline/run_files.py names the record files in a write."""
    writers = []
    for top in TOPS:
        for path in (ROOT / top).rglob("*.py"):
            text = path.read_text()
            if "write_json_atomic(" in text and ("RUN_FILE" in text or "PARTIAL_FILE" in text):
                writers.append(str(path.relative_to(ROOT)))
    assert sorted(writers) == ["perfkit/pipeline/run_files.py"]
