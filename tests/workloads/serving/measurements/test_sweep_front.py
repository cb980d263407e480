"""The sweep's front: every stage on the plane, the dominated ones not marked."""

from __future__ import annotations

from perfkit.workloads.serving.measurements.sweep_front import SweepStage, sweep_front


def test_front_marks_the_dominated_point_and_leaves_off_failed() -> None:
    stages = [
        SweepStage("a", "concurrency=1", {"tpot_p50_s": 0.01, "output_tok_per_s": 100.0}),  # 100/user, 100
        SweepStage("a", "concurrency=4", {"tpot_p50_s": 0.02, "output_tok_per_s": 400.0,  # 50/user, 400
                                          "usd_per_1m_output_tok": 2.0,
                                          "server_metrics": {"server_gpu_energy_per_output_tok_j": 0.3}}),
        SweepStage("b", "concurrency=4", {"tpot_p50_s": 0.025, "output_tok_per_s": 300.0}),  # 40/user, 300: dominated
        SweepStage("b", "concurrency=8", {}, ok=False),
    ]
    rows, notes = sweep_front(stages, gpus=2)
    marks = {(r.config, r.stage): r.pareto for r in rows}
    assert marks == {("a", "concurrency=1"): True, ("a", "concurrency=4"): True, ("b", "concurrency=4"): False}
    assert rows[1].throughput_tok_per_s_per_gpu == 200.0 and rows[1].interactivity_tok_per_s == 50.0
    assert rows[1].usd_per_1m_output_tok == 2.0 and rows[1].energy_per_output_tok_j == 0.3
    assert notes == ["b/concurrency=8: not on the front (failed)"]
