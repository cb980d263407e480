"""benchmarks/gpu_validate_memory.py --dry-run: the GPU memory validation's code path on the CPU
(the tiny decode model through the same memory pass); its GPU checks are skipped with the reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.gpu_validate_memory import main


@pytest.mark.slow
def test_dry_run_writes_the_budget_and_skips_the_gpu_checks(tmp_path: Path) -> None:
    import torch

    torch.set_num_threads(1)
    assert main(["--out", str(tmp_path), "--dry-run"]) == 0
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["dry_run"] is True and report["device"] == "cpu"
    names = [c["name"] for c in report["checks"]]
    assert names == ["graph_pools_visible", "segments_vs_memory_stats", "budget_vs_nvml", "non_torch_vs_context"]
    assert all(c["status"] == "skipped" and "CUDA" in c["reason"] for c in report["checks"])
    terms = {t["key"]: t for t in report["budget"]["terms"]}
    assert terms["weights_bytes"]["value_bytes"] > 0 and terms["non_torch_bytes"]["source"] == "not measured"
    assert (tmp_path / report["metrics"]["memory_artifact"]).is_file()
