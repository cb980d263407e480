"""The kernel table a run carries into the store, checked where it is read.

Two sources: `run.artifacts.kernels` (rows written into run.json, or a .json / .csv file of rows
beside it: given by hand, part of the record) and the kernel summary `perfkit profile` wrote
(`analysis/kernels.parquet`: derived from the traces). A listed table that does not hold rows of
name, calls, total_ns (calls a whole number, total_ns a finite number, both >= 0) refuses the run
in one located line. The derived table is optional: unreadable, it is left out with a note and the
run is stored; its rows with a bad count or time are dropped and counted.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfkit.core.bounded import INT64_MAX
from perfkit.core.codec import shown_value
from perfkit.core.errors import StoreError
from perfkit.core.json_file import load_json
from perfkit.core.record import Run
from perfkit.core.run_layout import RunDir
from perfkit.core.table_file import TableError, left_out, read_parquet_table

NAME_KEYS = ("name",)
CALLS_KEYS = ("calls", "count")
TOTAL_KEYS = ("total_ns", "total_dur_ns")
POINT_KEYS = ("point", "point_key")
_FIX = "fix the kernel table or remove artifacts.kernels from run.json"


@dataclass(frozen=True)
class KernelRow:
    point_key: str | None
    name: str
    calls: int
    total_ns: float
    extra: dict[str, Any] = field(default_factory=dict)


class BadRow(ValueError):
    """One row's field that does not hold what it must; the message is `field: value is not ...`."""


def inside_run_dir(run_dir: Path, relative: str, what: str) -> Path:
    """run_dir / relative, refused when it resolves outside the run directory (`../x`, `/etc/x`,
    a symbolic link out): a run record never makes the store read files elsewhere."""
    root = run_dir.resolve()
    path = (run_dir / relative).resolve()
    if path != root and root not in path.parents:
        raise StoreError(f"{RunDir(run_dir).run_json}: {what} '{relative}' points outside the run directory; "
                         "artifacts resolve inside it only: fix or remove that entry")
    return path


def kernel_rows(run: Run, run_dir: Path | None) -> tuple[list[KernelRow], list[str]]:
    """The run's kernel rows, and notes on what was left out of them."""
    listed = run.artifacts.kernels
    if listed is None:
        analysis = run.artifacts.analysis.get("kernels")
        if not analysis or run_dir is None:
            return [], []
        path = inside_run_dir(run_dir, str(analysis), "artifacts.analysis.kernels")
        return analysis_rows(run, path, str(analysis))
    if isinstance(listed, str):
        if run_dir is None:
            return [], []
        return listed_file_rows(inside_run_dir(run_dir, listed, "artifacts.kernels")), []
    where = f"{RunDir(run_dir).run_json}: artifacts.kernels" if run_dir is not None else f"run {run.run_id}: artifacts.kernels"
    return [_checked(row, f"{where}[{i}]") for i, row in enumerate(listed)], []


def listed_file_rows(path: Path) -> list[KernelRow]:
    """The rows of a kernel table run.json names: a JSON list of objects, or a CSV with a header."""
    if not path.is_file():
        raise StoreError(f"{path}: kernel table listed in run.json is missing; {_FIX}")
    if path.suffix == ".json":
        rows = load_json(path, _FIX)
        if not isinstance(rows, list):
            raise StoreError(f"{path}: {shown_value(rows)} is not a list of kernel rows; {_FIX}")
        return [_checked(row, f"{path}: [{i}]") for i, row in enumerate(rows)]
    try:
        reader = csv.DictReader(io.StringIO(path.read_bytes().decode("utf-8")))
        records = [(reader.line_num, row) for row in reader]  # the line each row ends on
    except UnicodeDecodeError as exc:
        raise StoreError(f"{path}: not UTF-8 at byte {exc.start}; {_FIX}") from None
    except csv.Error as exc:
        raise StoreError(f"{path}:{reader.line_num}: not CSV ({exc}); {_FIX}") from None
    return [_checked(row, f"{path}:{line}", ": ") for line, row in records]


def _checked(row: Any, where: str, joiner: str = ".") -> KernelRow:
    if not isinstance(row, dict):
        raise StoreError(f"{where}: {shown_value(row)} is not an object with name, calls, total_ns; {_FIX}")
    try:
        return _row(row)
    except BadRow as exc:
        raise StoreError(f"{where}{joiner}{exc}; {_FIX}") from None


def _row(row: dict[str, Any], point: str | None = None) -> KernelRow:
    name = _first(row, NAME_KEYS)
    if name is None or isinstance(name, (dict, list)) or name == "":
        raise BadRow(f"name: {shown_value(name)} is not a kernel name")
    calls = _whole(_first(row, CALLS_KEYS, 0), "calls")  # a row without them counts nothing
    total = _time(_first(row, TOTAL_KEYS, 0.0), "total_ns")
    if point is None:
        found = _first(row, POINT_KEYS)
        point = str(found) if found not in (None, "") and not isinstance(found, (dict, list)) else None
    known = NAME_KEYS + CALLS_KEYS + TOTAL_KEYS + POINT_KEYS
    return KernelRow(point, str(name), calls, total, {str(k): v for k, v in row.items() if k not in known})


def _first(row: dict[str, Any], keys: tuple[str, ...], absent: Any = None) -> Any:
    return next((row[k] for k in keys if k in row), absent)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return None


def _whole(value: Any, what: str) -> int:
    x = _number(value)
    if x is None or not math.isfinite(x) or x < 0 or x != int(x) or x > INT64_MAX:
        raise BadRow(f"{what}: {shown_value(value)} is not a whole number >= 0")
    return int(x)


def _time(value: Any, what: str) -> float:
    x = _number(value)
    if x is None or not math.isfinite(x) or x < 0:
        raise BadRow(f"{what}: {shown_value(value)} is not a finite number >= 0")
    return x


def analysis_rows(run: Run, path: Path, relative: str) -> tuple[list[KernelRow], list[str]]:
    """Rows of the kernel summary `perfkit profile` wrote, each attributed to the point whose trace
    it came from; an unreadable table is left out, rows with bad values dropped (noted)."""
    if not path.is_file():
        return [], [f"analysis table {relative} is missing; left out"]
    try:
        df = read_parquet_table(path, numeric=("count", "total_ns"), text=("name",))
    except TableError as exc:
        return [], [left_out(exc, relative)]
    point_of_trace = {p.trace: p.key for p in run.points if p.trace}
    out: list[KernelRow] = []
    dropped = 0
    first = ""
    for i, record in enumerate(df.to_dict(orient="records")):
        row = {str(k): v for k, v in record.items() if k in ("name", "count", "total_ns") or not _missing(v)}
        row["calls"] = row.pop("count")
        trace = row.pop("trace", None)
        try:
            out.append(_row(row, point_of_trace.get(str(trace))))
        except BadRow as exc:
            dropped += 1
            first = first or f"row {i}: {exc}"
    notes = [f"analysis table {relative}: {dropped} of {len(df)} rows left out (first: {first})"] if dropped else []
    return out, notes


def _missing(value: Any) -> bool:
    try:
        return value is None or bool(value != value)  # NaN (pandas' missing value) is unequal to itself
    except (TypeError, ValueError):
        return False
