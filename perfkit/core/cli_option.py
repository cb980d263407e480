"""A spec field's command-line option, declared on the field (`Annotated[int, CliOption(...)]`).

The spec model is the one place an option is written: `perfkit.commands.spec_options` derives
the argparse arguments from these markers, maps the parsed arguments back into the spec's dict
and a validation error's location back to the option that set it. Adding an option is one field
declaration (or one marker on an existing field).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from perfkit.core.errors import SpecError


@dataclass(frozen=True)
class CliOption:
    flag: str  # "--requests"; a name without dashes is a positional argument ("url")
    help: str | None = None
    metavar: str | None = None
    type: Callable[[str], Any] | None = None  # argparse type; default: from the field's annotation
    parse: Callable[[str, str], Any] | None = None  # (text, flag) -> value; errors name the flag
    group: str | None = None  # options of one group exclude each other
    default: str | None = None  # taken, as if typed, when no option of its group was given
    also: tuple[tuple[str, Any], ...] = ()  # sibling fields the option sets with its own
    invert: bool = False  # a bool field the option sets to False (--no-usage)

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    @property
    def shown(self) -> str:
        """How an error names the option: `--rate`, or `URL` for a positional."""
        return self.flag if self.flag.startswith("-") else self.flag.upper()


def comma_numbers(kind: type[int] | type[float]) -> Callable[[str, str], list[Any]]:
    """A parser of `1,4,16` into numbers of `kind`."""

    def parse(text: str, flag: str) -> list[Any]:
        try:
            return [kind(v) for v in text.split(",") if v.strip()]
        except ValueError:
            raise SpecError(f"{flag} {text[:80]!r}: not a comma-separated list of numbers; e.g. 1,4,16") from None

    return parse
