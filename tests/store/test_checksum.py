"""The canonical row encoding behind the export checksums: the same rows give the same checksum
whatever the backend hands back (1 or True, -0.0 or 0.0), and any change to a row changes it."""

from __future__ import annotations

import pytest

from perfkit.store.checksum import TableChecksum, checksum, encode_row

KINDS = ("int", "float", "bool", "string")


def test_backend_spellings_of_one_value_encode_alike() -> None:
    assert encode_row(KINDS, (1, -0.0, 1, "x")) == encode_row(KINDS, (True, 0.0, True, "x"))
    assert encode_row(KINDS, (2, 3, 0, "x")) == encode_row(KINDS, (2.0, 3.0, False, "x"))  # a REAL read as int
    assert checksum(KINDS, [(1, 0.5, True, "é")]) == checksum(KINDS, [(1, 0.5, 1, "é")])


@pytest.mark.parametrize("other", [
    (1, 0.5, True, "ab"),
    (2, 0.5, True, "a"),
    (1, 0.5000000000000001, True, "a"),
    (1, 0.5, False, "a"),
    (1, 0.5, None, "a"),
    (1, 0.5, True, ""),
    (1, 0.5, True, None),
    (None, 0.5, True, "a"),
])
def test_any_change_changes_the_checksum(other: tuple[object, ...]) -> None:
    base = (1, 0.5, True, "a")
    assert checksum(KINDS, [base]) != checksum(KINDS, [other])


def test_field_and_row_boundaries_are_unambiguous() -> None:
    two = ("string", "string")
    assert checksum(two, [("ab", "c")]) != checksum(two, [("a", "bc")])
    assert checksum(("string",), [("ab",), ("c",)]) != checksum(("string",), [("a",), ("bc",)])
    assert checksum(("int", "int"), [(1, 23)]) != checksum(("int", "int"), [(12, 3)])


def test_order_and_count_count() -> None:
    rows = [(1, 0.5, True, "a"), (2, 1.5, False, "b")]
    assert checksum(KINDS, rows) != checksum(KINDS, rows[::-1])
    acc = TableChecksum(KINDS)
    acc.update(rows[:1])
    acc.update(rows[1:])
    assert acc.rows == 2 and acc.hexdigest() == checksum(KINDS, rows)
    assert checksum(KINDS, []) != checksum(KINDS, rows[:1])


def test_special_floats_have_one_spelling() -> None:
    assert encode_row(("float",), (float("nan"),)) == b"fnan;"
    assert encode_row(("float",), (float("-inf"),)) == b"f-inf;"
    assert encode_row(("float",), (1.0,)) == b"f0x1.0000000000000p+0;"


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown column kind"):
        TableChecksum(("decimal",))
