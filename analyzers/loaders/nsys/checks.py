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

Cost: one SQL scan of plain aggregates per table proves the usual export clean (per column
count, min and max, which also size the table's columns, and one sum that turns real if any
value is a real); then it is read as before, without filters. Only a table with a damaged row
pays a second scan that counts by rule and column (`TableCheck._count`), a filter in each read
(`TableCheck.where`) and cleaned expressions (`TableCheck.sql`), so the counts, the bounds that
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
    holds; the reason reads `COLUMN WHAT`; `show` are the columns a located line prints.
    `test` says how the health scan's aggregates prove that no row breaks it: ("type",),
    ("null",), ("range", lo, hi), ("order", start) or ("span", start, limit)."""

    column: str
    what: str
    bad: str
    show: tuple[str, ...] = ()
    test: tuple[Any, ...] = ()

    @property
    def reason(self) -> str:
        return f"{self.column} {self.what}"


def integer_rules(column: str, lo: int, hi: int) -> list[Rule]:
    """`column` must be an integer in [lo, hi]."""
    return [Rule(column, "not an integer", f"NOT {is_int(column)}", (column,), ("type",)),
            Rule(column, "out of range", f"{q(column)} < {lo} OR {q(column)} > {hi}", (column,), ("range", lo, hi))]


def time_rules(start: str = "start", end: str = "end") -> list[Rule]:
    """Both times integers within +-TIME_LIMIT, the end not before the start, at most DUR_LIMIT apart."""
    both = (start, end)
    out = []
    for col in both:
        out += integer_rules(col, -TIME_LIMIT + 1, TIME_LIMIT - 1)
    out.append(Rule(end, f"before {start}", f"{q(end)} < {q(start)}", both, ("order", start)))
    out.append(Rule(end, f"over {DUR_LIMIT:,} ns after {start}", f"{q(end)} - {q(start)} > {DUR_LIMIT}", both,
                    ("span", start, DUR_LIMIT)))
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


Bound = Clean | str  # a describing column, or SQL over columns the rules check (`"end" - "start"`)
DUR = '"end" - "start"'


@dataclass(frozen=True)
class FirstOf:
    """The first usable value among several describing columns (a kernel's name ids), else -1."""

    cleans: tuple[Clean, ...]

    def present(self, check: TableCheck) -> list[Clean]:
        found = [c for c in self.cleans if check.export.has(check.table, c.column)]
        if not found:
            check.export.require(check.table, (self.cleans[0].column,))
        return found

    def sql(self, check: TableCheck) -> str:
        present = self.present(check)
        if check.clean:
            return f"COALESCE({', '.join(q(c.column) for c in present)}, -1)"
        whens = " ".join(f"WHEN {c.ok()} THEN {q(c.column)}" for c in present)
        return f"CASE {whens} ELSE -1 END"


@dataclass
class TableCheck:
    """The rules of one table and, after `run`, what they found.

    `run` first scans the table once for rows any rule or clean would touch, taking the min and
    max of each of `bounds` on the way; an export with none (the usual case) is then read as
    it is: `where` holds only the scope and `sql(clean)` is the plain column. Only a table with
    such rows pays a second scan that counts them by rule and column, a filter in every read,
    and a bounds scan of the cleaned values."""

    export: Export
    table: str
    rules: list[Rule]
    cleans: list[Clean] = field(default_factory=list)
    scope: str = ""  # SQL: only these rows are considered at all (NVTX: ranges)
    bounds: dict[str, Bound] = field(default_factory=dict)  # name -> what to take (min, max) of
    total: int = 0  # rows in scope
    kept: int = 0
    clean: bool = True  # no row broke a rule, no value was read as absent (but for `unfinished`)
    unfinished: list[str] = field(default_factory=list)  # clean but for NULLs a ("null",) rule leaves out
    found: dict[str, tuple[int, int] | None] = field(default_factory=dict)  # (min, max) of each bound
    dropped: dict[str, int] = field(default_factory=dict)  # "TABLE.column what" -> rows
    coerced: dict[str, int] = field(default_factory=dict)  # "TABLE.column: not ... read as -1" -> values
    _first: dict[int, int] = field(default_factory=dict)  # rule index -> rowid of its first row
    trusted: bool = False  # read the fast way (analyzers.loaders.nsys.trusted): no scan, chunks verified

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
        if self.rules and not self.clean:
            parts.append(f"{self.case()} = 0")
        parts += [f"{q(c)} IS NOT NULL" for c in self.unfinished]
        return f"WHERE {' AND '.join(parts)}" if parts else ""

    def sql(self, item: Bound | FirstOf) -> str:
        """SQL of a bound or describing column as read: NULL (and, in a table that needs it, an
        unusable value) as the default."""
        if isinstance(item, FirstOf):
            return item.sql(self)
        if isinstance(item, str):
            return item
        if not self.export.has(self.table, item.column):
            return str(item.default)
        if self.clean:
            return f"COALESCE({q(item.column)}, {item.default})"
        return item.sql(self.export, self.table)

    def trust(self) -> TableCheck:
        """No scan: the table is read the fast way, every chunk verified (`trusted.verify`), and a
        damaged one read again checked. Rows: the table's (a scoped table's are counted as read)."""
        self.trusted = True
        if not self.scope:
            self.total = self.kept = self.export.count(self.table)
        return self

    def start(self) -> TableCheck:
        """`trust()` when the export is read the fast way, else `run()`."""
        return self.trust() if self.export.trusting else self.run()

    def run(self) -> TableCheck:
        """Scan once; when a row needs it, count kept, dropped (by rule) and coerced (by column)."""
        scope = f"WHERE {self.scope}" if self.scope else ""
        health = _Health(self)
        found = self.export.query(f'SELECT {", ".join(health.sql)} FROM "{self.table}" {scope}')[0]
        self.total = self.kept = int(found[0])
        self.clean = health.clean(found)
        if self.clean:
            self.found = {k: health.bounds(found, k) for k in self.bounds}
            self._left_unfinished(health.unfinished(found), scope)
        else:
            self._count(scope)
            self.found = dict(zip(self.bounds, self.export.bounds(
                self.table, [self.sql(b) for b in self.bounds.values()], self.where), strict=True)) if self.bounds else {}
        self.export.known_counts[(self.table, self.where)] = self.kept
        return self

    def _left_unfinished(self, nulls: dict[int, int], scope: str) -> None:
        """A clean table but for rows a ("null",) rule leaves out (NVTX ranges that did not end):
        those are counted from the health scan and filtered by `where`, the rest read unfiltered."""
        for i, n in nulls.items():
            rule = self.rules[i]
            self.unfinished.append(rule.column)
            self.kept -= n  # one such rule per table: the rows do not overlap
            self.dropped[f"{self.table}.{rule.reason}"] = n
            if self.export.has_rowid(self.table):
                more = f"{scope} AND" if scope else "WHERE"
                found = self.export.query(f'SELECT min(rowid) FROM "{self.table}" {more} {q(rule.column)} IS NULL')
                if found and found[0][0] is not None:
                    self._first[i] = int(found[0][0])

    def _count(self, scope: str) -> None:
        sums = "".join(f", sum({c.bad()})" for c in self.cleans)
        first = ", min(rowid)" if self.export.has_rowid(self.table) else ", NULL"
        rows = self.export.query(f'SELECT {self.case()} AS r, count(*){first}{sums} FROM "{self.table}" {scope} GROUP BY r')
        coerced = [0] * len(self.cleans)
        self.kept = 0
        for r, n, rowid, *bad in rows:
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

class _Health:
    """The aggregates of the health scan and what they prove: min and max of every column read
    (text and blobs sort above every number, so a max that is no integer finds them), of each
    duration and bound, and one sum over the row of `c - c` (NULL as 0) and of `c IS NULL` for
    the columns that must not be NULL: an integer 0 unless some value is a real or missing."""

    def __init__(self, check: TableCheck) -> None:
        self.check = check
        self.sql: list[str] = ["count(*)"]
        self.at: dict[str, int] = {}
        columns = [r.column for r in check.rules] + [c.column for c in check.cleans]
        columns += [r.test[1] for r in check.rules if r.test and r.test[0] in ("order", "span")]
        columns = list(dict.fromkeys(columns))
        nullable = {r.column for r in check.rules if r.test and r.test[0] == "null"}  # counted, not odd
        required = [r.column for r in check.rules if r.test and r.test[0] == "type" and r.column not in nullable]
        required += [c.column for c in check.cleans if c.count_null]
        for col in sorted(nullable):
            self._add(f"count({q(col)})")
        for col in columns:
            self._add(f"min({q(col)})")
            self._add(f"max({q(col)})")
        for r in check.rules:
            if r.test and r.test[0] in ("order", "span"):
                self._add(f"min({q(r.column)} - {q(r.test[1])})")
                self._add(f"max({q(r.column)} - {q(r.test[1])})")
        for b in check.bounds.values():
            self._add(f"min({self._expr(b)})")
            self._add(f"max({self._expr(b)})")
        terms = [f"ifnull({q(c)} - {q(c)}, 0)" for c in columns] + [f"({q(c)} IS NULL)" for c in dict.fromkeys(required)]
        self.odd = f"sum({' + '.join(terms) or 0})"
        self._add(self.odd)

    def _expr(self, b: Bound) -> str:
        if isinstance(b, str):
            return b
        return q(b.column) if self.check.export.has(self.check.table, b.column) else str(b.default)

    def _add(self, sql: str) -> None:
        if sql not in self.at:
            self.at[sql] = len(self.sql)
            self.sql.append(sql)

    def clean(self, found: tuple[Any, ...]) -> bool:
        """Whether the aggregates prove that no row breaks a rule and no value needs cleaning."""
        if found[0] == 0:
            return True

        def get(sql: str) -> Any:
            return found[self.at[sql]]

        def ints(col: str, lo: int, hi: int) -> bool:  # every non-NULL value an integer in [lo, hi]
            a, b = get(f"min({q(col)})"), get(f"max({q(col)})")
            return a is None or (isinstance(a, int) and isinstance(b, int) and lo <= a and b <= hi)

        odd = get(self.odd)
        if not isinstance(odd, int) or odd != 0:  # a real somewhere, or a NULL where none may be
            return False
        for r in self.check.rules:
            kind = r.test[0] if r.test else None
            if kind == "type" and not ints(r.column, -(1 << 63), INT64_MAX):
                return False
            if kind == "range" and not ints(r.column, r.test[1], r.test[2]):
                return False
            if kind in ("order", "span"):
                d = get(f"min({q(r.column)} - {q(r.test[1])})"), get(f"max({q(r.column)} - {q(r.test[1])})")
                if not all(isinstance(v, int) for v in d) or d[0] < 0 or (kind == "span" and d[1] > r.test[2]):
                    return False
            if kind not in ("type", "null", "range", "order", "span"):
                return False  # a rule the aggregates cannot decide: count it row by row
        return all(ints(c.column, c.lo, c.hi) for c in self.check.cleans)

    def unfinished(self, found: tuple[Any, ...]) -> dict[int, int]:
        """{index of a ("null",) rule: rows it leaves out} (of a table otherwise clean)."""
        rules = self.check.rules
        out = {i: found[0] - found[self.at[f"count({q(r.column)})"]] for i, r in enumerate(rules)
               if r.test and r.test[0] == "null"}
        return {i: int(n) for i, n in out.items() if n}

    def bounds(self, found: tuple[Any, ...], name: str) -> tuple[int, int] | None:
        expr = self._expr(self.check.bounds[name])
        lo, hi = found[self.at[f"min({expr})"]], found[self.at[f"max({expr})"]]
        return None if lo is None else (int(lo), int(hi))


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
