"""`perfkit ingest RUN_DIR...` stores runs made elsewhere (by `perfkit profile`);
`perfkit ingest --format csv FILE` and `--format pytest-benchmark FILE` store other tools'
results, so history, compare and gate work for any numbers; `--format asv DIR` stores an
airspeed velocity results directory (or one machine folder, or one results file): one run per
machine, commit and environment, dated by the commit (docs/ci.md). `--format vllm|aiperf|guidellm FILE`
stores a serving benchmark's result (`vllm bench serve --save-result`, AIPerf's
profile_export.jsonl / profile_export_aiperf.json, GuideLLM's benchmarks.json / .yaml) as one
run of serving points, one per load stage, like a `perfkit serve-bench` run; `--format serving`
tells the three apart by content (docs/serving-ingest.md).

CSV header: commit,metric,value,unit,direction,gpu,timestamp (one row per sample; optional
branch column). Each input is one transaction: a bad file stores nothing. Runs already stored
(same run id) are skipped. Each run is printed with its id, commit and branch; `perfkit runs
--commit C` lists it again (with the id that compare / gate / report take).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfkit.commands._run_labels import add_labels, flags, labels
from perfkit.commands._store_args import add_db

if TYPE_CHECKING:
    from perfkit.core.run_labels import RunLabels
    from perfkit.ingest.serving.to_run import IngestOptions

SERVING_FORMATS = ("vllm", "aiperf", "guidellm", "serving")  # serving: any of the three, detected
_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,200}")  # as a workload's name in a spec
INPUT_FORMATS = ("run", "csv", "pytest-benchmark", "asv", *SERVING_FORMATS)
# what the head of a vLLM, AIPerf or GuideLLM result holds (a hint for a file given without --format)
_SERVING_MARKS = (b'"request_throughput"', b'"request_start_ns"', b'"aiperf_version"', b"guidellm_version",
                  b"generative_benchmark")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "ingest", help="store runs (run directories, CSV, pytest-benchmark JSON, vLLM / AIPerf / "
             "GuideLLM serving results) in the results store",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="+", metavar="PATH", help="run directories, or files of --format")
    p.add_argument("--format", choices=INPUT_FORMATS, default="run",
                   help="what the inputs are (default: run directories)")
    add_labels(p, "GPU label (run directories, pytest-benchmark, serving; default for serving: 'unknown GPU')")
    serving = p.add_argument_group("serving results (--format vllm|aiperf|guidellm|serving)")
    serving.add_argument("--name", default=None,
                         help="workload and spec name (default: the tool: vllm, aiperf, guidellm)")
    serving.add_argument("--price-per-gpu-hour", type=float, default=None, metavar="USD",
                         help="GPU-hour price: adds the cost per 1M tokens")
    serving.add_argument("--gpus", type=int, default=None, help="GPUs behind the server (default 1)")
    p.add_argument("--partial", action="store_true",
                   help="also store runs that never finished (killed: only run.partial.json), with the "
                        "points they recorded, as interrupted")
    add_db(p)
    return p


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace
    from pathlib import Path

    from perfkit.core.errors import EXIT_OK
    from perfkit.core.record import load_run
    from perfkit.core.run_labels import labelled
    from perfkit.core.terminal import terminal_safe
    from perfkit.ingest.asv.parse import parse_asv
    from perfkit.ingest.csv_table import parse_csv
    from perfkit.ingest.pytest_benchmark import parse_pytest_benchmark
    from perfkit.store.api import open_store
    from perfkit.store.engine import describe
    from perfkit.store.records import StoredRun, from_run
    from perfkit.store.url import check_persistent
    from perfkit.store.write import write_runs

    check_persistent(args.db)  # a store that would lose what it is given is refused first
    _refuse_labels(args)
    given = labels(args)
    # Parse every input before writing anything.
    serving = _serving_options(args, given)
    batches: list[tuple[str, list[StoredRun]]] = []
    for item in args.inputs:
        if serving is not None:
            from perfkit.ingest.serving.to_run import read_serving_run

            served = read_serving_run(item, serving)
            batches.append((item, [from_run(replace(served, env=labelled(served.env, given)))]))
        elif args.format == "csv":
            batches.append((item, parse_csv(item, branch=args.branch)))
        elif args.format == "pytest-benchmark":
            batches.append((item, parse_pytest_benchmark(item, gpu=args.gpu, branch=args.branch)))
        elif args.format == "asv":
            batches.append((item, parse_asv(item, branch=args.branch)))
        else:
            path = Path(item)
            _refuse_other_format(path)
            made = load_run(path, partial=args.partial)
            made = replace(made, env=labelled(made.env, given))
            batches.append((item, [from_run(made, path if path.is_dir() else path.parent)]))
    engine = open_store(args.db)
    try:
        for item, runs in batches:
            written = write_runs(engine, runs)
            for stored, new in zip(runs, written, strict=True):
                state = "stored" if new else "already stored, skipped"
                commit = f"commit {stored.commit}" if stored.commit else "no commit"
                branch = f"branch {stored.branch}" if stored.branch else "no branch"
                print(terminal_safe(f"{item}: run {stored.run_id} ({commit}, {branch}, {stored.gpu}, "
                                    f"{len(stored.metrics)} metrics) {state}"))
                for note in stored.notes:  # an optional table left out: the run is stored without it
                    print(terminal_safe(f"perfkit: note: {item}: {note}"), file=sys.stderr)
        print(f"store: {describe(engine)}")
    finally:
        engine.dispose()
    return EXIT_OK


# the labels each other tool's format can record (run directories and serving results: all four)
HONOURED = {"csv": ("--branch",), "pytest-benchmark": ("--gpu", "--branch"), "asv": ("--branch",)}


def _refuse_labels(args: argparse.Namespace) -> None:
    """A label flag the format cannot record is an error, never ignored (CSV and asv files name
    their commits and GPUs themselves)."""
    from perfkit.core.errors import SpecError

    can = HONOURED.get(args.format)
    if can is None:  # run directories and serving results record all four
        return
    for flag in flags(args).given():
        if flag not in can:
            where = "its rows' columns" if args.format == "csv" else "the file"
            raise SpecError(f"{flag}: --format {args.format} takes {' and '.join(can)} only ({where} name the rest); "
                            f"leave {flag} out")


def _serving_options(args: argparse.Namespace, given: RunLabels) -> IngestOptions | None:
    """The options of a serving format (None for the others, which refuse them)."""
    from perfkit.core.errors import SpecError

    given_opts = [opt for opt, value in (("--name", args.name), ("--gpus", args.gpus),
                                    ("--price-per-gpu-hour", args.price_per_gpu_hour)) if value is not None]
    if args.format not in SERVING_FORMATS:
        if given_opts:
            raise SpecError(f"{given_opts[0]} is for serving results; pass --format "
                            f"{'|'.join(SERVING_FORMATS)}, or leave it out")
        return None
    from perfkit.ingest.serving.to_run import IngestOptions
    from perfkit.workloads.serving.measurements.cost import Price

    if args.name is not None and not _NAME.fullmatch(args.name):
        raise SpecError(f"--name {args.name[:60]!r}: use letters, digits, '.', '_' and '-' (at most 200), "
                        "e.g. --name llama-8b")
    price = None
    if args.price_per_gpu_hour is not None:
        try:
            price = Price(args.price_per_gpu_hour, 1 if args.gpus is None else args.gpus, "--price-per-gpu-hour")
        except ValueError as exc:
            raise SpecError(f"--price-per-gpu-hour / --gpus: {exc}") from None
    elif args.gpus is not None:
        raise SpecError("--gpus counts the GPUs a price is for; add --price-per-gpu-hour USD")
    return IngestOptions(name=args.name, gpu=given.gpu, commit=given.commit, branch=given.branch, price=price,
                         expected=None if args.format == "serving" else args.format)


def _is_asv_dir(path: Path) -> bool:
    """An asv results folder (benchmarks.json / machine.json in it, or in a machine folder below)."""
    return any((path / name).is_file() for name in ("benchmarks.json", "machine.json")) or any(
        (sub / "machine.json").is_file() for sub in path.iterdir() if sub.is_dir())


def _refuse_other_format(path: Path) -> None:
    """Another tool's results (CSV, pytest-benchmark, serving, asv) given without --format: say
    which flag it needs."""
    from perfkit.core.errors import SpecError
    from perfkit.core.run_layout import RECORD_FILES

    if path.is_dir() and not any((path / name).exists() for name in RECORD_FILES):
        try:
            asv = _is_asv_dir(path)
        except OSError:
            return
        if asv:
            raise SpecError(f"{path}: an asv results directory, not a run directory; pass --format asv")
    if not path.is_file():
        return
    if path.suffix.lower() == ".csv":
        raise SpecError(f"{path}: a CSV file, not a run directory; pass --format csv")
    if path.suffix.lower() in (".json", ".jsonl", ".yaml", ".yml") and path.name not in RECORD_FILES:
        with path.open("rb") as fh:
            head = fh.read(4096)
        if b'"commit_hash"' in head and any(k in head for k in (b'"result_columns"', b'"env_name"', b'"results"',
                                                                 b'"params"')):
            raise SpecError(f"{path}: an asv result file, not a run record; pass --format asv")
        if b'"machine_info"' not in head and any(mark in head for mark in _SERVING_MARKS):
            raise SpecError(f"{path}: a serving benchmark's result, not a run record; pass --format serving "
                            "(or vllm, aiperf, guidellm)")
        if b'"benchmarks"' in head or b'"machine_info"' in head:
            raise SpecError(f"{path}: a pytest-benchmark file, not a run record; pass --format pytest-benchmark")
