"""The mutations of benchmarks/hostile_fuzz.py: each damages one input file in place."""

from __future__ import annotations

import gzip
import json
import math
import os
import random
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

# Values a retyped key gets: each a class of damage (wrong type, out of range, not finite, odd text).
ODD_VALUES: list[tuple[str, Any]] = [
    ("string", "abc"), ("object", {"x": 1}), ("list", [1, 2]), ("null", None), ("nan", math.nan),
    ("inf", math.inf), ("-inf", -math.inf), ("1e308", 1e308), ("-1", -1), ("zero", 0), ("true", True),
    ("2**70", 2**70), ("long-string", "x" * 100_000), ("control-chars", "a\x00b\x1b[31m\u202e名\n"),
    ("empty-string", ""),
]


DEEP = "__perfkit_fuzz_deep__"  # replaced by 5,000 nested lists once the document is text


@dataclass(frozen=True)
class Mutation:
    name: str
    apply: Callable[[Path, random.Random], None]

    def cleanup(self, path: Path) -> None:
        lock = _LOCKS.pop(path, None)
        if lock is not None:
            lock.close()
        if path.is_fifo() or path.is_symlink():
            path.unlink()


_LOCKS: dict[Path, sqlite3.Connection] = {}  # a store held locked while its case runs


def _lock_store(path: Path, rng: random.Random) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN EXCLUSIVE")
    _LOCKS[path] = conn


def _rename_table(path: Path, rng: random.Random) -> None:
    """A store of the wrong schema: one of its tables renamed."""
    conn = sqlite3.connect(path)
    tables = sorted(r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
    table = rng.choice(tables)
    conn.execute(f'ALTER TABLE "{table}" RENAME TO "{table}_old"')
    conn.commit()
    conn.close()


def _drop_column(path: Path, rng: random.Random) -> None:
    """A store of the wrong schema: a table rebuilt without one of its columns."""
    conn = sqlite3.connect(path)
    tables = sorted(r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
    _without_a_column(conn, rng.choice(tables), rng)
    conn.close()


def _without_a_column(conn: sqlite3.Connection, table: str, rng: random.Random) -> None:
    """Rebuild `table` without one of its columns (chosen by `rng`); a one-column table stays."""
    columns = [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]
    if len(columns) > 1:
        dropped = rng.choice(columns)
        keep = ", ".join(f'"{c}"' for c in columns if c != dropped)
        conn.executescript(f'PRAGMA foreign_keys = OFF; CREATE TABLE "t_new" AS SELECT {keep} FROM "{table}"; '
                           f'DROP TABLE "{table}"; ALTER TABLE "t_new" RENAME TO "{table}";')


STORE_MUTATIONS = [Mutation("store-locked", _lock_store), Mutation("store-table-renamed", _rename_table),
                   Mutation("store-column-dropped", _drop_column)]


# Tables a reader reads: an nsys export's (analyzers/loaders/nsys) and a perfkit store's.
READ_TABLES = ("StringIds", "META_DATA_EXPORT", "CUPTI_ACTIVITY_KIND_", "NVTX_EVENTS", "TARGET_INFO_GPU", "ENUM_CUDA_",
               "runs", "points", "metrics", "samples", "kernels")
# A cell's damage: SQLite stores what it is given whatever the column's type.
CELL_VALUES: list[tuple[str, Any]] = [
    ("text", "abc"), ("null", None), ("real", 1.5), ("-1", -1), ("int64-max", 2**63 - 1),
    ("past-64-bits", 2.0**64), ("digits-past-64-bits", "18446744073709551616"), ("1e308", 1e308),
    ("-1e308", -1e308), ("not-json", "{not json"), ("blob", b"\x00\xff"),
]


def _read_tables(conn: sqlite3.Connection) -> list[str]:
    tables = sorted(r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
    read = [t for t in tables if t.startswith(READ_TABLES) and conn.execute(f'SELECT 1 FROM "{t}" LIMIT 1').fetchone()]
    return read or tables


def _drop_table(path: Path, rng: random.Random) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(f'PRAGMA foreign_keys = OFF; DROP TABLE "{rng.choice(_read_tables(conn))}";')
    conn.close()


def _drop_read_column(path: Path, rng: random.Random) -> None:
    conn = sqlite3.connect(path)
    _without_a_column(conn, rng.choice(_read_tables(conn)), rng)
    conn.close()


def _cell_edit(value: Any, table: str | None = None, column: str | None = None) -> Callable[[Path, random.Random], None]:
    """Set one column of a read table (random unless named) to `value` in a third of its rows."""
    def apply(path: Path, rng: random.Random) -> None:
        conn = sqlite3.connect(path)
        name = table or rng.choice(_read_tables(conn))
        columns = [r[1] for r in conn.execute(f'PRAGMA table_info("{name}")')]
        for col in [column] if column else rng.sample(columns, len(columns)):
            try:  # an INTEGER PRIMARY KEY takes only integers, a NOT NULL column no NULL: the next column
                conn.execute(f'UPDATE "{name}" SET "{col}" = ? WHERE rowid % 3 = 0 OR '
                             f'rowid = (SELECT MIN(rowid) FROM "{name}")', (value,))
            except sqlite3.IntegrityError:
                continue
            conn.commit()
            break
        conn.close()
    return apply


SQLITE_MUTATIONS = [Mutation("table-dropped", _drop_table), Mutation("column-dropped", _drop_read_column)]
CELL_MUTATIONS = [Mutation(f"cell={kind}", _cell_edit(value)) for kind, value in CELL_VALUES]
# A store's rows as a hand or another tool may leave them: samples NaN (SQLite keeps NULL), negative,
# huge, text; a JSON column that is not JSON.
ROW_MUTATIONS = [Mutation(f"samples.value={kind}", _cell_edit(value, "samples", "value"))
                 for kind, value in (("nan", math.nan), ("-1", -1.0), ("1e308", 1e308), ("text", "abc"),
                                     ("inf", math.inf))]
ROW_MUTATIONS += [Mutation(f"metrics.value={kind}", _cell_edit(value, "metrics", "value"))
                  for kind, value in (("nan", math.nan), ("-1", -1.0), ("1e308", 1e308))]
ROW_MUTATIONS += [Mutation(f"{table}.{column}=not-json", _cell_edit("{not json", table, column))
                  for table, column in (("runs", "env_json"), ("runs", "spec_json"), ("runs", "run_json"),
                                        ("points", "params_json"), ("points", "point_json"),
                                        ("kernels", "extra_json"))]
ROW_MUTATIONS += [Mutation(f"{table}.{column}={kind}", _cell_edit(value, table, column))
                  for table, column in (("runs", "env_json"), ("points", "point_json"))
                  for kind, value in (("json-list", "[1]"), ("json-nan", '{"x": NaN}'), ("null", None))]


def _bytes(name: str, edit: Callable[[bytes, random.Random], bytes]) -> Mutation:
    def apply(path: Path, rng: random.Random) -> None:
        path.write_bytes(edit(path.read_bytes(), rng))
    return Mutation(name, apply)


def _truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(max(1, len(data)))]


def _flip(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if out:
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    return bytes(out)


def _text(data: bytes) -> str:
    raw = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
    return raw.decode("utf-8", errors="replace")


def _regzip(data: bytes, new: bytes) -> bytes:
    return gzip.compress(new, mtime=0) if data[:2] == b"\x1f\x8b" else new


def _special(name: str, make: Callable[[Path], None]) -> Mutation:
    def apply(path: Path, rng: random.Random) -> None:
        path.unlink()
        make(path)
    return Mutation(name, apply)


def _symlink_loop(path: Path) -> None:
    os.symlink(path.name, path)


FILE_MUTATIONS: list[Mutation] = [
    _bytes("empty", lambda d, r: b""),
    _bytes("utf16", lambda d, r: _regzip(d, _text(d).encode("utf-16"))),
    _bytes("bom", lambda d, r: _regzip(d, b"\xef\xbb\xbf" + _text(d).encode())),
    _bytes("latin1", lambda d, r: _regzip(d, _text(d).replace('"', '"\u00e9', 1).encode("latin-1", errors="replace"))),
    _bytes("gzip-of-garbage", lambda d, r: gzip.compress(bytes(r.randrange(256) for _ in range(512)))),
    _bytes("gzip-header-garbage", lambda d, r: b"\x1f\x8b\x08\x00" + bytes(r.randrange(256) for _ in range(64))),
    _bytes("nul-inside", lambda d, r: _regzip(d, _text(d).replace(":", ":\x00", 1).encode())),
    _special("directory", lambda p: p.mkdir()),
    _special("fifo", lambda p: os.mkfifo(p)),
    _special("symlink-loop", _symlink_loop),
]


def _paths(node: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [at]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*at, key))
    elif isinstance(node, list):
        for i, value in enumerate(node[:20]):
            found += _paths(value, (*at, i))
    return found


def _parent(doc: Any, at: tuple[Any, ...]) -> Any:
    for key in at[:-1]:
        doc = doc[key]
    return doc


def _tree_edit(doc: Any, rng: random.Random, how: str) -> str:
    """Edit one random node of `doc` in place; a word saying what was done."""
    paths = [p for p in _paths(doc) if p]
    if not paths:
        return "nothing"
    at = rng.choice(paths)
    parent = _parent(doc, at)
    label = ".".join(map(str, at))[:60]
    if how == "delete":
        del parent[at[-1]]
    elif how == "list-to-dict" and isinstance(parent[at[-1]], list):
        parent[at[-1]] = {str(i): v for i, v in enumerate(parent[at[-1]])}
    elif how == "deep":
        parent[at[-1]] = DEEP
    else:
        kind, value = rng.choice(ODD_VALUES)
        parent[at[-1]] = value
        label += "=" + kind
    return label


def _structured(kind: str, how: str) -> Mutation:
    def apply(path: Path, rng: random.Random) -> None:
        data = path.read_bytes()
        text = _text(data)
        if kind == "json":
            doc = json.loads(text)
            _tree_edit(doc, rng, how)
            new = json.dumps(doc)
        elif kind == "jsonl":
            lines = [json.loads(line) for line in text.splitlines() if line.strip()]
            _tree_edit(lines, rng, how)
            new = "\n".join(json.dumps(line) for line in lines) + "\n"
        else:
            doc = yaml.safe_load(text)
            _tree_edit(doc, rng, how)
            new = yaml.safe_dump(doc, width=10**6)
        new = new.replace(json.dumps(DEEP), "[" * 5000 + "1" + "]" * 5000).replace(DEEP, "[" * 5000 + "1" + "]" * 5000)
        path.write_bytes(_regzip(data, new.encode()))
    return Mutation(f"{how}", apply)


def _duplicate_key(path: Path, rng: random.Random) -> None:
    """Repeat a random `"key": ` / `key:` line or member with another value (text level)."""
    data = path.read_bytes()
    lines = _text(data).splitlines(keepends=True)
    if len(lines) > 1:
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
    path.write_bytes(_regzip(data, "".join(lines).encode()))


def _csv_cell(path: Path, rng: random.Random) -> None:
    lines = path.read_text(errors="replace").splitlines()
    row = rng.randrange(len(lines))
    cells = lines[row].split(",")
    cells[rng.randrange(len(cells))] = str(rng.choice(ODD_VALUES)[1])[:5000].replace(",", ";")
    lines[row] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")


def mutations_for(kind: str, rng: random.Random, random_count: int) -> list[Mutation]:
    """The fixed file-level mutations, then `random_count` random ones of the format."""
    fixed = list(FILE_MUTATIONS)
    pool: list[Mutation] = [_bytes("truncate", _truncate), _bytes("flip", _flip)]
    if kind in ("json", "jsonl", "yaml"):
        pool += [_structured(kind, how) for how in ("delete", "retype", "retype", "retype", "list-to-dict")]
        fixed += [_structured(kind, "deep"), Mutation("duplicate-line", _duplicate_key)]
    elif kind == "store":
        fixed += STORE_MUTATIONS
        pool += STORE_MUTATIONS[1:]
    elif kind == "sqlite":
        fixed = fixed[:1] + fixed[-3:] + SQLITE_MUTATIONS + CELL_MUTATIONS
        pool = SQLITE_MUTATIONS + CELL_MUTATIONS
    elif kind == "rows":
        fixed = list(ROW_MUTATIONS)
        pool = CELL_MUTATIONS
    elif kind == "csv":
        pool += [Mutation("csv-cell", _csv_cell)] * 4 + [Mutation("duplicate-line", _duplicate_key)]
    picked = [rng.choice(pool) for _ in range(random_count)]
    return fixed + [Mutation(f"{m.name}#{i}", m.apply) for i, m in enumerate(picked)]
