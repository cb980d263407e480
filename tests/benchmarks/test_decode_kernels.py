"""Kernels / ops per decode step from a real torch.profiler trace of the tiny model on the CPU:
the fused harness runs fewer GEMMs (gate / up as one) and fewer ops per step than the unfused."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from benchmarks.decode_kernels import count_step_events, traced_steps
from perfkit.analyzers.graph_coverage import load_events
from perfkit.profiler.trace_capture import capture_trace
from perfkit.workloads.models.build import build_model
from perfkit.workloads.models.fuse import fuse_projections
from perfkit.workloads.models.presets import PRESETS
from perfkit.workloads.models.stepper import Stepper


def _trace(tmp_path: Path, fuse: bool) -> Path:
    torch.set_num_threads(1)
    model = build_model(PRESETS["tiny"], "fp32", "cpu", 0)
    if fuse:
        fuse_projections(model)
    model.setup_caches(1, 16)
    stepper = Stepper(model, 1, "cpu", "eager")
    stepper.set_pos(5)
    path = tmp_path / f"fused-{fuse}.json.gz"
    with torch.no_grad():
        capture_trace(stepper.run, "cpu", path, iters=3, label="decode/step")
    return path


@pytest.mark.slow
def test_fused_step_runs_fewer_gemms_and_ops(tmp_path: Path) -> None:
    layers = PRESETS["tiny"].n_layers
    plain = count_step_events(load_events(_trace(tmp_path, False)), label="decode/step")
    fused = count_step_events(load_events(_trace(tmp_path, True)), label="decode/step")
    assert plain["steps"] == fused["steps"] == 3
    assert plain["linear_per_step"] == 5 * layers + 1  # wqkv, wo, w1, w3, w2 per layer + lm_head
    assert fused["linear_per_step"] == 4 * layers + 1  # gate / up as one
    assert 0 < fused["cpu_ops_per_step"] < plain["cpu_ops_per_step"]
    for counts in (plain, fused):  # a CPU trace: no GPU kernels, no graph launches, nothing hidden
        assert counts["kernels_per_step"] == 0 and counts["graph_launches_per_step"] == 0
        assert counts["kernels_hidden"] is False


def test_a_trace_without_the_label_is_refused(tmp_path: Path) -> None:
    events = load_events(_trace(tmp_path, True))
    assert traced_steps([e for e in events if e.get("ph") == "X"], "decode/step") == 3
    with pytest.raises(ValueError, match="no other/label range"):
        count_step_events(events, label="other/label")
