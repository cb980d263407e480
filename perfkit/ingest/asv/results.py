"""One airspeed velocity (asv) results file, read into typed entries: `HASH-ENV.json` under a
machine folder of asv's results directory.

Version 2 (asv >= 0.5): `result_columns` names the columns of each `results[name]` list
(result, params, version, started_at, duration, stats_*, samples, profile); asv drops trailing
empty columns, so a list may be shorter than `result_columns`, but never shorter than its
`result` and `params`. Version 1: `results[name]` is a number (or null / NaN) or
{"result": value or [values], "params": [...], "samples": ...}. Per benchmark, `result` holds one
value per combination of its params (the cartesian product, last parameter fastest): a number,
null (the benchmark failed) or NaN (the suite skipped it). Anything else is refused, located.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfkit.core.errors import StoreError
from perfkit.core.finite import finite_float, shown
from perfkit.core.json_file import parse_json_bytes
from perfkit.core.regular_file import check_not_special

VERSIONS = (1, 2)
MAX_DATE_MS = 253402300799999  # 9999-12-31 23:59:59.999 UTC, the last time a datetime holds


@dataclass(frozen=True)
class AsvEntry:
    """One benchmark of one results file."""

    name: str
    params: tuple[tuple[str, ...], ...]  # the repr() strings of each parameter's values
    results: tuple[float | None, ...]  # per combination: a number, None (failed) or NaN (skipped)
    samples: tuple[tuple[float, ...] | None, ...]  # per combination: raw samples (asv --record-samples)


@dataclass(frozen=True)
class AsvResultFile:
    path: Path
    version: int
    commit: str
    date_ms: float  # the commit's date, milliseconds since the epoch
    env_name: str
    python: str | None
    machine: str | None  # params.machine: the machine the file says it ran on
    requirements: dict[str, Any]
    entries: tuple[AsvEntry, ...]


def load_json(p: Path, what: str) -> Any:
    """A JSON file, or StoreError `FILE:LINE:COL: not valid JSON` (NaN is JSON to asv)."""
    check_not_special(p, StoreError)  # a FIFO in the results folder would wait for a writer forever
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise StoreError(f"{p}: cannot read ({exc.strerror}); pass {what}") from None
    return parse_json_bytes(data, p, f"pass {what}")  # not UTF-8, nested too deep: located


def read_result_file(p: Path) -> AsvResultFile:
    data = load_json(p, "an asv results file (results/MACHINE/HASH-ENV.json)")
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        raise StoreError(f"{p}: no 'results' object; not an asv results file (results/MACHINE/HASH-ENV.json)")
    version = data.get("version")
    if version not in VERSIONS or isinstance(version, bool):
        raise StoreError(f"{p}: results file version {json.dumps(version)[:40]}; perfkit reads asv results "
                         "versions 1 and 2 (asv 0.1 to 0.6)")
    commit, date = data.get("commit_hash"), data.get("date")
    if not isinstance(commit, str) or not commit:
        raise StoreError(f"{p}: no 'commit_hash'; cannot tell which commit was measured")
    date_ms = finite_float(date)
    if date_ms is None or not 0 <= date_ms <= MAX_DATE_MS:
        raise StoreError(f"{p}: 'date' is {_shown(date)}, not milliseconds since the epoch (1970 to 9999); "
                         "cannot order this run among commits")
    params: dict[str, Any] = data["params"] if isinstance(data.get("params"), dict) else {}
    requirements: dict[str, Any] = data["requirements"] if isinstance(data.get("requirements"), dict) else {}
    env_name = data.get("env_name") or _env_from_filename(p, commit)
    if version == 2:
        entries = _entries_v2(p, data)
    else:
        entries = tuple(_entry_v1(p, name, value) for name, value in data["results"].items())
    python = data.get("python")
    return AsvResultFile(
        path=p, version=int(version), commit=commit, date_ms=date_ms, env_name=str(env_name),
        python=str(python) if python not in (None, "") else None,
        machine=str(params["machine"]) if params.get("machine") else None,
        requirements=requirements,
        entries=entries,
    )


def _shown(value: Any) -> str:
    """A value as the JSON it was ("fast", true, 1e+300); an integer past 30 digits by its length."""
    if isinstance(value, int) and not isinstance(value, bool):
        return shown(value)
    return json.dumps(value)[:60]


def _env_from_filename(p: Path, commit: str) -> str:
    """Version 1 files may lack env_name; asv names the file `HASH[:8]-ENV.json`."""
    stem = p.stem
    head = commit[:8] + "-"
    return stem[len(head):] if stem.startswith(head) else stem


def _entries_v2(p: Path, data: dict[str, Any]) -> tuple[AsvEntry, ...]:
    columns = data.get("result_columns")
    if not isinstance(columns, list) or "result" not in columns or "params" not in columns:
        raise StoreError(f"{p}: 'result_columns' {json.dumps(columns)[:80]} lacks 'result' or 'params'; "
                         "not an asv version 2 results file")
    need = max(columns.index("result"), columns.index("params")) + 1
    out = []
    for name, row in data["results"].items():
        where = f"{p}: results[{json.dumps(name)}]"
        if not isinstance(row, list) or not need <= len(row) <= len(columns):
            size = len(row) if isinstance(row, list) else json.dumps(row)[:40]
            raise StoreError(f"{where} has {size} columns; result_columns names {len(columns)} and the "
                             f"first {need} (result, params) are required; store the file asv wrote, unedited")
        cols = dict(zip(columns, row, strict=False))
        out.append(_entry(where, name, cols["params"], cols["result"], cols.get("samples")))
    return tuple(out)


def _entry_v1(p: Path, name: str, value: Any) -> AsvEntry:
    where = f"{p}: results[{json.dumps(name)}]"
    if not isinstance(value, dict):
        return _entry(where, name, [], [value], None)
    if "result" not in value:
        raise StoreError(f"{where} has no 'result'; not an asv version 1 result")
    result = value["result"] if isinstance(value["result"], list) else [value["result"]]
    return _entry(where, name, value.get("params") or [], result, value.get("samples"))


def _entry(where: str, name: str, params: Any, result: Any, samples: Any) -> AsvEntry:
    if not isinstance(params, list) or not all(isinstance(ps, list) for ps in params):
        raise StoreError(f"{where}: params {json.dumps(params)[:60]} is not a list of value lists")
    combos = math.prod(len(ps) for ps in params)
    values = [None] * combos if result is None else result  # null: every combination failed
    if not isinstance(values, list) or len(values) != combos:
        raise StoreError(f"{where}: {len(values) if isinstance(values, list) else 'no'} result values for "
                         f"{combos} parameter combinations; store the file asv wrote, unedited")
    per_combo = [None] * combos if samples is None else samples
    if not isinstance(per_combo, list) or len(per_combo) != combos:
        raise StoreError(f"{where}: samples do not hold one list per parameter combination ({combos})")
    return AsvEntry(
        name=name,
        params=tuple(tuple(str(v) for v in ps) for ps in params),
        results=tuple(_value(f"{where} result[{i}]", v) for i, v in enumerate(values)),
        samples=tuple(_samples(f"{where} samples[{i}]", s) for i, s in enumerate(per_combo)),
    )


def _value(where: str, v: Any) -> float | None:
    """A number, None (failed) or NaN (skipped); a string, a bool or an infinity is refused."""
    if v is None:
        return None
    if isinstance(v, float) and math.isnan(v):
        return v
    x = finite_float(v)
    if x is None:
        raise StoreError(f"{where} is {_shown(v)}, not a number (null: failed, NaN: skipped)")
    return x


def _samples(where: str, s: Any) -> tuple[float, ...] | None:
    if s is None or s == []:
        return None
    if not isinstance(s, list):
        raise StoreError(f"{where} is {json.dumps(s)[:60]}, not a list of samples")
    out = tuple(map(finite_float, s))
    for j, x in enumerate(out):
        if x is None:
            raise StoreError(f"{where}[{j}] is {_shown(s[j])}, not a finite number")
    return out  # type: ignore[return-value]  # no None left
