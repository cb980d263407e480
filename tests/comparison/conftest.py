"""The comparison layer runs on a real store: the store tests' fixtures (SQLite and PostgreSQL)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("perfkit_store_fixtures",
                                               Path(__file__).parents[1] / "store" / "conftest.py")
assert _spec and _spec.loader
_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fixtures)

postgres_url = _fixtures.postgres_url
sqlite_url = _fixtures.sqlite_url
db_url = _fixtures.db_url
