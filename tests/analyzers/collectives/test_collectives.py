"""The collectives table: a real NCCL trace (../shared/bench) checked against its raw JSON; small built traces."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from perfkit.analyzers.collectives.analysis import COLLECTIVE_COLUMNS, collective_summary
from perfkit.analyzers.collectives.kernels import collective_of
from perfkit.analyzers.collectives.names import canonical_collective
from perfkit.analyzers.loaders.kineto.load import load_trace
from perfkit.analyzers.suite import run_analyses

NCCL = Path(__file__).resolve().parents[3].parent / "shared" / "bench" / "traces" / "hta_nccl_data_a100.json.gz"
SIZE = {"Float": 4, "Long": 8, "Byte": 1}


@pytest.mark.slow
@pytest.mark.skipif(not NCCL.exists(), reason="../shared/bench is absent")
def test_nccl_trace_collectives_match_the_raw_json() -> None:
    with gzip.open(NCCL, "rt") as fh:
        events = [e for e in json.load(fh)["traceEvents"] if e.get("ph") == "X"]
    kernel_us = {e["args"]["External id"]: e["dur"] for e in events if e["cat"] == "kernel" and "nccl" in e["name"]}
    expected: dict[tuple[str, int | None, str], list[float]] = defaultdict(list)
    for e in events:
        if e["name"] == "record_param_comms":
            a = e["args"]
            nbytes = max(a["In msg nelems"], a["Out msg nelems"]) * SIZE[a["dtype"]]
            on = "gpu" if a["External id"] in kernel_us else "cpu"
            expected[(canonical_collective(a["Collective name"]), nbytes or None, on)].append(kernel_us.get(a["External id"], e["dur"]))
    table = collective_summary(load_trace(NCCL))
    got: dict[tuple[Any, ...], Any] = {
        (r["collective"], None if pd.isna(r["message_bytes"]) else r["message_bytes"], r["timed_on"]): r
        for r in table.to_dict("records")}
    assert set(got) == set(expected)
    assert int(table.loc[table["timed_on"] == "gpu", "count"].sum()) == len(kernel_us) == 21
    for key, durs in expected.items():
        row = got[key]
        assert row["count"] == len(durs)
        assert row["total_ns"] == pytest.approx(sum(durs) * 1e3, abs=len(durs))
        if key[1]:
            assert row["algbw_bytes_per_s"] == pytest.approx(key[1] / (row["p50_ns"] * 1e-9))
    assert "collectives" in run_analyses(load_trace(NCCL), ["collectives"])


def _comm_args(name: str, n_in: int, n_out: int, ext: int) -> dict[str, Any]:
    return {"External id": ext, "Collective name": name, "In msg nelems": n_in, "Out msg nelems": n_out,
            "dtype": "BFloat16", "Group size": 4, "Process Group Name": "0"}


@pytest.mark.parametrize("loose", [False, True])
def test_kernel_time_else_cpu_time_on_both_decoder_paths(kineto: Callable[..., Any], tmp_path: Path, loose: bool) -> None:
    t = kineto(rank=0, world_size=4)
    t.cpu("record_param_comms", 10, 5, **_comm_args("allgather", 1024, 4096, 7))
    t.cpu("record_param_comms", 30, 5, **_comm_args("allgather", 1024, 4096, 9))
    t.cpu("record_param_comms", 50, 2, **_comm_args("wait", 0, 0, 11))
    t.cpu("aten::mm", 60, 2, **{"External id": 12, "Collective name": "not a collective"})
    corr = t.launch(12, 1)
    t.gpu("ncclKernel_AllGather", 20, 40, corr, **{"External id": 7})
    corr = t.launch(32, 1)
    last = t.gpu("ncclKernel_AllGather", 70, 20, corr, **{"External id": 9})
    if loose:
        last["args"]["stream"] = "7"  # a string where an integer belongs: the loose decoder
    table = load_trace(t.write(tmp_path / "t.json"))
    assert int((table["comm_id"] >= 0).sum()) == 3  # aten::mm's args are not read
    out = collective_summary(table)
    gather = out[out["collective"] == "all_gather"].iloc[0]
    assert (gather["message_bytes"], gather["dtype"], gather["group_size"]) == (8192, "bf16", 4)
    assert (gather["timed_on"], gather["count"], gather["total_ns"], gather["p50_ns"]) == ("gpu", 2, 60_000, 30_000)
    assert gather["algbw_bytes_per_s"] == pytest.approx(8192 / 30e-6)
    wait = out[out["collective"] == "wait"].iloc[0]
    assert (wait["timed_on"], wait["total_ns"]) == ("cpu", 2000) and np.isnan(wait["algbw_bytes_per_s"])
    assert pd.isna(wait["message_bytes"])  # a wait moves nothing: unsized, not a 0-byte message


def test_no_collectives_is_an_empty_table(cpu_trace: Path) -> None:
    out = collective_summary(load_trace(cpu_trace))
    assert out.empty and list(out.columns) == COLLECTIVE_COLUMNS


@pytest.mark.parametrize(("spelled", "name"), [
    ("allreduce", "all_reduce"), ("allreduce_coalesced", "all_reduce"), ("_allgather_base", "all_gather"),
    ("allgather_into_tensor_coalesced", "all_gather"), ("_reduce_scatter_base", "reduce_scatter"),
    ("reduce_scatter_tensor_coalesced", "reduce_scatter"), ("alltoall_base", "all_to_all"),
    ("all_to_all_single", "all_to_all"), ("AllReduce", "all_reduce"), ("SendRecv", "send_recv"),
    ("cross_device_reduce", "all_reduce"), ("broadcast", "broadcast"), ("wait", "wait"), ("", ""),
])  # fmt: skip
def test_one_name_per_collective_whoever_spelled_it(spelled: str, name: str) -> None:
    assert canonical_collective(spelled) == name


def test_args_and_kernel_rows_of_one_collective_share_its_name() -> None:
    # c10d's record_param_comms says "allreduce", NCCL's kernel "AllReduce": one name in the table
    assert canonical_collective("allreduce") == collective_of("ncclDevKernel_AllReduce_Sum_bf16_RING_LL")[0]
