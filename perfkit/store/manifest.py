"""manifest.json of a store export: what `perfkit store export` wrote and `perfkit store import`
checks before it touches a store.

    {"format": "perfkit-store-export", "format_version": 1, "schema_version": 2,
     "perfkit_version": "0.1.0", "created": "2026-01-01T00:00:00+00:00",
     "checksum": "<how the checksums are made>",
     "tables": [{"name": "runs", "file": "runs.parquet", "rows": 12,
                 "checksum": "sha256:<64 hex digits>", "primary_key": ["run_id"],
                 "columns": [{"name": "run_id", "type": "string", "nullable": false}, ...]}, ...]}

Tables are listed parents first. A column's type is its checksum kind (int, float, bool, string).
Parsing is a boundary: anything not of this shape is one `FILE: what; what to do` StoreError.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfkit.core.errors import StoreError, echo
from perfkit.store.checksum import KINDS, PREFIX
from perfkit.store.transfer_tables import TransferColumn

FORMAT = "perfkit-store-export"
FORMAT_VERSION = 1
FILE_NAME = "manifest.json"
CHECKSUM_RULE = ("sha256 over each row's canonical encoding (perfkit.store.checksum), rows in primary-key "
                 "order")
REEXPORT = "re-export the store with `perfkit store export`"
_DIGEST = re.compile(re.escape(PREFIX) + r"[0-9a-f]{64}")
MAX_MANIFEST_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class TableEntry:
    name: str
    file: str
    rows: int
    checksum: str
    primary_key: tuple[str, ...]
    columns: tuple[TransferColumn, ...]


@dataclass(frozen=True)
class Manifest:
    schema_version: int
    perfkit_version: str
    created: str
    tables: tuple[TableEntry, ...]

    def table(self, name: str) -> TableEntry | None:
        return next((t for t in self.tables if t.name == name), None)


def to_json(manifest: Manifest) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "schema_version": manifest.schema_version,
        "perfkit_version": manifest.perfkit_version,
        "created": manifest.created,
        "checksum": CHECKSUM_RULE,
        "tables": [
            {"name": t.name, "file": t.file, "rows": t.rows, "checksum": t.checksum,
             "primary_key": list(t.primary_key),
             "columns": [{"name": c.name, "type": c.kind, "nullable": c.nullable} for c in t.columns]}
            for t in manifest.tables
        ],
    }


def read_manifest(in_dir: Path) -> Manifest:
    """The manifest of the export in `in_dir`; StoreError (one line) when missing or not of its shape."""
    path = in_dir / FILE_NAME
    if not path.is_file():
        what = "is a folder" if path.is_dir() else "missing"
        raise StoreError(f"{path}: {what}; {in_dir} is not a perfkit store export: pass the folder "
                         "`perfkit store export` wrote, or " + REEXPORT)
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_MANIFEST_BYTES + 1)
    except OSError as exc:
        raise StoreError(f"{path}: cannot read it ({exc.strerror}); check its permissions") from None
    if len(data) > MAX_MANIFEST_BYTES:
        raise StoreError(f"{path}: over {MAX_MANIFEST_BYTES} bytes, not a manifest; {REEXPORT}")
    try:
        doc = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise StoreError(f"{path}: not UTF-8 text (byte {exc.start}); {REEXPORT}") from None
    except json.JSONDecodeError as exc:
        raise StoreError(f"{path}:{exc.lineno}:{exc.colno}: not JSON ({exc.msg}); {REEXPORT}") from None
    return _parse(doc, path)


def _bad(path: Path, where: str, what: str) -> StoreError:
    return StoreError(f"{path}: {where}: {what}; the manifest is damaged or hand-edited, {REEXPORT}")


def _field(obj: dict[str, Any], key: str, kind: type | tuple[type, ...], path: Path, where: str) -> Any:
    value = obj.get(key)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        shown = "missing" if key not in obj else f"{echo(value, 40)} is not {_kind_name(kind)}"
        raise _bad(path, f"{where}{key}", shown)
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {int: "an integer", str: "a string", list: "a list", dict: "an object", bool: "true or false"}
    return names.get(kind, "of the right type") if isinstance(kind, type) else "of the right type"


def _parse(doc: Any, path: Path) -> Manifest:
    if not isinstance(doc, dict):
        raise _bad(path, "top level", "not a JSON object")
    if doc.get("format") != FORMAT:
        raise StoreError(f"{path}: format is {echo(doc.get('format'), 40)}, not {FORMAT!r}; not a perfkit "
                         f"store export, {REEXPORT}")
    version = _field(doc, "format_version", int, path, "")
    if version != FORMAT_VERSION:
        raise StoreError(f"{path}: export format version {version}, this perfkit reads {FORMAT_VERSION}; "
                         "import it with the perfkit that exported it")
    tables = _field(doc, "tables", list, path, "")
    return Manifest(
        schema_version=_field(doc, "schema_version", int, path, ""),
        perfkit_version=_field(doc, "perfkit_version", str, path, ""),
        created=_field(doc, "created", str, path, ""),
        tables=tuple(_table(t, path, i) for i, t in enumerate(tables)),
    )


def _table(obj: Any, path: Path, index: int) -> TableEntry:
    where = f"tables[{index}]."
    if not isinstance(obj, dict):
        raise _bad(path, f"tables[{index}]", "not a JSON object")
    rows = _field(obj, "rows", int, path, where)
    if rows < 0:
        raise _bad(path, f"{where}rows", f"{rows} is negative")
    digest = _field(obj, "checksum", str, path, where)
    if not _DIGEST.fullmatch(digest):
        raise _bad(path, f"{where}checksum", f"{echo(digest, 40)} is not {PREFIX}<64 hex digits>")
    name = _field(obj, "name", str, path, where)
    file = _field(obj, "file", str, path, where)
    if file != f"{name}.parquet":
        raise _bad(path, f"{where}file", f"{echo(file, 60)} is not {name}.parquet")
    keys = _field(obj, "primary_key", list, path, where)
    columns = _field(obj, "columns", list, path, where)
    return TableEntry(name=name, file=file, rows=rows, checksum=digest,
                      primary_key=tuple(str(k) for k in keys),
                      columns=tuple(_column(c, path, f"{where}columns[{i}]") for i, c in enumerate(columns)))


def _column(obj: Any, path: Path, where: str) -> TransferColumn:
    if not isinstance(obj, dict):
        raise _bad(path, where, "not a JSON object")
    kind = _field(obj, "type", str, path, where + ".")
    if kind not in KINDS:
        raise _bad(path, f"{where}.type", f"{echo(kind, 40)} is not one of {', '.join(KINDS)}")
    return TransferColumn(name=_field(obj, "name", str, path, where + "."), kind=kind,
                          nullable=_field(obj, "nullable", bool, path, where + "."))
