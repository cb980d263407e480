"""A mutation fuzzer for every perfkit command's inputs: damaged copies of real, valid inputs
through the real CLI, each classified against docs/failures.md's contract.

    .venv/bin/python -m benchmarks.hostile_fuzz                      # ~900 cases, ~10 min on 2 cores
    .venv/bin/python -m benchmarks.hostile_fuzz --per-seed 4 --only "ingest:*,*:store"
    .venv/bin/python -m benchmarks.hostile_fuzz --only "gate:*" --keep /tmp/bad   # each BAD case's folder kept
    .venv/bin/python -m benchmarks.hostile_fuzz --out benchmarks/results/hostile_fuzz-vm.md

Seeds (benchmarks/hostile_fuzz_seeds.py): a tiny CPU run's run.json / run.partial.json, specs,
a gate policy with every key, ingest files (csv, pytest-benchmark, vLLM, AIPerf, GuideLLM),
serve-bench replay / dataset files, traces (Kineto, nsys SQLite, memory snapshots) and a SQLite
store; benchmarks/hostile_fuzz_formats.py adds XLA .xplane.pb / JAX JSON / rocprofv3 traces, nsys
exports, an ncu CSV, calibration files (--calibration, PERFKIT_HOME), asv results folders, more
serving files, memory JSON and `memory diff`, `perfkit ab` command strings and a store whose rows
are edited. Mutations (benchmarks/hostile_fuzz_mutations.py): truncation, byte flips, keys
deleted / duplicated / retyped (NaN, 1e308, -1, huge ints, long and control-character strings, a
list for an object), other encodings, empty files, gzip of garbage, deep nesting, a directory /
FIFO / symlink loop in the file's place; for SQLite, a read table or column dropped and cells set
to text, NULL, 2^64, 1e308, not-JSON (sqlite3, per table and column). Each case runs as its own process (tests/helpers/forked_cli.py) with a
timeout and is classified:

  ok       exit 0 (or a documented non-2 code: 3 for serve-bench's unreachable server)
  located  exit 2, one line on stderr naming the damaged file, the case folder unchanged
  BAD      a traceback, another exit code, a timeout, several lines, a line that names no file,
           or files written or changed beside an exit 2
"""

from __future__ import annotations

import argparse
import collections
import fnmatch
import os
import random
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.hostile_fuzz_formats import format_targets
from benchmarks.hostile_fuzz_mutations import Mutation, mutations_for
from benchmarks.hostile_fuzz_seeds import Target, assets, build_targets
from tests.helpers.forked_cli import ForkedCli, Result

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Outcome:
    target: str
    mutation: str
    verdict: str  # ok | located | BAD
    reason: str  # for BAD: which rule; else ''
    rc: int | None
    line: str


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every path under `folder` with its size and mtime (ns): what an exit 2 must leave alone."""
    found: dict[str, tuple[int, int]] = {}
    for root, dirs, files in os.walk(folder, followlinks=False):
        for name in dirs + files:
            path = Path(root) / name
            try:
                st = path.lstat()
            except OSError:
                continue
            found[str(path.relative_to(folder))] = (st.st_size, st.st_mtime_ns)
    return found


def classify(target: Target, mutation: Mutation, result: Result, damaged: Path,
             before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> Outcome:
    err = result.stderr.strip()
    lines = err.splitlines()
    last = lines[-1][:300] if lines else ""

    def out(verdict: str, reason: str = "") -> Outcome:
        return Outcome(target.name, mutation.name, verdict, reason, result.returncode, last)

    if result.returncode is None:
        return out("BAD", "hang")
    if "Traceback" in err:
        return out("BAD", "traceback")
    if result.returncode == 0 or result.returncode in target.ok_codes:
        return out("ok")
    if result.returncode != 2:
        return out("BAD", f"exit {result.returncode}")
    if len(lines) != 1:
        return out("BAD", "several lines")
    if damaged.name not in err and target.names_file:
        return out("BAD", "names no file")
    if before != after:
        changed = sorted(set(before.items()) ^ set(after.items()))
        return out("BAD", f"files changed: {changed[0][0]}")
    return out("located")


def _not_plain(folder: str, names: list[str]) -> list[str]:
    """What copytree leaves out of a kept case: FIFOs, sockets, devices (a FIFO would block it)."""
    import stat

    return [n for n in names if not (stat.S_ISREG(m := os.lstat(os.path.join(folder, n)).st_mode)
                                     or stat.S_ISDIR(m) or stat.S_ISLNK(m))]


def run_case(cli: ForkedCli, target: Target, mutation: Mutation, rng: random.Random, work: Path,
             timeout_s: float, keep: Path | None = None) -> Outcome:
    case = Path(tempfile.mkdtemp(dir=work))
    damaged = target.prepare(case)
    mutation.apply(damaged, rng)
    before = _snapshot(case)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PERFKIT_DB_BUSY_TIMEOUT_S": "2",
           "PERFKIT_HOME": str(work / "home"), "PERFKIT_DB": f"sqlite:///{work / 'unused.db'}",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
           **(target.env(case) if target.env is not None else {})}
    result = cli.run(target.argv(case, damaged), case, env, timeout_s=target.timeout_s or timeout_s)
    outcome = classify(target, mutation, result, damaged, before, _snapshot(case))
    if keep is not None and outcome.verdict == "BAD":  # the case as it ran, to replay it
        kept = keep / f"{target.name}-{mutation.name}".replace(":", "_").replace("/", "_").replace("#", "_")
        shutil.copytree(case, kept, symlinks=True, dirs_exist_ok=True, ignore=_not_plain)
        (kept / "ARGV").write_text(" ".join(target.argv(case, damaged)) + f"\n# case folder was {case}\n")
        (kept / "STDERR").write_text(result.stderr)
    mutation.cleanup(damaged)
    shutil.rmtree(case, ignore_errors=True)
    return outcome


def summary(outcomes: list[Outcome], wall_s: float) -> str:
    by_target: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    classes: collections.Counter[tuple[str, str]] = collections.Counter()
    examples: dict[tuple[str, str], Outcome] = {}
    for o in outcomes:
        by_target[o.target][o.verdict] += 1
        if o.verdict == "BAD":
            key = (o.target.split(":")[0], o.reason)
            classes[key] += 1
            examples.setdefault(key, o)
    bad = sum(c["BAD"] for c in by_target.values())
    rows = [f"# hostile_fuzz: {len(outcomes)} cases, {bad} BAD ({wall_s:.0f} s)", "",
            "| target | ok | located | BAD |", "|---|---|---|---|"]
    rows += [f"| {t} | {c['ok']} | {c['located']} | {c['BAD']} |" for t, c in sorted(by_target.items())]
    rows += ["", "| BAD class (command, rule) | cases | example mutation | exit | last stderr line |",
             "|---|---|---|---|---|"]
    for (t, reason), n in classes.most_common():
        ex = examples[(t, reason)]
        line = ex.line.replace("|", "\\|")[:160]
        rows.append(f"| {t}: {reason} | {n} | {ex.mutation} | {ex.rc} | `{line}` |")
    return "\n".join(rows) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-seed", type=int, default=12, help="random mutations per target (plus the fixed ones)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout-s", type=float, default=30.0)
    parser.add_argument("--only", default="*", help="globs over target names, comma-separated")
    parser.add_argument("--out", type=Path, default=None, help="Markdown summary (e.g. benchmarks/results/hostile_fuzz-vm.md)")
    parser.add_argument("--keep", type=Path, default=None,
                        help="copy each BAD case's folder (damaged input, ARGV, STDERR) under this folder")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="perfkit-hostile-fuzz-"))
    cli = ForkedCli({**os.environ, "OMP_NUM_THREADS": "1"})
    start = time.monotonic()
    outcomes: list[Outcome] = []
    try:
        a = assets(work)
        for target in build_targets(a) + format_targets(work, a["run"], a["run2"], a["store"]):
            if not any(fnmatch.fnmatch(target.name, glob) for glob in args.only.split(",")):
                continue
            rng = random.Random(f"{args.seed}:{target.name}")
            for mutation in mutations_for(target.kind, rng, args.per_seed):
                outcome = run_case(cli, target, mutation, rng, work, args.timeout_s, args.keep)
                outcomes.append(outcome)
                if outcome.verdict == "BAD":
                    print(f"BAD {outcome.target} {outcome.mutation}: {outcome.reason} rc={outcome.rc} {outcome.line[:200]}",
                          file=sys.stderr, flush=True)
    finally:
        cli.close()
        shutil.rmtree(work, ignore_errors=True)
    text = summary(outcomes, time.monotonic() - start)
    print(text)
    if args.out is not None:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
