"""Where the store lives: `--db`, then PERFKIT_DB, then ./perfkit.db (SQLite)."""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "PERFKIT_DB"
DEFAULT_FILE = "perfkit.db"


def default_db_url() -> str:
    """PERFKIT_DB when set, else sqlite:///perfkit.db in the current directory."""
    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        return normalize_db_url(env)
    return sqlite_url(Path.cwd() / DEFAULT_FILE)


def sqlite_url(path: str | Path) -> str:
    return f"sqlite:///{Path(path).resolve()}"


def normalize_db_url(value: str | None) -> str:
    """A SQLAlchemy URL from a URL or a plain file path; None means the default."""
    if value is None or not str(value).strip():
        return default_db_url()
    text = str(value).strip()
    if "://" in text:
        if text.startswith(("postgres://", "postgresql://")):
            # psycopg 3 is the driver perfkit ships with (extra "postgres").
            return "postgresql+psycopg://" + text.split("://", 1)[1]
        return text
    return sqlite_url(text)


def sqlite_path(url: str) -> Path | None:
    """The file of a file-backed SQLite URL, else None."""
    if not url.startswith("sqlite"):
        return None
    rest = url.split("://", 1)[1] if "://" in url else ""
    if rest in ("", "/", "/:memory:") or ":memory:" in rest:
        return None
    return Path(rest[1:] if rest.startswith("/") else rest)
