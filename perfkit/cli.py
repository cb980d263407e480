"""The `perfkit` command line: argparse front, one module per subcommand under perfkit.commands.

Each command module defines `add_parser(subparsers)` and `run(args) -> int`; modules are
imported when the parser is built, and they import their heavy dependencies inside `run`. When
the first argument names a command, only that command's module is imported and only its parser
built (what `perfkit analyze ...` parses and prints is the same; it skips the others).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from perfkit.core.errors import EXIT_BAD_INPUT, capped, exit_code_of
from perfkit.core.regular_file import check_not_special, input_path_of
from perfkit.core.stdout_guard import guard_stdout
from perfkit.core.version import __version__

# Options that name files perfkit writes: /dev/null or a pipe there is the user's choice.
OUTPUT_OPTIONS = frozenset({"out", "html", "json", "junit", "markdown", "demo_dir"})

# Subcommand modules under perfkit/commands/, in the order --help lists them.
COMMANDS: tuple[str, ...] = (
    "profile",
    "serve-bench",
    "serve-sweep",
    "serve",
    "calibrate",
    "roofline",
    "report",
    "dashboard",
    "analyze",
    "replay",
    "memory",
    "ingest",
    "compare",
    "gate",
    "history",
    "runs",
    "store",
    "ab",
    "doctor",
)


def module_name(command: str) -> str:
    """The module under perfkit.commands of a command (`serve-bench` -> perfkit.commands.serve_bench)."""
    return f"perfkit.commands.{command.replace('-', '_')}"


class OneLineParser(argparse.ArgumentParser):
    """argparse with its usage errors on one line (exit 2); subcommand parsers inherit it."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {capped(message)}; see `{self.prog} --help`\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of `command` (one of COMMANDS) alone."""
    parser = OneLineParser(
        prog="perfkit",
        description="Profile LLM inference workloads, analyze traces, gate regressions.",
    )
    parser.add_argument("--version", action="version", version=f"perfkit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS if command is None else (command,):
        module = importlib.import_module(module_name(name))
        command_parser = module.add_parser(sub)
        command_parser.set_defaults(_run=module.run)
    return parser


def refuse_special_inputs(args: argparse.Namespace) -> None:
    """A FIFO, device or socket given as an input (a path, a sqlite:/// URL) is one line, exit 2:
    reading it would wait for a writer, or never end (perfkit.core.regular_file)."""
    for name, value in vars(args).items():
        if name in OUTPUT_OPTIONS:
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, (str, os.PathLike)) and str(item):
                check_not_special(input_path_of(str(item)))


def run_command(args: argparse.Namespace) -> int:
    refuse_special_inputs(args)
    try:
        return int(args._run(args))
    except Exception as exc:
        # a store driver's error no command caught: one line (sqlalchemy is imported only by commands that use it)
        sa_exc = sys.modules.get("sqlalchemy.exc")
        if sa_exc is not None and isinstance(exc, sa_exc.DBAPIError):
            from perfkit.store.engine import uncaught_store_error

            db = getattr(args, "db", None)
            raise uncaught_store_error(db if isinstance(db, str) else None, exc) from None
        raise


def main(argv: Sequence[str] | None = None) -> int:
    guard_stdout()  # a closed stdout drops what is printed, never the work (perfkit.core.stdout_guard)
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(words[0] if words and words[0] in COMMANDS else None)
    args = parser.parse_args(words)
    if getattr(args, "_run", None) is None:
        parser.print_help()
        return EXIT_BAD_INPUT
    return exit_code_of(lambda: run_command(args))


if __name__ == "__main__":
    raise SystemExit(main())
