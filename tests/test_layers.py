"""The house's structure (DESIGN.md), read from the import statements of every file.

perfkit installs one import name. The repository's top-level folders profiler/, workloads/,
analyzers/, roofline/, reports/ and dashboard/ are the subpackages perfkit.<folder> (perfkit/<folder>
is a link to ../<folder>). A package group is one of those folders or `perfkit.<sub>` (perfkit/core,
perfkit/store, ...; perfkit/cli.py counts as `perfkit.cli`). Every import counts, also one inside a
function or under TYPE_CHECKING: a lazy import is still a dependency, and one that closes a circle
between two files hides that circle rather than removing it.
"""

from __future__ import annotations

import ast
import functools
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("profiler", "workloads", "analyzers", "roofline", "reports", "dashboard")
OLD_NAMES = FOLDERS  # top-level import names perfkit no longer installs

# Lowest first. A group may import only groups of a lower rank (and itself).
RANK = {
    "perfkit.core": 0,
    "perfkit.regression": 1,
    "perfkit.store": 1,
    "analyzers": 1,
    "profiler": 2,
    "roofline": 3,
    "workloads": 4,
    "perfkit.comparison": 5,
    "perfkit.ingest": 5,  # other tools' files -> typed runs (serving ones through workloads/)
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

# Third-party packages that only some places may import (DESIGN.md): the prefix of the importing
# module that may.
RESTRICTED = {
    "sqlalchemy": ("perfkit.store",),
    "streamlit": ("perfkit.dashboard",),
    "torch": ("perfkit.workloads", "perfkit.profiler", "perfkit.roofline.calibrate", "perfkit.pipeline",
              "perfkit.pytest_plugin", "perfkit.api"),
    "triton": ("perfkit.workloads", "perfkit.profiler", "perfkit.roofline.calibrate", "perfkit.pipeline"),
    "jax": ("perfkit.workloads.custom",),  # lazily, in the Pallas runner only
}


@dataclass(frozen=True)
class Import:
    src: str  # importing module
    target: str  # imported module (a perfkit module, or a third-party top-level name)
    line: int
    lazy: bool  # inside a function (or class body): runs later than the module's own import


def source_files() -> Iterator[tuple[str, Path]]:
    """(module name, file) for every module of the perfkit package, folders included once."""
    for path in sorted((ROOT / "perfkit").rglob("*.py")):
        rel = path.relative_to(ROOT / "perfkit")
        if rel.parts[0] in FOLDERS:  # the links; walked below from the real folder
            continue
        yield module_name(("perfkit", *rel.with_suffix("").parts)), path
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT / folder)
            yield module_name(("perfkit", folder, *rel.with_suffix("").parts)), path


def module_name(parts: tuple[str, ...]) -> str:
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = dict(source_files())
PACKAGES = {m for m, p in MODULES.items() if p.name == "__init__.py"}


def resolve(src: str, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = src.split(".") if src in PACKAGES else src.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


@functools.cache
def parse(path: Path) -> ast.Module:
    """One parse per file for every check of the session (the checks walk the same ~1,200 files)."""
    return ast.parse(path.read_text(), str(path))


@functools.cache
def imports_of(src: str, path: Path) -> list[Import]:
    tree = parse(path)
    out: list[Import] = []

    def visit(node: ast.AST, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = lazy or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            if isinstance(child, ast.Import):
                out.extend(Import(src, a.name, child.lineno, lazy) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                module = resolve(src, child)
                names = [f"{module}.{a.name}" for a in child.names]
                subs = [n for n in names if n in MODULES]  # `from pkg import module`
                out.extend(Import(src, t, child.lineno, lazy) for t in (subs or [module]))
                if subs and len(subs) < len(names):
                    out.append(Import(src, module, child.lineno, lazy))
            visit(child, inner)

    visit(tree, False)
    return out


ALL_IMPORTS = [imp for src, path in MODULES.items() for imp in imports_of(src, path)]
PROJECT_IMPORTS = [i for i in ALL_IMPORTS if i.target.split(".")[0] == "perfkit"]


def group(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "perfkit"
    return parts[1] if parts[1] in FOLDERS else f"perfkit.{parts[1]}"


def group_edges() -> dict[tuple[str, str], list[str]]:
    """(importing group, imported group) -> the 'module:line -> module' lines that make the edge."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for imp in PROJECT_IMPORTS:
        a, b = group(imp.src), group(imp.target)
        if a != b:
            edges[(a, b)].append(f"{imp.src}:{imp.line} -> {imp.target}")
    return edges


def cycles(edges: dict[tuple[str, str], list[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
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


def file_edges() -> dict[tuple[str, str], list[str]]:
    """Module -> module edges (lazy imports included), a package's __init__ left out as a target
    when it only re-exports nothing (an import of pkg.mod runs pkg/__init__ first, which is fine)."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for imp in PROJECT_IMPORTS:
        target = imp.target
        while target not in MODULES and "." in target:  # `from module import name`
            target = target.rsplit(".", 1)[0]
        if target != imp.src and target in MODULES:
            edges[(imp.src, target)].append(f"{imp.src}:{imp.line}{' (lazy)' if imp.lazy else ''}")
    return edges


def test_no_import_cycle_between_package_groups() -> None:
    assert cycles(group_edges()) == []


def test_no_import_cycle_between_files_lazy_imports_included() -> None:
    edges = file_edges()
    found = cycles(edges)
    detail = [" <-> ".join(c) + ": " + "; ".join(
        line for (a, b), lines in edges.items() if a in c and b in c for line in lines) for c in found]
    assert found == [], "file-level import circles:\n" + "\n".join(detail)


def test_every_group_has_a_rank() -> None:
    groups = {g for edge in group_edges() for g in edge}
    assert groups <= set(RANK), f"give these groups a layer in RANK: {sorted(groups - set(RANK))}"


def test_imports_point_down_the_layers() -> None:
    upward = [line for (a, b), lines in group_edges().items() if RANK[b] >= RANK[a] for line in lines]
    assert upward == [], "imports from a layer to one not below it:\n" + "\n".join(upward)


def test_nothing_below_the_cli_imports_it() -> None:
    allowed = {"perfkit.cli", "perfkit.commands", "perfkit.__main__"}
    bad = [line for (a, b), lines in group_edges().items()
           if b in ("perfkit.cli", "perfkit.commands") and a not in allowed for line in lines]
    assert bad == []


def test_core_imports_nothing_else_of_the_project() -> None:
    assert [edge for edge in group_edges() if edge[0] == "perfkit.core"] == []


def test_the_store_imports_only_core() -> None:
    assert [lines for (a, b), lines in group_edges().items()
            if a == "perfkit.store" and b != "perfkit.core"] == []


def test_restricted_packages_only_where_allowed() -> None:
    bad = [f"{i.src}:{i.line} imports {i.target}" for i in ALL_IMPORTS
           if (top := i.target.split(".")[0]) in RESTRICTED
           and not any(i.src == p or i.src.startswith(p + ".") for p in RESTRICTED[top])]
    assert bad == [], "\n".join(bad)


def test_no_old_top_level_import_name() -> None:
    """perfkit installs one import name: nothing imports `profiler`, `reports`, ... directly."""
    tests_and_benchmarks = [(str(p), p) for d in ("tests", "benchmarks", "examples")
                            for p in sorted((ROOT / d).rglob("*.py"))]
    bad = [f"{i.src}:{i.line} imports {i.target}"
           for src, path in [*MODULES.items(), *tests_and_benchmarks] for i in imports_of(src, path)
           if i.target.split(".")[0] in OLD_NAMES]
    assert bad == [], "\n".join(bad)


def test_the_checker_sees_a_cycle() -> None:
    fake = {("a", "b"): ["a.x -> b.y"], ("b", "a"): ["b.y -> a.x"], ("b", "c"): ["b -> c"]}
    assert cycles(fake) == [["a", "b"]]


def test_the_checker_sees_a_lazy_import(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("import os\n\ndef f():\n    from perfkit.core import errors\n    return errors\n")
    found = imports_of("perfkit.x.m", path)
    assert [(i.target, i.lazy) for i in found] == [("os", False), ("perfkit.core.errors", True)]


def test_one_writer_each_for_run_json_and_run_partial_json() -> None:
    """Only perfkit/pipeline/run_files.py names the record files in a write."""
    writers = []
    for path in MODULES.values():
        text = path.read_text()
        if "write_json_atomic(" in text and ("RUN_FILE" in text or "PARTIAL_FILE" in text):
            writers.append(str(path.relative_to(ROOT)))
    assert sorted(writers) == ["perfkit/pipeline/run_files.py"]


def defined_names(tree: ast.Module) -> set[str]:
    """Names a module binds itself at top level (def, class, assignment, for/with/if/try bodies);
    an imported name is not defined here."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif not isinstance(node, ast.Import | ast.ImportFrom):
            names.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    return names


def re_exports(path: Path) -> list[str]:
    """Names in the module's `__all__` that it does not define itself (it re-exports them)."""
    tree = parse(path) if path.is_relative_to(ROOT) else ast.parse(path.read_text(), str(path))
    listed = [elt.value for node in tree.body if isinstance(node, ast.Assign)
              and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
              and isinstance(node.value, ast.List | ast.Tuple)
              for elt in node.value.elts if isinstance(elt, ast.Constant)]
    own = defined_names(tree)
    return [name for name in listed if name not in own]


def test_no_module_re_exports_names_through_all() -> None:
    """A name is imported from the module that defines it: no `__all__` lists someone else's."""
    files = [*MODULES.values(), *sorted((ROOT / "tests").rglob("*.py")), *sorted((ROOT / "benchmarks").rglob("*.py"))]
    bad = [f"{p.relative_to(ROOT)}: {names}" for p in files if (names := re_exports(p))]
    assert bad == [], "import these from where they are defined:\n" + "\n".join(bad)


def test_no_star_or_same_name_alias_import() -> None:
    """`from m import *`, `import a as a` and `from m import x as x` exist only to re-export."""
    bad = [f"{p.relative_to(ROOT)}:{node.lineno}" for p in MODULES.values()
           for node in ast.walk(parse(p))
           if isinstance(node, ast.Import | ast.ImportFrom)
           for a in node.names if a.name == "*" or a.asname == a.name]
    assert bad == [], "\n".join(bad)


def test_the_checker_sees_a_re_export(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("from a import b, c\nfrom d import *\n\nX = 1\n\ndef f():\n    pass\n\n"
                    "class K:\n    pass\n\n__all__ = ['X', 'b', 'f', 'K', 'e']\n")
    assert re_exports(path) == ["b", "e"]
    assert re_exports(ROOT / "perfkit" / "regression" / "gate" / "stats.py") == []


def test_tests_and_benchmarks_reach_the_database_only_through_the_store() -> None:
    """sqlalchemy only in perfkit/store, tests and benchmarks included (perfkit.store.admin gives
    them the live schema and throwaway PostgreSQL databases)."""
    files = [p for d in ("tests", "benchmarks", "examples", "scripts") for p in sorted((ROOT / d).rglob("*.py"))]
    bad = [f"{p.relative_to(ROOT)}:{i.line} imports {i.target}" for p in files for i in imports_of(str(p), p)
           if i.target.split(".")[0] == "sqlalchemy" or i.target == "perfkit.store.schema"]
    assert bad == [], "\n".join(bad)
