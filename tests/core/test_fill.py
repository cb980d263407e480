"""FILL: the first placeholder's path inside a workload mapping."""

from __future__ import annotations

from perfkit.core.fill import FILL, first_fill


def test_first_fill_finds_the_path_or_none() -> None:
    assert first_fill({"kind": "gemm", "m": [1], "n": FILL}) == ("n",)
    assert first_fill({"kind": "moe", "tokens": [4, FILL]}) == ("tokens", 1)
    assert first_fill({"kind": "gemm", "m": [1], "name": "FILLER"}) is None
