"""Read Nsight Compute CSV exports into a DataFrame, one row per profiled kernel launch.

The raw page (`ncu --import R --csv --page raw [--print-units base]`) is wide: a header row
("ID","Process ID",...,"Kernel Name",...,<metric names>), then a units row whose identity
fields are empty ("","",...,"byte","nsecond",...), then one row per kernel. Values may carry
thousands separators ("10,240,000") and "n/a". The details page (`--page details`) is long:
one row per (kernel, metric) with "Metric Name","Metric Unit","Metric Value"; it is pivoted to
the same wide shape. Lines before the header (==PROF== ..., program output) and ==...== lines
after it are skipped. Metric values are converted to base units (seconds, bytes, hz, ...);
`df.attrs["units"]` maps each metric column to its base unit.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Any

import pandas as pd

from perfkit.core.errors import TraceError
from perfkit.roofline.units import UnitError, ncu_unit_scale, parse_ncu_number

IDENTITY_COLUMNS = (
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Kernel Time",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
)
DETAILS_COLUMNS = ("Section Name", "Metric Name", "Metric Unit", "Metric Value")
_DETAILS_DROP = ("Rule Name", "Rule Type", "Rule Description", "Estimated Speedup Type", "Estimated Speedup")
HINT = "export it with `ncu --import REPORT --csv --page raw --print-units base > FILE.csv`"


def snake(name: str) -> str:
    return re.sub(r"[^0-9a-zA-Z]+", "_", name).strip("_").lower()


def load_csv(path: str | Path) -> pd.DataFrame:
    """Kernels of an ncu CSV (raw or details page), metrics in base units. Raises TraceError."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise TraceError(f"{p}: cannot read the ncu CSV ({exc.strerror}); check the path") from exc
    return parse_csv_text(text, origin=str(p))


def parse_csv_text(text: str, origin: str = "<ncu csv>") -> pd.DataFrame:
    lines = text.splitlines()
    start = _header_line(lines)
    if start is None:
        raise TraceError(f"{origin}: no ncu CSV header (a line starting with \"ID\"); {HINT}")
    body = [(i + 1, ln) for i, ln in enumerate(lines) if i >= start and ln.strip() and not ln.startswith("==")]
    rows = []
    for lineno, fields in zip((n for n, _ in body), csv.reader(io.StringIO("\n".join(ln for _, ln in body))), strict=False):
        rows.append((lineno, fields))
    header = rows[0][1]
    details = all(c in header for c in ("Metric Name", "Metric Value"))
    fields_of = [_checked(header, fields, details, f"{origin}:{lineno}") for lineno, fields in rows[1:]]
    if details:
        return _from_details(header, fields_of, origin)
    return _from_raw(header, fields_of, origin)


def _checked(header: list[str], fields: list[str], details: bool, where: str) -> list[str]:
    """A row as wide as the header. On the details page ncu ends a metric row that no rule
    fired on right after its value (`"...","21.68",`): the rule columns it leaves out are blank."""
    width = len(header)
    if len(fields) < width and details and all(h in _DETAILS_DROP for h in header[len(fields):]):
        return fields + [""] * (width - len(fields))
    if len(fields) != width:
        raise TraceError(
            f"{where}: {len(fields)} fields where the header has {width}; "
            f"the CSV is truncated or mixed with program output; {HINT}"
        )
    return fields


def _header_line(lines: list[str]) -> int | None:
    for i, line in enumerate(lines):
        if line.startswith('"ID"') or line.startswith("ID,"):
            return i
    return None


def _from_raw(header: list[str], rows: list[list[str]], origin: str) -> pd.DataFrame:
    units = [""] * len(header)
    if rows and rows[0][0].strip() == "":  # the units row: identity fields are empty
        units, rows = rows[0], rows[1:]
    columns: dict[str, list[Any]] = {h: [r[i] for r in rows] for i, h in enumerate(header)}
    unit_of = dict(zip(header, units, strict=True))
    return _frame(columns, unit_of, origin)


def _from_details(header: list[str], rows: list[list[str]], origin: str) -> pd.DataFrame:
    idx = {h: i for i, h in enumerate(header)}
    ident = [h for h in header if h not in DETAILS_COLUMNS and h not in _DETAILS_DROP]
    kernels: dict[str, dict[str, Any]] = {}
    unit_of: dict[str, str] = {}
    for r in rows:
        kid = r[idx["ID"]]
        entry = kernels.setdefault(kid, {h: r[idx[h]] for h in ident})
        metric = r[idx["Metric Name"]].strip()
        if not metric:
            continue
        if metric in ident:  # Launch Statistics' "Block Size" / "Grid Size": the identity's stay
            metric = f"{r[idx['Section Name']]}: {metric}" if "Section Name" in idx else f"metric: {metric}"
        unit = r[idx["Metric Unit"]] if "Metric Unit" in idx else ""
        try:  # units vary per row on this page: scale each value on its own
            factor, base = ncu_unit_scale(unit)
        except UnitError as exc:
            raise TraceError(f"{origin}: kernel {kid}, metric {metric!r}: {exc}; {HINT}") from exc
        text = r[idx["Metric Value"]]
        try:
            entry[metric] = parse_ncu_number(text) * factor
        except ValueError:
            entry[metric] = text
        unit_of[metric] = base
    names = ident + sorted(unit_of)
    columns = {h: [k.get(h, "") for k in kernels.values()] for h in names}
    return _frame(columns, unit_of, origin)


def _frame(columns: dict[str, list[Any]], unit_of: dict[str, str], origin: str) -> pd.DataFrame:
    data: dict[str, Any] = {}
    base_units: dict[str, str] = {}
    for name, values in columns.items():
        if name in IDENTITY_COLUMNS:
            key = snake(name)
            data[key] = [_int_or_text(v) for v in values] if name in ("ID", "Process ID", "Context", "Stream", "Device") else values
            continue
        unit = unit_of.get(name, "")
        try:
            factor, base = ncu_unit_scale(unit)
        except UnitError as exc:
            raise TraceError(f"{origin}: column {name!r}: {exc}; {HINT}") from exc
        numbers = _numbers(values)
        if numbers is None:
            data[name] = values  # a text-valued metric (e.g. a device attribute string)
            continue
        data[name] = [x * factor for x in numbers]
        base_units[name] = base
    df = pd.DataFrame(data)
    df.attrs["units"] = base_units
    return df


def _numbers(values: list[Any]) -> list[float] | None:
    """Every value as a number (floats pass through), or None for a text-valued column."""
    out = []
    for v in values:
        if isinstance(v, float):
            out.append(v)
            continue
        try:
            out.append(parse_ncu_number(str(v)))
        except ValueError:
            return None
    return out


def _int_or_text(value: str) -> int | str:
    cleaned = value.strip().replace(",", "")
    return int(cleaned) if cleaned.lstrip("-").isdigit() else value
