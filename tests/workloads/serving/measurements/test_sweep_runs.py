"""A server sweep found again in stored runs (measurements/sweep_runs.py): the runs grouped by the
sweep id their stages record, configurations in the order they ran, repeats labelled `#r2`, the
front over every stage (sweep_front, as sweep.json's), the GPUs of the spec's price, runs from
before sweep ids grouped by their spec's name."""

from __future__ import annotations

from dataclasses import replace

from perfkit.workloads.serving.measurements.sweep_front import stages_of, sweep_front, sweep_stage
from perfkit.workloads.serving.measurements.sweep_runs import stored_sweeps
from tests.helpers.serving_runs import serving_run, sweep_run


def test_runs_of_one_sweep_draw_its_front_as_the_sweep_did() -> None:
    runs = [sweep_run("a1", "sw@1", "slow", 1.0, created="2026-01-05T00:00:01+00:00"),
            sweep_run("a2", "sw@1", "fast", 2.0, created="2026-01-05T00:00:02+00:00"),
            sweep_run("a3", "sw@1", "fast", 2.0, repeat=2, created="2026-01-05T00:00:03+00:00"),
            serving_run("other")]  # no server_launch: not a sweep's
    (sweep,) = stored_sweeps(runs, "chat")
    assert sweep.sweep_id == "sw@1" and sweep.gpus == 1
    assert [(c.name, c.run_ids) for c in sweep.configs] == [("slow", ("a1",)), ("fast", ("a2", "a3"))]
    assert sweep.configs[0].start_time_s == 2.5 and sweep.configs[1].command == "serve --cfg fast"
    stages = [f"{r.config}/{r.stage}" for r in sweep.front]
    assert stages == [f"{c}/concurrency={n}{s}" for c, s in (("slow", ""), ("fast", ""), ("fast", "#r2"))
                      for n in (1, 4, 16)]
    # the same rows as the sweep's own front over the same stage records
    expected, notes = sweep_front([sweep_stage(s) for run, cfg, rep in ((runs[0], "slow", 0), (runs[1], "fast", 0),
                                                                        (runs[2], "fast", 1))
                                   for s in stages_of(run.points, cfg, rep)], 1)
    assert list(sweep.front) == expected and list(sweep.notes) == notes
    assert notes == [f"{c}/front=interactivity{s}: not on the front (no TPOT or throughput)"
                     for c, s in (("slow", ""), ("fast", ""), ("fast", "#r2"))]
    # the faster configuration dominates the slower one at every load
    assert {r.config for r in sweep.front if r.pareto} == {"fast"}


def test_sweeps_apart_newest_first_gpus_from_the_price_and_runs_without_an_id() -> None:
    runs = [sweep_run("old", None, "x", 1.0, created="2026-01-01T00:00:00+00:00"),
            sweep_run("b1", "sw@2", "x", 1.0, created="2026-01-03T00:00:00+00:00", gpus=4),
            sweep_run("c1", "sw@3", "x", 1.0, created="2026-01-04T00:00:00+00:00")]
    sweeps = stored_sweeps(runs, "chat")
    assert [s.sweep_id for s in sweeps] == ["sw@3", "sw@2", "sw (no sweep id)"]
    by_id = {s.sweep_id: s for s in sweeps}
    per_gpu = {r.stage: r.throughput_tok_per_s_per_gpu for r in by_id["sw@2"].front}
    single = {r.stage: r.throughput_tok_per_s_per_gpu for r in by_id["sw@3"].front}
    assert per_gpu and all(abs(per_gpu[k] * 4 - single[k]) < 1e-9 for k in per_gpu)
    assert stored_sweeps(runs, "code") == []  # another workload's name


def test_a_failed_stage_is_a_note_not_a_point() -> None:
    run = sweep_run("f1", "sw@4", "x", 1.0)
    failed = tuple(replace(p, status="failed", error="HTTP 500", metrics={}) if p.key.endswith("concurrency=4") else p
                   for p in run.points)
    (sweep,) = stored_sweeps([replace(run, points=failed)], "chat")
    assert [r.stage for r in sweep.front] == ["concurrency=1", "concurrency=16"]
    assert "x/concurrency=4: not on the front (failed)" in sweep.notes
