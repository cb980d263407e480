"""The shipped example trace loads and fills the main tables (a user without a GPU starts here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.forked_cli import run_perfkit

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "traces" / "alexnet-a100.json.gz"


def test_example_trace_has_provenance_and_licence() -> None:
    folder = EXAMPLE.parent
    assert (folder / "LICENSE-HTA").read_text().startswith("MIT License")
    assert EXAMPLE.name in (folder / "PROVENANCE.md").read_text()


def test_example_trace_runs_every_table() -> None:
    from perfkit.analyzers.loaders.kineto.load import load_trace
    from perfkit.analyzers.suite import run_analyses

    table = load_trace(EXAMPLE)
    tables = run_analyses(table)
    kernels = tables["kernels"]
    assert int(kernels.loc[kernels["kind"] == "kernel", "count"].sum()) == 79
    assert int(kernels.loc[kernels["kind"] == "memcpy", "count"].sum()) == 16
    assert tables["launch"]["linked_ops"].iloc[0] == 98


@pytest.mark.slow
def test_example_trace_from_the_cli() -> None:
    out = run_perfkit(["analyze", str(EXAMPLE), "--only", "kernels", "--top", "3"], Path.cwd(), timeout_s=120)
    assert out.returncode == 0, out.stderr
    assert "ampere_sgemm_32x32_sliced1x4_tn" in out.stdout
