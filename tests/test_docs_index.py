"""docs/README.md is the index: every docs page is reachable from it, relative links in the
README, CONTRIBUTING and docs resolve, and user docs hold no issue numbers (lab notes live in
benchmarks/results/ and docs/internals/)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
INDEX = DOCS / "README.md"
FENCED = re.compile(r"^```.*?^```", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
ISSUE_NUMBER = re.compile(r"\bissues?\s*#?\d+|\(issue\b|(?:^|[\s(\[])#\d+\b", re.I | re.M)


def doc_pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def relative_links(page: Path) -> Iterator[tuple[str, Path]]:
    """(target as written, resolved file) of each relative Markdown link outside code."""
    text = INLINE_CODE.sub("", FENCED.sub("", page.read_text()))
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL (http:, mailto:) or an anchor in the same page
        yield target, (page.parent / target.split("#", 1)[0]).resolve()


def issue_numbers(text: str) -> list[str]:
    return [m.group(0).strip() for m in ISSUE_NUMBER.finditer(text)]


def test_every_docs_page_is_reachable_from_the_index() -> None:
    seen, todo = {INDEX.resolve()}, [INDEX]
    while todo:
        for _, target in relative_links(todo.pop()):
            if target.suffix == ".md" and target.is_relative_to(DOCS) and target not in seen:
                seen.add(target)
                todo.append(target)
    unreachable = [str(p.relative_to(ROOT)) for p in doc_pages() if p.resolve() not in seen]
    assert len(doc_pages()) >= 20
    assert unreachable == [], f"docs pages not reachable from docs/README.md: {unreachable}"


def test_relative_links_resolve() -> None:
    pages = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *doc_pages()]
    broken, count = [], 0
    for page in pages:
        for written, target in relative_links(page):
            count += 1
            if not target.exists():
                broken.append(f"{page.relative_to(ROOT)}: {written}")
    assert count >= 50
    assert broken == [], f"links to files that do not exist: {broken}"


def test_docs_hold_no_issue_numbers() -> None:
    found = {str(p.relative_to(ROOT)): issue_numbers(p.read_text()) for p in doc_pages()}
    found = {page: hits for page, hits in found.items() if hits}
    assert found == {}, f"issue numbers in user docs (move lab notes to docs/internals/ or benchmarks/results/): {found}"


def test_the_checks_catch_what_they_look_for(tmp_path: Path) -> None:
    assert issue_numbers("fixed in issue 12; see #34 and (issue") == ["issue 12", "#34", "(issue"]
    assert issue_numbers("Issue #7") == ["Issue #7"]
    assert issue_numbers("ProfilerStep#1, vllm-project/vllm#54101, `#2`, ## Heading") == []
    page = tmp_path / "p.md"
    page.write_text("[a](b.md#x) [u](https://x.org/a.md) [h](#top)\n```\n[c](in-code.md)\n```\n`[d](e.md)`")
    assert [w for w, _ in relative_links(page)] == ["b.md#x"]
