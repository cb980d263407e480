"""The nsys loader's boundary: which rows of a table are read, and what is said about the rest.

SQLite is dynamically typed: a column declared INTEGER can hold text, a real, a blob or NULL,
and nothing stops a damaged export from holding an `end` before its `start` or a deviceId of
2^31-1. Every table perfkit reads is checked in SQL before it is read:

- a row is **left out** when a column it cannot do without is unusable (a time that is not an
  integer, out of range, an end before the start, a duration over `DUR_LIMIT`, a device or
  stream id that is not a non-negative integer); counted per table and column in
  `TraceMeta.dropped` (`CUPTI_ACTIVITY_KIND_KERNEL.end before start`), the first rows located
  in `TraceMeta.warnings` (`FILE: TABLE rowid N: end 5 before start 1000; left out`);
- a value of a column that only links or describes a row (correlationId, globalPid, bytes,
  copy kinds, launch configuration, name ids) that is not an integer in its range is **read as
  absent** (-1) and counted in `TraceMeta.coerced`; NULL there is simply absent, not counted.

One SQL scan per table gives every count (`TableCheck.run`); the readers then select with
`TableCheck.where` and the cleaned expressions (`Clean.sql`), so the counts, the bounds that
size the columns and the rows read always agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from perfkit.analyzers.loaders.nsys.schema import Export

TIME_LIMIT = 1 << 62  # |start|, |end| below this: the difference of any two times fits in int64
DUR_LIMIT = 1 << 48  # ns (3.3 days): a longer GPU op, API call or range is a damaged time
SUM_LIMIT = 1 << 58  # ns (9 years): durations of one kind in one file summed past this are damaged
INT32_MAX = (1 << 31) - 1
UINT32_MAX = (1 << 32) - 1
INT64_MAX = (1 << 63) - 1
MAX_WARNINGS = 5  # located lines per file; the rest are counted
_SHOWN = 40  # characters of a bad value shown in a located line


def q(column: str) -> str:
    return f'"{column}"'


def is_int(column: str) -> str:
    return f"typeof({q(column)}) = 'integer'"


@dataclass(frozen=True)
class Rule:
    """A row is left out when `bad` (SQL, never NULL for a row that passed the earlier rules)
    holds; the reason reads `COLUMN WHAT`; `show` are the columns a located line prints."""

    column: str
    what: str
    bad: str
    show: tuple[str, ...] = ()

    @property
    def reason(self) -> str:
        return f"{self.column} {self.what}"


def integer_rules(column: str, lo: int, hi: int) -> list[Rule]:
    """`column` must be an integer in [lo, hi]."""
    return [Rule(column, "not an integer", f"NOT {is_int(column)}", (column,)),
            Rule(column, "out of range", f"{q(column)} < {lo} OR {q(column)} > {hi}", (column,))]


def time_rules(start: str = "start", end: str = "end") -> list[Rule]:
    """Both times integers within +-TIME_LIMIT, the end not before the start, at most DUR_LIMIT apart."""
    both = (start, end)
    out = []
    for col in both:
        out += integer_rules(col, -TIME_LIMIT + 1, TIME_LIMIT - 1)
    out.append(Rule(end, f"before {start}", f"{q(end)} < {q(start)}", both))
    out.append(Rule(end, f"over {DUR_LIMIT:,} ns after {start}", f"{q(end)} - {q(start)} > {DUR_LIMIT}", both))
    return out


@dataclass(frozen=True)
class Clean:
    """A describing column read as an integer in [lo, hi], else `default` (NULL counted only
    with `count_null`: most such columns are NULL where they do not apply)."""

    column: str
    lo: int
    hi: int
    default: int = -1
    count_null: bool = False

    def ok(self) -> str:
        return f"{is_int(self.column)} AND {q(self.column)} BETWEEN {self.lo} AND {self.hi}"

    def sql(self, export: Export, table: str) -> str:
        if not export.has(table, self.column):
            return str(self.default)
        return f"CASE WHEN {self.ok()} THEN {q(self.column)} ELSE {self.default} END"

    def bad(self) -> str:
        if self.count_null:
            return f"(NOT coalesce({self.ok()}, 0))"
        return f"({q(self.column)} IS NOT NULL AND NOT ({self.ok()}))"


@dataclass
class TableCheck:
    """The rules of one table and, after `run`, what they found."""

    export: Export
    table: str
    rules: list[Rule]
    cleans: list[Clean] = field(default_factory=list)
    scope: str = ""  # SQL: only these rows are considered at all (NVTX: ranges)
    total: int = 0  # rows in scope
    kept: int = 0
    dropped: dict[str, int] = field(default_factory=dict)  # "TABLE.column what" -> rows
    coerced: dict[str, int] = field(default_factory=dict)  # "TABLE.column: not ... read as -1" -> values
    _first: dict[int, int] = field(default_factory=dict)  # rule index -> rowid of its first row

    def __post_init__(self) -> None:
        self.rules = [r for r in self.rules if self.export.has(self.table, r.column)]
        self.cleans = [c for c in self.cleans if self.export.has(self.table, c.column)]

    def case(self) -> str:
        """SQL: 0 for a kept row, else 1 + the index of the first rule it breaks."""
        if not self.rules:
            return "0"
        whens = " ".join(f"WHEN {r.bad} THEN {i + 1}" for i, r in enumerate(self.rules))
        return f"(CASE {whens} ELSE 0 END)"

    @property
    def where(self) -> str:
        parts = [f"({self.scope})"] if self.scope else []
        if self.rules:
            parts.append(f"{self.case()} = 0")
        return f"WHERE {' AND '.join(parts)}" if parts else ""

    def run(self) -> TableCheck:
        """Count kept, dropped (by rule) and coerced (by column) rows in one scan."""
        sums = "".join(f", sum({c.bad()})" for c in self.cleans)
        has_rowid = self.export.has_rowid(self.table)
        first = ", min(rowid)" if has_rowid else ", NULL"
        scope = f"WHERE {self.scope}" if self.scope else ""
        rows = self.export.query(f'SELECT {self.case()} AS r, count(*){first}{sums} FROM "{self.table}" {scope} GROUP BY r')
        coerced = [0] * len(self.cleans)
        for r, n, rowid, *bad in rows:
            self.total += int(n)
            if r == 0:
                self.kept = int(n)
                coerced = [int(b or 0) for b in bad]
            else:
                rule = self.rules[int(r) - 1]
                self.dropped[f"{self.table}.{rule.reason}"] = int(n)
                if rowid is not None:
                    self._first[int(r) - 1] = int(rowid)
        for c, n in zip(self.cleans, coerced, strict=True):
            if n:
                what = "NULL or not" if c.count_null else "not"
                self.coerced[f"{self.table}.{c.column}: {what} an integer in [{c.lo}, {c.hi}], read as {c.default}"] = n
        self.export.known_counts[(self.table, self.where)] = self.kept
        return self

    def located(self, limit: int, then: str = "; left out") -> list[str]:
        """Up to `limit` lines, one per reason, naming the first row it left out and its values."""
        out = []
        for i, rowid in sorted(self._first.items(), key=lambda kv: kv[1])[:limit]:
            rule = self.rules[i]
            cols = ", ".join(q(c) for c in rule.show) or "NULL"
            found = self.export.query(f'SELECT {cols} FROM "{self.table}" WHERE rowid = ?', (rowid,))
            values = ", ".join(f"{c} {_shown(v)}" for c, v in zip(rule.show, found[0] if found else (), strict=False))
            out.append(f"{self.export.path}: {self.table} rowid {rowid}: {rule.reason}"
                       f"{f' ({values})' if values else ''}{then}")
        return out


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


@dataclass
class Findings:
    """Everything the checks of one file found: counts and located lines, for `TraceMeta`."""

    dropped: dict[str, int] = field(default_factory=dict)
    coerced: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    located: list[str] = field(default_factory=list)

    def add(self, check: TableCheck) -> None:
        self.dropped.update(check.dropped)
        self.coerced.update(check.coerced)
        room = MAX_WARNINGS - len(self.located)
        if room > 0 and check.dropped:
            self.located.extend(check.located(room))

    def drop(self, reason: str, n: int) -> None:
        if n:
            self.dropped[reason] = self.dropped.get(reason, 0) + n

    def lines(self) -> list[str]:
        """The located drops first (at most MAX_WARNINGS), then the other warnings."""
        return self.located[:MAX_WARNINGS] + self.warnings
