"""`perfkit ingest --format asv PATH`: an airspeed velocity (asv) results history as stored runs.

PATH is asv's results directory (`benchmarks.json` beside one folder per machine, each with its
`machine.json`), one machine folder, or one results file. Each results file (one commit in one
environment on one machine) becomes one run: id `asv-` + a hash of (machine, commit, env), so a
rerun skips what is stored; its time is the commit's date (`date`), so history orders runs by
commit date; its GPU label is `MACHINE/ENV` (`ubuntu-22.04/conda-py3.10`: `--gpu ubuntu-22.04`
selects every environment of the machine); host, OS, CPU come from machine.json, the Python
version from the file. Every benchmark result is a metric (ingest_asv_metrics.py) with asv's raw
samples when it recorded them (--record-samples), else its result. A failed (null) or skipped
(NaN) result is not measured: no metric, its name listed under `not_measured` in the stored run
and counted in a note. The whole PATH is one transaction: the first bad file refuses it all.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from perfkit.core.env import CpuState, Env, GitState, Source
from perfkit.core.errors import StoreError
from perfkit.ingest.asv.metrics import (
    BenchmarkKind,
    entry_metrics,
    kind_of,
    kinds_from_benchmarks_json,
)
from perfkit.ingest.asv.results import AsvResultFile, load_json, read_result_file
from perfkit.store.metrics import MetricRecord
from perfkit.store.records import SOURCE_ASV, StoredRun, iso_utc

MACHINE_FILE = "machine.json"
BENCHMARKS_FILE = "benchmarks.json"


def parse_asv(path: str | Path, branch: str | None = None) -> list[StoredRun]:
    p = Path(path)
    machine_dirs, files = _layout(p)
    top = p.parent.parent if p.is_file() else (p.parent if p in machine_dirs else p)
    kinds = kinds_from_benchmarks_json(load_json(top / BENCHMARKS_FILE, "asv's benchmarks.json")) \
        if (top / BENCHMARKS_FILE).is_file() else {}
    runs: dict[str, StoredRun] = {}
    came_from: dict[str, Path] = {}
    for folder in machine_dirs:
        machine = load_json(folder / MACHINE_FILE, "asv's machine.json")
        if not isinstance(machine, dict):
            raise StoreError(f"{folder / MACHINE_FILE}: not a JSON object; not asv's machine.json")
        name = str(machine.get("machine") or folder.name)
        for f in files if p.is_file() else sorted(folder.glob("*.json")):
            if f.name == MACHINE_FILE:
                continue
            run = _run(read_result_file(f), name, machine, kinds, branch)
            if run.run_id in runs:
                raise StoreError(f"{f}: the run of {run.gpu} at commit {run.commit} again (also {came_from[run.run_id]})")
            runs[run.run_id], came_from[run.run_id] = run, f
    if not any(r.metrics for r in runs.values()):
        raise StoreError(f"{p}: no measured benchmark result in {len(runs)} results files; nothing to ingest")
    return sorted(runs.values(), key=lambda r: (r.created_epoch, r.gpu, r.run_id))


def _layout(p: Path) -> tuple[list[Path], list[Path]]:
    """The machine folders to read and, for one results file, that file."""
    if p.is_file():
        if not (p.parent / MACHINE_FILE).is_file():
            raise StoreError(f"{p}: no {MACHINE_FILE} beside it; pass a file under asv's results/MACHINE/")
        return [p.parent], [p]
    if not p.is_dir():
        raise StoreError(f"{p}: no such file or directory; pass asv's results directory")
    if (p / MACHINE_FILE).is_file():
        return [p], []
    machines = sorted(d for d in p.iterdir() if (d / MACHINE_FILE).is_file())
    if not machines:
        raise StoreError(f"{p}: no MACHINE/{MACHINE_FILE} under it; pass asv's results directory "
                         "(results_dir of asv.conf.json), a machine folder or a results file")
    return machines, []


def _run(res: AsvResultFile, machine: str, info: dict[str, Any], kinds: dict[str, BenchmarkKind],
         branch: str | None) -> StoredRun:
    if res.machine is not None and res.machine != machine:
        raise StoreError(f"{res.path}: ran on machine {res.machine!r}, but its folder's {MACHINE_FILE} says "
                         f"{machine!r}; move it to its machine's folder")
    metrics: list[MetricRecord] = []
    failed: list[str] = []
    skipped: list[str] = []
    for entry in res.entries:
        got = entry_metrics(entry, kind_of(entry.name, kinds))
        metrics.extend(got.metrics)
        failed.extend(got.failed)
        skipped.extend(got.skipped)
    seen: set[str] = set()
    for m in metrics:
        if m.name in seen:
            raise StoreError(f"{res.path}: two results named {m.name!r} (parameter values that read alike)")
        seen.add(m.name)
    key = f"{machine}\x1f{res.commit}\x1f{res.env_name}".encode()
    when = datetime.fromtimestamp(res.date_ms / 1000.0, tz=timezone.utc)
    env = Env(
        host=machine, os=_opt(info.get("os")), python=res.python,
        git=GitState(commit=res.commit, branch=branch),
        cpu=CpuState(model=_opt(info.get("cpu")), cores=_count(info.get("num_cpu"))),
        source=Source(format=SOURCE_ASV, path=str(res.path), version=str(res.version)),
        extra={"asv": {"machine": machine, "env_name": res.env_name, "arch": _opt(info.get("arch")),
                       "ram": _opt(info.get("ram")), "requirements": res.requirements}},
    )
    not_measured = {"failed": failed, "skipped": skipped} if failed or skipped else {}
    notes = (f"{len(failed) + len(skipped)} results not measured ({len(failed)} failed, {len(skipped)} skipped), "
             f"e.g. {(failed + skipped)[0]}; listed under not_measured",) if not_measured else ()
    return StoredRun(
        run_id=f"asv-{hashlib.sha256(key).hexdigest()[:20]}", created=iso_utc(when),
        gpu=f"{machine}/{res.env_name}", device="external", status="complete", source=SOURCE_ASV,
        env=env, metrics=tuple(metrics), commit=res.commit, branch=branch, host=machine,
        extra={"not_measured": not_measured} if not_measured else {}, notes=notes,
    )


def _opt(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


def _count(value: Any) -> int | None:
    """machine.json's num_cpu: asv writes it as a string ("4")."""
    text = str(value).strip() if value is not None else ""
    return int(text) if text.isdigit() and int(text) > 0 else None
