"""`perfkit ab --baseline CMD --candidate CMD`: run two commands interleaved on this machine
(ABBA order, round after round) and compare their wall times pair by pair. Each pair shares the
machine's state, so drift between runs cancels: the design to use when a change is small and
the machine is shared. Exit 1 when the candidate regressed (gate policy), 0 otherwise, 2 on bad
input or a command that fails.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from perfkit.commands._store_args import add_format
from perfkit.commands._types import int_at_least, non_negative_int, seed


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "ab", help="time a baseline and a candidate command interleaved; compare pair by pair",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--baseline", required=True, metavar="CMD", help="baseline command (quoted)")
    p.add_argument("--candidate", required=True, metavar="CMD", help="candidate command (quoted)")
    p.add_argument("--rounds", type=int_at_least(3), default=10, help="pairs to measure (default 10, at least 3)")
    p.add_argument("--warmup", type=non_negative_int, default=1, help="unmeasured runs of each first (default 1)")
    p.add_argument("--shell", action="store_true", help="run the commands through the shell")
    p.add_argument("--policy", metavar="GATE_YAML", default=None, help="thresholds (min_effect, max_p)")
    p.add_argument("--seed", type=seed, default=0, help="seed of the bootstrap and permutations")
    add_format(p)
    return p


def _argv(cmd: str, shell: bool, label: str) -> str | list[str]:
    """What runs for --LABEL CMD: CMD for the shell, else its words; SpecError for one that is no command."""
    import shlex

    from perfkit.core.errors import SpecError, shorten

    try:
        words = shlex.split(cmd)
    except ValueError as exc:  # "No closing quotation", "No escaped character"
        raise SpecError(f"--{label} {shorten(cmd)!r}: {str(exc).lower()}; quote the command as a shell would") from None
    if not words:
        raise SpecError(f"--{label} {shorten(cmd)!r}: an empty command; pass the command to time")
    return cmd if shell else words


def _timed(cmd: str, shell: bool, label: str, round_no: int) -> float:
    import subprocess
    import time

    from perfkit.core.errors import SpecError, shorten

    argv = _argv(cmd, shell, label)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(argv, shell=shell, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    except OSError as exc:
        raise SpecError(f"--{label} {shorten(cmd)!r}: cannot start ({exc.strerror}); check the command") from None
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
        raise SpecError(f"--{label} {shorten(cmd)!r}: exited {proc.returncode} in round {round_no} ({tail[0][:200]}); "
                        "fix the command")
    return elapsed


def run(args: argparse.Namespace) -> int:
    from perfkit.commands._store_args import render
    from perfkit.core.direction import LOWER
    from perfkit.core.env import Env
    from perfkit.core.errors import EXIT_OK, EXIT_REGRESSION, SpecError
    from perfkit.regression.gate.compare import GateResult, RunSide
    from perfkit.regression.gate.paired import compare_paired
    from perfkit.regression.gate.policy import load_policy

    if args.rounds < 3:
        raise SpecError(f"--rounds {args.rounds}: needs at least 3 pairs")
    policy = load_policy(args.policy)
    _argv(args.baseline, args.shell, "baseline")  # both checked before either runs
    _argv(args.candidate, args.shell, "candidate")
    for _ in range(max(args.warmup, 0)):
        _timed(args.baseline, args.shell, "baseline", 0)
        _timed(args.candidate, args.shell, "candidate", 0)
    base: list[float] = []
    cand: list[float] = []
    for r in range(1, args.rounds + 1):
        # ABBA: alternate which goes first, so a trend within a round cancels too.
        if r % 2:
            base.append(_timed(args.baseline, args.shell, "baseline", r))
            cand.append(_timed(args.candidate, args.shell, "candidate", r))
        else:
            cand.append(_timed(args.candidate, args.shell, "candidate", r))
            base.append(_timed(args.baseline, args.shell, "baseline", r))
    name = "command:wall_time_s"
    comp = compare_paired(name, base, cand, LOWER, policy.for_metric(name), seed=args.seed, unit="s")
    sides = [RunSide(run_id=f"ab-{label}", label=cmd, gpu="this machine", env=Env(), metrics=())
             for label, cmd in (("baseline", args.baseline), ("candidate", args.candidate))]
    result = GateResult(sides[0], sides[1], (comp,), (), (), (), policy)
    sys.stdout.write(render(result, args.format))
    return EXIT_REGRESSION if result.regressed else EXIT_OK
