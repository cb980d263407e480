"""Required literals of the category rules: sound on every real name, and the category prefilter
changes no category (ASCII fast path, non-ASCII fallback)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from perfkit.analyzers.categories import RULES, _prefiltered, category_of, name_head
from perfkit.analyzers.regex_literals import required_literals

NAMES = Path(__file__).parent / "data" / "kernel_names.tsv"


def _names() -> list[str]:
    return [line.split("\t")[0] for line in NAMES.read_text(encoding="utf-8").splitlines()[1:] if line.strip()]


@pytest.mark.parametrize(("pattern", "flags", "expected"), [
    (r"^memcpy|^dma", re.I, ("dma", "memcpy")),
    (r"ab(cd|ef)+x", 0, ("ab",)),  # "ab" and "x" both required; the longer first run is kept
    (r"(?<![a-z])mm_|_mm(?![a-z])", re.I, ("_mm", "mm_")),
    (r"foo(bar)?", 0, ("foo",)),
    (r"(bar)?|foo", 0, None),  # one branch can match the empty string: no prefilter
    (r"x*y?", 0, None),
    (r"^_fwd_(grouped_)?kernel", 0, ("_fwd_",)),  # "kernel" is too common to filter
    (r"All(Reduce|Gather)", 0, ("gather", "reduce")),  # lowercase: tested on a lowercased name
])
def test_required_literals(pattern: str, flags: int, expected: tuple[str, ...] | None) -> None:
    assert required_literals(re.compile(pattern, flags)) == expected


def test_literals_are_in_every_name_a_rule_matches() -> None:
    checked = 0
    for name in _names():
        head = name_head(name)
        for (_, pattern, literals), (_, same, _) in zip(_prefiltered(), RULES, strict=True):
            assert pattern is same
            if head.isascii() and literals is not None and pattern.search(head):
                assert literals.search(head.lower()), (pattern.pattern[:60], name[:80])
                checked += 1
    assert checked > 400


def test_non_ascii_names_skip_the_prefilter() -> None:
    # re.IGNORECASE lets "ſ" (long s) match "s": "ſdpa" is not ASCII and the lowercased literal
    # "sdpa" is absent from it, so a prefilter would have lost the match
    assert re.search("sdpa", "ſdpa_fwd", re.I)
    assert category_of("ſdpa_fwd") == "attention"
    assert category_of("my_ſdpa_thing_µs") == "attention"


def test_name_head_cuts_the_last_balanced_parameter_list() -> None:
    assert name_head("void f<(int)4>(float*, g(int))") == "void f<(int)4>"
    assert name_head("(a)") == "(a)"  # the list starts the name: kept
    assert name_head("f(a))") == "f(a))"  # unbalanced: kept
    assert name_head("x" * 600 + "(int)") == "x" * 512
