"""profile {memory: true} on a tiny CPU decode spec: stored peak metrics, the inference memory
budget (adding up, beside the analytic KV estimate) in every view, and `perfkit gate` failing a
change that raises peak memory by more than 20% (real runs through the CLI)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfkit.analyzers.loaders.memory.load import load_memory_input
from perfkit.analyzers.memory.analysis import analyze_memory
from perfkit.cli import main
from perfkit.core.errors import SpecError
from perfkit.core.memory_budget import PARTITION
from perfkit.core.record import load_run
from perfkit.pipeline.spec import load_spec
from perfkit.reports.inference_budget import budget_json, budget_text, budgets_for_path
from perfkit.reports.markdown.budget import budget_lines

SPEC = """\
name: mem-tiny
device: cpu
seed: 0
cpu_threads: 1
timing: {{warmup_s: 0.01, budget_s: 0.05, min_reps: 3, max_reps: 10}}
profile: {{torch_profiler: false, nvtx: false, profiled_iters: 3, memory: true}}
workloads:
  - kind: decode
    name: tiny
    model: {{preset: tiny, dtype: fp32{extra}}}
    batch: [2]
    prompt_len: [16]
    decode_steps: [4]
    timed: [generate]
    generate_reps: 1
"""


def _profile(tmp: Path, name: str, extra: str) -> Path:
    spec = tmp / f"{name}.yaml"
    spec.write_text(SPEC.format(extra=extra))
    out = tmp / name
    assert main(["profile", str(spec), "--out", str(out), "--quiet", "--no-store"]) == 0
    (run_dir,) = out.iterdir()
    return run_dir


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    import torch

    torch.set_num_threads(1)
    tmp = tmp_path_factory.mktemp("decode-memory")
    # the candidate: the same point (same key and parameters) with a wider FFN: ~45% more weights
    return _profile(tmp, "base", ""), _profile(tmp, "cand", ", ffn_dim: 384"), _profile(tmp, "again", "")


@pytest.mark.slow
def test_memory_metrics_are_stored_with_the_budget_adding_up(runs: tuple[Path, Path, Path]) -> None:
    run = load_run(runs[0])
    (p,) = run.points
    m = p.metrics
    assert p.status == "ok" and m["peak_allocated_bytes"] > m["activation_peak_bytes"] > 0
    assert len(m["memory_samples"]["peak_allocated_bytes"]) == 3
    assert "peak_reserved_bytes" not in m and "not measured on CPU" in m["memory_not_measured"]  # never a fake 0
    assert (runs[0] / m["memory_artifact"]).is_file()
    b = p.memory_budget
    assert b is not None and b.device == "cpu" and b.batch == 2 and b.tokens_per_sequence == 20
    # tiny: 2 layers x 2 kv heads x 16 head dim x 4 bytes x 2 (K and V) per token
    assert b.kv_bytes_per_token == 512
    assert b.value("kv_cache_bytes") == b.value("kv_cache_estimate_bytes") == 512 * 2 * 20
    weights = 4 * (512 * 64 * 2 + 2 * (64 * 64 * 2 + 2 * 64 * 32 + 3 * 64 * 192 + 2 * 64) + 64)
    assert b.value("weights_bytes") == weights
    # the allocated terms add up to the worst call's peak; the CUDA-only ones are not measured
    assert sum(b.value(k) or 0 for k in PARTITION[:4]) == max(m["memory_samples"]["peak_allocated_bytes"])
    assert b.value("allocator_cache_bytes") is None and b.term("non_torch_bytes").source == "not measured"  # type: ignore[union-attr]
    w = b.what_if
    assert w is not None and w.utilization == 0.9 and w.tokens == w.kv_budget_bytes // 512 and w.sequences == w.tokens // 20


@pytest.mark.slow
def test_gate_fails_a_change_that_raises_peak_memory(runs: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    base, cand = (load_run(r).points[0].metrics["peak_allocated_bytes"] for r in runs[:2])
    assert cand > 1.2 * base
    # the wider FFN is a spec change: refused unless asked for, then judged
    assert main(["gate", "--baseline", str(runs[0]), "--candidate", str(runs[1]), "--format", "json"]) == 2
    assert "--across-specs" in capsys.readouterr().err
    code = main(["gate", "--baseline", str(runs[0]), "--candidate", str(runs[1]), "--format", "json",
                 "--across-specs"])
    text = capsys.readouterr().out
    assert code == 1, text
    rows = {r["metric"].split(":")[-1]: r for r in json.loads(text)["rows"]}
    # three identical samples per side (zero spread): a finite test, no division by zero
    peak = rows["peak_allocated_bytes"]
    assert peak["verdict"] == "regressed" and peak["change"] > 0.2, peak
    # the same spec again: the same peak (deterministic), no regression (the gate's assumed 1%
    # run-to-run spread without history keeps it from saying "unchanged": inconclusive)
    main(["gate", "--baseline", str(runs[0]), "--candidate", str(runs[2]), "--format", "json"])
    again = {r["metric"].split(":")[-1]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert again["peak_allocated_bytes"]["change"] == 0.0
    assert again["peak_allocated_bytes"]["verdict"] in ("unchanged", "inconclusive"), again["peak_allocated_bytes"]


@pytest.mark.slow
def test_budget_in_every_view_and_for_perfkit_memory(runs: tuple[Path, Path, Path]) -> None:
    run = load_run(runs[0])
    p = run.points[0]
    (found,) = budgets_for_path(runs[0] / p.metrics["memory_artifact"])  # a point's artifact
    assert found[0].key == p.key and budgets_for_path(runs[0])[0][1] == found[1]
    text = budget_text(found[1])
    assert "weights" in text and "activation peak" in text and "not measured on CPU" in text
    assert "fits at 90%" in text and "fits at 50%" in budget_text(found[1], 0.5)
    md = "\n".join(budget_lines(run, {}))
    assert "### Memory budget" in md and "KV cache \\(analytic\\)" in md
    data = budget_json(found[1])
    assert data["terms"][0]["label"] == "weights" and data["terms"][0]["definition"]
    # the artifact is a real profiler trace with memory events: memory A's analysis replays it
    result = analyze_memory(load_memory_input(runs[0] / p.metrics["memory_artifact"]))
    assert result.timeline.reported_checked > 0 and result.timeline.reported_mismatches == 0


@pytest.mark.slow
def test_perfkit_memory_prints_timeline_peak_and_budget(runs: tuple[Path, Path, Path],
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's check: `perfkit memory` on the CPU profile of the tiny decode model."""
    artifact = runs[0] / load_run(runs[0]).points[0].metrics["memory_artifact"]
    assert main(["memory", str(artifact), "--gpu-memory-utilization", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "peak" in out.lower() and "## memory budget: decode/tiny" in out
    assert "weights" in out and "fits at 50%" in out
    assert main(["memory", str(artifact), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["budgets"][0]["point"].startswith("decode/tiny") and doc["budgets"][0]["terms"]
    assert main(["memory", str(runs[0])]) == 0  # the run directory: budgets and the files to open
    out = capsys.readouterr().out
    assert "## memory budget" in out and artifact.name in out
    empty = runs[0].parent / "not-a-run"
    empty.mkdir()
    assert main(["memory", str(empty)]) == 2
    assert "without a run's memory budgets" in capsys.readouterr().err


def test_memory_options_are_validated(tmp_path: Path) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC.format(extra="").replace("memory: true", "memory: true, gpu_memory_utilization: 1.5"))
    with pytest.raises(SpecError, match="gpu_memory_utilization"):
        load_spec(spec)
