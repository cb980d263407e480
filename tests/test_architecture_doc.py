"""docs/architecture.md and the README's Architecture section name only things that exist.

Every repository path, backticked or in the layer picture, must exist (`<kind>` placeholders
match any name), and every "`name` in `path.py`" must be defined in that file.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOPS = ("perfkit", "profiler", "workloads", "analyzers", "roofline", "reports", "dashboard",
        "tests", "docs", "benchmarks", "examples", "scripts")
BACKTICKED = re.compile(r"`([^`\s]+)`")
FENCED = re.compile(r"^```\n(.*?)^```", re.M | re.S)
NAME_IN_FILE = re.compile(r"`(\w+)(?:\(\))?` in `([\w/.]+\.py)`")


def architecture_texts() -> dict[str, str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## Architecture\n", 1)[1].split("\n## ", 1)[0]
    return {"docs/architecture.md": (ROOT / "docs" / "architecture.md").read_text(),
            "README.md#architecture": section}


def repo_paths(text: str) -> list[str]:
    """Paths inside the repository (first part a top-level entry), backticked or in a picture."""
    tokens = BACKTICKED.findall(text.replace("\n", " "))
    tokens += [t.rstrip(",") for block in FENCED.findall(text) for t in block.split()]
    out = []
    for token in tokens:
        path = token.rstrip("/")
        if "/" in token and token.split("/")[0] in TOPS and path not in out:
            out.append(path)
    return out


def exists(path: str) -> bool:
    pattern = re.sub(r"<[^>]+>", "*", path)
    return any(ROOT.glob(pattern)) if "*" in pattern else (ROOT / pattern).exists()


def test_every_named_path_exists() -> None:
    for where, text in architecture_texts().items():
        paths = repo_paths(text)
        assert len(paths) >= 5, f"{where}: expected repository paths in backticks"
        missing = [p for p in paths if not exists(p)]
        assert missing == [], f"{where} names paths that do not exist: {missing}"


def test_every_name_is_defined_where_the_doc_says() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text().replace("\n", " ")
    pairs = NAME_IN_FILE.findall(re.sub(r" +", " ", text))
    assert len(pairs) >= 10
    wrong = []
    for name, path in pairs:
        source = (ROOT / path).read_text()
        if not re.search(rf"^\s*(?:def|class) {name}\b|^{name}\b\s*[:=]", source, re.M):
            wrong.append(f"{name} in {path}")
    assert wrong == [], f"docs/architecture.md: not defined there: {wrong}"


def test_the_checker_catches_a_wrong_path() -> None:
    text = ("see `perfkit/nope.py` and `runs/<id>/` and `workloads/<kind>/spec.py`\n"
            "```\nperfkit/cli.py, roofline/   the top\n```\n")
    assert repo_paths(text) == [
        "perfkit/nope.py", "workloads/<kind>/spec.py", "perfkit/cli.py", "roofline"]
    assert not exists("perfkit/nope.py")
    assert exists("workloads/<kind>/spec.py")
