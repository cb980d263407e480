"""perfkit.core.yaml_source: hostile YAML ends in one short located error, never a traceback or GBs."""

from __future__ import annotations

import resource
from pathlib import Path

import pytest

from perfkit.core.errors import SpecError
from perfkit.core.yaml_source import MAX_DEPTH, load_yaml


def _load(tmp_path: Path, text: str) -> SpecError:
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as info:
        load_yaml(path)
    message = str(info.value)
    assert "\n" not in message and len(message) < 1000, message[:300]
    assert message.startswith(str(path))
    return info.value


def test_duplicate_key_names_both_positions(tmp_path: Path) -> None:
    err = _load(tmp_path, "name: a\nworkloads: []\nname: b\n")
    assert str(err).endswith(":3:1: key 'name' is given twice (first at line 1); keep one")


def test_duplicate_key_inside_a_workload(tmp_path: Path) -> None:
    err = _load(tmp_path, "name: a\nworkloads:\n  - kind: gemm\n    m: 1\n    m: 2\n")
    assert ":5:5: key 'm' is given twice (first at line 4)" in str(err)


@pytest.mark.slow
@pytest.mark.parametrize("form", ["flow", "block"])
def test_deep_nesting_is_refused_quickly(tmp_path: Path, form: str) -> None:
    depth = 3000
    text = "a: " + "[" * depth + "]" * depth + "\n" if form == "flow" else "".join(
        "  " * i + f"k{i}:\n" for i in range(depth)) + "  " * depth + "v: 1\n"
    err = _load(tmp_path, text)
    assert "deep" in str(err) or "nested" in str(err)


def test_moderate_nesting_still_loads(tmp_path: Path) -> None:
    depth = MAX_DEPTH // 2
    path = tmp_path / "ok.yaml"
    path.write_text("a: " + "[" * depth + "1" + "]" * depth + "\n")
    value = load_yaml(path).data["a"]
    for _ in range(depth):
        value = value[0]
    assert value == 1


def test_alias_bomb_is_refused_without_expanding(tmp_path: Path) -> None:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 10):
        refs = ", ".join([f"*a{i - 1}"] * 9)
        lines.append(f"a{i}: &a{i} [{refs}]")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    err = _load(tmp_path, "\n".join(lines) + "\n")
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert "aliases are expanded" in str(err)
    assert grown_kb < 200_000  # the expansion would be ~400M values


def test_anchors_and_merge_keys_still_work(tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text("base: &b {m: 1, n: 2}\nuse: *b\nmerged:\n  <<: *b\n  n: 5\n")
    data = load_yaml(path).data
    assert data["use"] == {"m": 1, "n": 2} and data["merged"] == {"m": 1, "n": 5}


def test_long_syntax_problem_is_shortened(tmp_path: Path) -> None:
    err = _load(tmp_path, "a: 'unterminated " + "x" * 5000 + "\n")
    assert "YAML syntax error" in str(err)
