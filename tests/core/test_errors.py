"""perfkit.core.errors: a user's value quoted in a message is shortened; a printed line is capped."""

from __future__ import annotations

from perfkit.core.errors import LINE_LIMIT, WORD_LIMIT, capped, echo, shorten


def test_short_values_are_kept_whole() -> None:
    assert shorten("main@H100") == "main@H100" and echo("fp7") == "'fp7'"


def test_a_long_value_keeps_its_start_and_end_and_says_its_length() -> None:
    value = "a" * 5000 + "END"
    short = shorten(value)
    assert short.startswith("aaaa") and "…" in short and short.endswith("aEND (5003 characters)")
    assert len(short) < 110
    assert echo(value).startswith("'aaa") and "(5005 characters)" in echo(value)


def test_a_printed_line_is_one_line_with_no_giant_word() -> None:
    line = capped("spec.yaml:3:5: 'kind' is '" + "x" * 10_000 + "';\nfix it")
    assert "\n" not in line and line.endswith("fix it") and len(line) < 2 * WORD_LIMIT
    assert len(capped("word " * 10_000)) <= LINE_LIMIT + 30
