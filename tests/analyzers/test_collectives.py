"""The collectives table on a real NCCL trace (../shared/bench), checked against its raw JSON."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import pytest

from analyzers.collectives import collective_summary
from analyzers.kineto import load_trace
from analyzers.suite import run_analyses

NCCL = Path(__file__).resolve().parents[2].parent / "shared" / "bench" / "traces" / "hta_nccl_data_a100.json.gz"
SIZE = {"Float": 4, "Long": 8, "Byte": 1}


@pytest.mark.skipif(not NCCL.exists(), reason="../shared/bench is absent")
def test_nccl_trace_collectives_match_the_raw_json() -> None:
    with gzip.open(NCCL, "rt") as fh:
        events = [e for e in json.load(fh)["traceEvents"] if e.get("ph") == "X"]
    kernel_us = {e["args"]["External id"]: e["dur"] for e in events if e["cat"] == "kernel" and "nccl" in e["name"]}
    expected: dict[tuple[str, int, str], list[float]] = defaultdict(list)
    for e in events:
        if e["name"] == "record_param_comms":
            a = e["args"]
            nbytes = max(a["In msg nelems"], a["Out msg nelems"]) * SIZE[a["dtype"]]
            on = "gpu" if a["External id"] in kernel_us else "cpu"
            expected[(a["Collective name"], nbytes, on)].append(kernel_us.get(a["External id"], e["dur"]))
    table = collective_summary(load_trace(NCCL))
    got = {(r.collective, r.message_bytes, r.timed_on): r for r in table.itertuples()}
    assert set(got) == set(expected)
    assert sum(r.count for r in table.itertuples() if r.timed_on == "gpu") == len(kernel_us) == 21
    for key, durs in expected.items():
        row = got[key]
        assert row.count == len(durs)
        assert row.total_ns == pytest.approx(sum(durs) * 1e3, abs=len(durs))
        if key[1]:
            assert row.algbw_bytes_per_s == pytest.approx(key[1] / (row.p50_ns * 1e-9))
    assert "collectives" in run_analyses(load_trace(NCCL), ["collectives"])
