"""`perfkit ingest --format csv`: results of any benchmark tool as CSV.

Header (stable interface): commit,metric,value,unit,direction,gpu,timestamp  (+ optional branch)
One row per sample; the rows of one commit and metric are its samples; commits are ordered by
timestamp (ISO 8601 or Unix seconds). The rows of one (commit, gpu) become one stored run.
The file is one transaction: the first bad row refuses the whole file with one line
`FILE:LINE:COL: what is wrong` (LINE: where the row starts), and nothing is stored. A text field
holding a line break or another control character (a quoted newline in a metric name) is such
a row: it would be stored as a name no view can show on one line.
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
import unicodedata
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from perfkit.core.direction import DIRECTIONS
from perfkit.core.env import Env, GitState, GpuState, Source
from perfkit.core.errors import StoreError, located
from perfkit.store.metrics import MetricRecord
from perfkit.store.records import SOURCE_CSV, StoredRun, iso_utc, parse_time

REQUIRED = ("commit", "metric", "value", "unit", "direction", "gpu", "timestamp")
OPTIONAL = ("branch",)
TEXT_FIELDS = ("commit", "metric", "unit", "gpu", "branch")  # stored as given: no control characters


def _control(text: str) -> str | None:
    """The first control character of `text` (a line break, tab, NUL, ...), as Python writes it."""
    return next((repr(c)[1:-1] for c in text if unicodedata.category(c) == "Cc"), None)


def _rows(p: Path, text: str) -> Iterator[tuple[int, list[str]]]:
    """(line where the row starts, fields) of each row; a quoted field may span lines."""
    reader = csv.reader(io.StringIO(text, newline=""))
    start = 1
    try:
        for row in reader:
            yield start, row
            start = reader.line_num + 1
    except csv.Error as exc:
        raise StoreError(located(str(p), start, None, f"not CSV ({exc}); fix the row")) from None


@dataclass
class _Group:
    commit: str
    gpu: str
    branch: str | None
    first_epoch: float
    first_time: str
    samples: dict[str, list[float]]
    digest: hashlib._Hash


def parse_csv(path: str | Path, branch: str | None = None) -> list[StoredRun]:
    """Stored runs from a CSV file; StoreError (file:line:col) on the first bad row."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise StoreError(f"{p}: cannot read ({exc.strerror}); pass a CSV file") from None
    except UnicodeDecodeError:
        raise StoreError(f"{p}: not UTF-8 text; pass a CSV file") from None
    rows_in = _rows(p, text)
    header = next(rows_in, (1, []))[1]
    if not header or not any(h.strip() for h in header):
        raise StoreError(located(str(p), 1, None, f"empty file; the header must be {','.join(REQUIRED)}"))
    cols = [h.strip().lower() for h in header]
    missing = [c for c in REQUIRED if c not in cols]
    if missing:
        raise StoreError(located(str(p), 1, None, f"header lacks {', '.join(missing)}; "
                                 f"the header must be {','.join(REQUIRED)}[,branch]"))
    unknown = [c for c in cols if c not in REQUIRED + OPTIONAL]
    if unknown:
        col = cols.index(unknown[0]) + 1
        raise StoreError(located(str(p), 1, col, f"unknown column {unknown[0]!r}; "
                                 f"columns are {','.join(REQUIRED + OPTIONAL)}"))
    at = {c: cols.index(c) for c in cols}
    groups: dict[tuple[str, str], _Group] = {}
    meta: dict[str, tuple[str, str, int]] = {}  # metric -> unit, direction, first line
    rows = 0
    for line_no, row in rows_in:
        if not row or all(not x.strip() for x in row):
            continue
        if len(row) != len(cols):
            raise StoreError(located(str(p), line_no, None, f"{len(row)} fields, header has {len(cols)}; fix the row"))

        def field(name: str, _row: list[str] = row) -> str:
            return _row[at[name]].strip()

        def bad(name: str, what: str, _line: int = line_no) -> StoreError:
            return StoreError(located(str(p), _line, at[name] + 1, what))

        for name in (c for c in TEXT_FIELDS if c in at):
            char = _control(field(name))
            if char is not None:
                raise bad(name, f"{name} {field(name)[:60]!r} holds the control character '{char}' "
                                "(a quoted line break?); names are one line of text")
        commit, metric, gpu = field("commit"), field("metric"), field("gpu")
        for name, text_value in (("commit", commit), ("metric", metric), ("gpu", gpu)):
            if not text_value:
                raise bad(name, f"empty {name}; every row needs one")
        try:
            value = float(field("value"))
        except ValueError:
            raise bad("value", f"value {field('value')!r} is not a number") from None
        if not math.isfinite(value):
            raise bad("value", f"value {field('value')!r} is not finite")
        direction = field("direction").lower()
        if direction not in DIRECTIONS:
            raise bad("direction", f"direction {field('direction')!r}; use lower or higher (which is better)")
        unit = field("unit")
        try:
            when = parse_time(field("timestamp"))
        except ValueError:
            raise bad("timestamp", f"timestamp {field('timestamp')!r} is not ISO 8601 or Unix seconds") from None
        seen = meta.setdefault(metric, (unit, direction, line_no))
        if seen[:2] != (unit, direction):
            raise bad("unit" if seen[0] != unit else "direction",
                      f"metric {metric!r} has unit/direction {unit}/{direction} here but "
                      f"{seen[0]}/{seen[1]} on line {seen[2]}; make them agree")
        row_branch = field("branch") if "branch" in at else ""
        g = groups.get((commit, gpu))
        if g is None:
            g = groups[(commit, gpu)] = _Group(commit, gpu, row_branch or branch, when.timestamp(),
                                               iso_utc(when), defaultdict(list), hashlib.sha256())
        if when.timestamp() < g.first_epoch:
            g.first_epoch, g.first_time = when.timestamp(), iso_utc(when)
        g.samples[metric].append(value)
        g.digest.update(f"{metric}\x1f{value!r}\x1f{unit}\x1f{direction}\x1f{when.timestamp()}\x1e".encode())
        rows += 1
    if rows == 0:
        raise StoreError(located(str(p), 2, None, "no data rows after the header; nothing to ingest"))
    out = []
    for (commit, gpu), g in sorted(groups.items(), key=lambda kv: kv[1].first_epoch):
        g.digest.update(f"{commit}\x1f{gpu}\x1f{g.branch}".encode())
        metrics = tuple(
            MetricRecord(name, None, meta[name][0], meta[name][1], tuple(vals)) for name, vals in g.samples.items()
        )
        out.append(StoredRun(
            run_id=f"csv-{g.digest.hexdigest()[:20]}",
            created=g.first_time,
            gpu=gpu,
            device="external",
            status="complete",
            source=SOURCE_CSV,
            env=Env(gpus=(GpuState(name=gpu),), git=GitState(commit=commit, branch=g.branch),
                    source=Source(format=SOURCE_CSV, path=str(p))),
            metrics=metrics,
            commit=commit,
            branch=g.branch,
        ))
    return out
