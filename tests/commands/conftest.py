"""Shared fixtures of the command tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh SQLite store in tmp_path, made the default (PERFKIT_DB); no step summary file."""
    url = f"sqlite:///{tmp_path / 'perfkit.db'}"
    monkeypatch.setenv("PERFKIT_DB", url)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return url
