"""The collectives table on a real 2-rank gloo run of examples/collectives-cpu.yaml (~30 s)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfkit.analyzers.collectives import ALL_RANKS, collective_summary
from perfkit.analyzers.loaders.kineto.load import load_traces
from perfkit.core.errors import EXIT_OK
from perfkit.core.record import load_run

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
pytest.importorskip("torch.distributed")
GLOO_NAME = {"reduce_scatter": "all_reduce"}  # gloo runs reduce_scatter as an all_reduce of the input


def test_gloo_collectives_table_sizes_and_counts(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "perfkit", "profile", str(REPO / "examples" / "collectives-cpu.yaml"),
           "--out", str(tmp_path), "--no-store", "--quiet", "--quick"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=400)
    assert proc.returncode == EXIT_OK, proc.stderr[-3000:]
    run_dir = Path(proc.stdout.strip().splitlines()[-1])
    run = load_run(run_dir)
    for p in run.points:
        table = collective_summary(load_traces([run_dir / t for t in p.metrics["rank_traces"]]))
        op = p.params["op"]
        size = p.params.get("message_bytes", p.params["size_bytes"])
        assert sorted(table["rank"]) == [ALL_RANKS, 0, 1], p.key
        assert set(table["collective"]) == {GLOO_NAME.get(op, op)}
        assert set(table["message_bytes"]) == {size}, p.key
        assert set(table["dtype"]) == {p.params["dtype"]} and set(table["timed_on"]) == {"cpu"}
        assert set(table["group_size"]) == {2}
        per_rank = table[table["rank"] >= 0]
        assert per_rank["count"].tolist() == [1, 1]  # profiled_iters: 1 timed call per rank
        assert (per_rank["algbw_bytes_per_s"] == size / (per_rank["p50_ns"] * 1e-9)).all()
