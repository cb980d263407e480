"""The suite never touches the user's perfkit home or default store (tests/conftest.py)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from perfkit.roofline.calibration import perfkit_home
from perfkit.store.url import default_db_url


def test_perfkit_home_and_default_store_are_temporary() -> None:
    home = perfkit_home()
    assert Path.home() / ".cache" not in home.parents and Path(tempfile.gettempdir()) in home.parents
    assert "perfkit-tests-" in default_db_url() and not default_db_url().endswith(":///perfkit.db")


def test_subprocesses_inherit_the_hermetic_environment() -> None:
    assert "perfkit-tests-" in os.environ["PERFKIT_HOME"]
