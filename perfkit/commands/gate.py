"""`perfkit gate --baseline B --candidate C [--policy gate.yaml]`: fail CI on a regression.

One test per measurement (a point's time, flop/s and bytes/s are one), against the store's
history of each metric when there is one. Verdicts: regressed / improved (p <= max_p after the
false-discovery-rate adjustment over the tests AND at least min_effect), unchanged (the interval
excludes a regression of min_effect), noisy (the measurement scatters), suspect (not significant, but
at least min_effect worse and close), inconclusive (the data can tell neither; the reason says
why), incomparable: each as perfkit.regression.gate.types.VERDICT_MEANING says. Exit 1 when a verdict of the
policy's fail_on occurs (default: regressed), 0 otherwise, 2 on bad input (unknown run, bad
policy, the same run twice, nothing in common, nothing comparable). A run is a run directory, a
run id, a commit, or BRANCH@GPU[:SPEC] (the branch's latest run of the candidate's spec, or of
SPEC, other than the candidate); `perfkit runs` lists runs. Prints the verdicts, then writes a
Markdown summary (--markdown FILE; appended to $GITHUB_STEP_SUMMARY when set) and JUnit XML
(--junit FILE), each on its own: one that cannot be written is a warning line on stderr and the
others are still written; the exit is then 2, unless the gate failed (exit 1 wins, so a
regression is never reported as an I/O problem). See docs/ci.md.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from perfkit.commands._store_args import add_comparison_options, add_db, add_format
from perfkit.commands._types import run_selector


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "gate", help="exit 1 when the candidate regressed against the baseline",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--baseline", required=True, metavar="RUN", type=run_selector,
                   help="run directory, run id, commit, or BRANCH@GPU[:SPEC] (its latest run of the "
                        "candidate's spec, or of SPEC, other than the candidate)")
    p.add_argument("--candidate", required=True, metavar="RUN", type=run_selector,
                   help="run directory, run id, commit, or BRANCH@GPU[:SPEC]")
    add_db(p)
    add_format(p)
    add_comparison_options(p)
    p.add_argument("--markdown", metavar="FILE", default=None, help="write the Markdown summary here")
    p.add_argument("--junit", metavar="FILE", default=None, help="write JUnit XML here")
    p.add_argument("--no-step-summary", action="store_true",
                   help="do not append the summary to $GITHUB_STEP_SUMMARY")
    return p


def run(args: argparse.Namespace) -> int:
    from perfkit.commands._out_file import checked_out_file
    from perfkit.commands._store_args import compare_from_args, render
    from perfkit.comparison.selectors import is_run_path
    from perfkit.core.errors import EXIT_BAD_INPUT, EXIT_OK, EXIT_REGRESSION, StoreError
    from perfkit.regression.gate.types import Verdict
    from perfkit.reports.markdown.gate import render_markdown
    from perfkit.store.engine import describe_url

    if args.junit:
        args.junit = checked_out_file("--junit", Path(args.junit), "gate-junit.xml", (".xml",))
    if args.markdown:
        args.markdown = checked_out_file("--markdown", Path(args.markdown), "gate.md", (".md", ".markdown", ".txt"))
    result = compare_from_args(args.baseline, args.candidate, args)
    md = render_markdown(result)
    if all(c.verdict == Verdict.INCOMPARABLE for c in result.comparisons):
        for what, write in _outputs(args, result, md):  # the CI's summary and report say why (the headline)
            _written(what, write)
        reasons = "; ".join(result.run_reasons) or result.comparisons[0].reason
        stored = not (is_run_path(args.baseline) and is_run_path(args.candidate))
        where = f" (stored in {describe_url(args.db)})" if stored else ""  # a value edited there is named
        raise StoreError(f"{args.baseline} vs {args.candidate}{where}: nothing comparable ({reasons}); "
                         "gate runs on the same GPU, driver and clocks")
    sys.stdout.write(md if args.format == "md" else render(result, args.format))
    sys.stdout.flush()
    unwritten = [what for what, write in _outputs(args, result, md) if not _written(what, write)]
    if result.failed:  # a regression's exit 1 is never hidden by an output that could not be written
        return EXIT_REGRESSION
    return EXIT_BAD_INPUT if unwritten else EXIT_OK


def _outputs(args: argparse.Namespace, result: Any, md: str) -> list[tuple[str, Callable[[], None]]]:
    """(what, write) of every CI output asked for: --markdown, $GITHUB_STEP_SUMMARY, --junit."""
    from perfkit.core.atomic import write_bytes_atomic
    from perfkit.reports.junit import render_junit

    def append_summary(path: str) -> None:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(md + "\n")

    out: list[tuple[str, Callable[[], None]]] = []
    if args.markdown:
        out.append((f"--markdown {args.markdown}", lambda: write_bytes_atomic(args.markdown, md.encode("utf-8"))))
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary and not args.no_step_summary:
        out.append((f"$GITHUB_STEP_SUMMARY ({summary})", lambda: append_summary(summary)))
    if args.junit:
        out.append((f"--junit {args.junit}",
                    lambda: write_bytes_atomic(args.junit, render_junit(result).encode("utf-8"))))
    return out


def _written(what: str, write: Callable[[], None]) -> bool:
    """Write one output; when it fails, one warning line on stderr and False (the others go on)."""
    from perfkit.core.errors import describe_os_error
    from perfkit.core.terminal import terminal_safe

    try:
        write()
    except OSError as exc:
        print(terminal_safe(f"perfkit: warning: {what} not written: {describe_os_error(exc)}"), file=sys.stderr)
        return False
    return True
