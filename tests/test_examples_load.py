"""Every shipped example spec loads (schema, sweeps, model presets, launch rules): no ranks run."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfkit.pipeline.spec import load_spec
from perfkit.workloads.models.presets import PRESETS

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.yaml"))


def test_there_are_examples() -> None:
    assert len(EXAMPLES) >= 20 and any(p.name == "tp-decode-llama70b-8xh100.yaml" for p in EXAMPLES)


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_loads_with_points(path: Path) -> None:
    spec = load_spec(path)
    assert spec.points(), f"{path.name}: no points"


def test_tp_decode_llama70b_is_the_70b_shape_on_8_ranks() -> None:
    spec = load_spec(Path(__file__).resolve().parents[1] / "examples" / "tp-decode-llama70b-8xh100.yaml")
    assert spec.nproc == 8
    cfg = PRESETS["llama-3.1-70b"]
    assert (cfg.dim, cfg.n_layers, cfg.n_heads, cfg.n_kv_heads, cfg.ffn_dim, cfg.vocab_size) == (
        8192, 80, 64, 8, 28672, 128256)
    points = spec.points()
    assert {p.params["tp"] for p in points} == {8} and {p.params["dtype"] for p in points} == {"bf16"}
    assert {p.params["model"] for p in points} == {"llama-3.1-70b"}
