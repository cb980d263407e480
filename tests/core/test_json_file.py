"""perfkit.core.json_file: strict UTF-8, nesting counted before parsing, one located line each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfkit.core.errors import SpecError, StoreError
from perfkit.core.json_file import MAX_DEPTH, line_col, load_json, max_depth, too_deep_at


@pytest.mark.parametrize(("text", "depth"), [
    ("", 0),
    ("1", 0),
    ('{"a": [1, {"b": []}]}', 4),
    ('{"a": "[[[[{{{{"}', 1),  # brackets inside strings do not nest
    ('["]]]]"]', 1),
    ('["\\"[[[", ["x"]]', 2),  # an escaped quote does not end the string
    ('["\\\\", [["x"]]]', 3),  # an escaped backslash does not escape the quote after it
    ('{"k\\u00e9[": "\u00e9[", "b": [[1]]}', 3),
])
def test_max_depth_counts_structure_only(text: str, depth: int) -> None:
    assert max_depth(text) == depth


def test_too_deep_at_gives_the_offset_of_the_first_bracket_past_the_limit() -> None:
    text = '{"s": "[[[[", "a": [[[1]]]}'
    assert too_deep_at(text, 4) is None
    assert too_deep_at(text, 3) == text.index("[[1") + 1
    assert line_col("ab\ncd\nef", 7) == (3, 2)


def test_a_nesting_bomb_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "bomb.json"
    path.write_text('{\n "a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(StoreError) as err:
        load_json(path, "do this")
    assert str(err.value) == f"{path}:2:{6 + MAX_DEPTH}: nested more than {MAX_DEPTH} levels deep; do this"


def test_as_deep_as_allowed_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * MAX_DEPTH + "]" * MAX_DEPTH)
    assert load_json(path, "x") is not None


@pytest.mark.parametrize(("data", "says"), [
    (b'{"a": "caf\xe9"}', "not UTF-8 at byte 10; fix it"),
    (b'{"a": 1,}', ":1:9: not valid JSON (Expecting property name enclosed in double quotes); fix it"),
    (b'{"a": 1' + b"0" * 5000 + b"}", "not valid JSON (an integer over 4300 digits); fix it"),
])
def test_each_failure_is_one_line_of_the_callers_kind(tmp_path: Path, data: bytes, says: str) -> None:
    path = tmp_path / "f.json"
    path.write_bytes(data)
    with pytest.raises(SpecError) as err:
        load_json(path, "fix it", SpecError)
    assert str(err.value).startswith(str(path)) and str(err.value).endswith(says) and "\n" not in str(err.value)


def test_nan_and_infinity_parse(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    path.write_text('{"a": NaN, "b": -Infinity}')
    data = load_json(path, "x")
    assert data["a"] != data["a"] and data["b"] == float("-inf")
    assert json.loads(json.dumps(data, allow_nan=True))["b"] == float("-inf")
