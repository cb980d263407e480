"""rocprofv3 JSON -> EventTable: a real trace (TraceLens' 908_results, MI350X; see
data/rocprof/PROVENANCE.md) checked against numbers computed here from the raw JSON, exact to
the nanosecond; HIP API linking, memory copies and several processes on files built from the
real one; damaged files give one line and exit 2."""

from __future__ import annotations

import copy
import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perfkit.analyzers.event_table import Kind
from perfkit.analyzers.linking import gpu_ops
from perfkit.analyzers.loaders.rocprof.load import load_rocprof
from perfkit.analyzers.loaders.trace_files import load_trace_files, trace_format
from perfkit.cli import main
from perfkit.core.errors import TraceError

DATA = Path(__file__).parent / "data" / "rocprof"
REAL = DATA / "908_results.json.gz"


@pytest.fixture(scope="module")
def raw() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(gzip.decompress(REAL.read_bytes()))
    return doc


@pytest.fixture(scope="module")
def table() -> Any:
    return load_trace_files([REAL])


def _dispatches(raw: dict[str, Any]) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = raw["rocprofiler-sdk-tool"][0]["buffer_records"]["kernel_dispatch"]
    return records


@pytest.mark.slow
def test_kernel_count_and_time_per_gpu_equal_the_raw_json(raw: dict[str, Any], table: Any) -> None:
    proc = raw["rocprofiler-sdk-tool"][0]
    gpus = {a["id"]["handle"]: a["logical_node_type_id"] for a in proc["agents"] if a["type"] == 2}
    count: Counter[int] = Counter()
    total: Counter[int] = Counter()
    for r in _dispatches(raw):
        gpu = gpus[r["dispatch_info"]["agent_id"]["handle"]]
        count[gpu] += 1
        total[gpu] += r["end_timestamp"] - r["start_timestamp"]
    assert dict(count) == {0: 43915}  # one of the eight MI350X ran work
    assert trace_format(REAL) == "rocprofv3"
    kernels = table.mask_kind(Kind.KERNEL)
    assert int(kernels.sum()) == len(table) == 43915
    for gpu, n in count.items():
        on = kernels & (table["device"] == gpu)
        assert int(on.sum()) == n
        assert int(table["dur_ns"][on].astype(np.int64).sum()) == total[gpu] == 4_441_741_378
    assert table.ranks == [0]
    meta = table.meta[0]
    assert meta.source == "rocprofv3" and meta.world_size == 1
    assert meta.devices == ("AMD Instinct MI350X (gfx950) GPU 0",)


@pytest.mark.slow
def test_names_streams_queues_and_launch_configuration(raw: dict[str, Any], table: Any) -> None:
    proc = raw["rocprofiler-sdk-tool"][0]
    symbols = {s["kernel_id"]: s for s in proc["kernel_symbols"]}
    dispatches = _dispatches(raw)
    expected = Counter((symbols[r["dispatch_info"]["kernel_id"]]["formatted_kernel_name"],
                        r["end_timestamp"] - r["start_timestamp"]) for r in dispatches)
    names = table.name_of(table["name_id"])
    assert Counter(zip(names.tolist(), table["dur_ns"].tolist(), strict=True)) == expected
    assert not any(n.endswith(".kd") or n.startswith("_Z") for n in table.names)  # demangled, no clone suffix
    assert Counter(table["stream"].tolist()) == Counter(r["stream_id"]["handle"] for r in dispatches)
    assert Counter(table["tid"].tolist()) == Counter(r["dispatch_info"]["queue_id"]["handle"] for r in dispatches)
    assert table["correlation"].tolist() == [r["correlation_id"]["internal"] for r in dispatches]
    rows = np.arange(len(table))
    config = table.extras_at(("grid_x", "grid_y", "block_x", "registers", "static_smem_bytes"), rows)
    info = [r["dispatch_info"] for r in dispatches]
    assert config["block_x"].tolist() == [i["workgroup_size"]["x"] for i in info]
    assert config["grid_x"].tolist() == [-(-i["grid_size"]["x"] // i["workgroup_size"]["x"]) for i in info]
    assert config["grid_y"].tolist() == [-(-i["grid_size"]["y"] // i["workgroup_size"]["y"]) for i in info]
    assert config["static_smem_bytes"].tolist() == [i["group_segment_size"] for i in info]
    assert config["registers"].tolist() == [symbols[i["kernel_id"]]["arch_vgpr_count"] for i in info]
    assert len(table.extra["grid_x"]) < 1000  # interned: distinct configurations, not one per dispatch


def _small(raw: dict[str, Any], n: int = 6) -> dict[str, Any]:
    """The real file's first `n` dispatches with their symbols, as a new document."""
    doc = copy.deepcopy({k: v for k, v in raw.items()})
    proc = doc["rocprofiler-sdk-tool"][0]
    proc["buffer_records"]["kernel_dispatch"] = proc["buffer_records"]["kernel_dispatch"][:n]
    return doc


def _write(doc: dict[str, Any], path: Path) -> Path:
    path.write_text(json.dumps(doc, separators=(",", ":")))
    return path


def _op(proc: dict[str, Any], kind: str, name: str) -> tuple[int, int]:
    kinds = proc["strings"]["buffer_records"]
    k = next(i for i, entry in enumerate(kinds) if entry["kind"] == kind)
    return k, kinds[k]["operations"].index(name)


@pytest.mark.slow
def test_hip_launches_link_and_copies_land_on_their_gpu(raw: dict[str, Any], tmp_path: Path) -> None:
    doc = _small(raw)
    proc = doc["rocprofiler-sdk-tool"][0]
    records = proc["buffer_records"]
    gpu1 = next(a["id"]["handle"] for a in proc["agents"] if a["type"] == 2 and a["logical_node_type_id"] == 1)
    cpu = next(a["id"]["handle"] for a in proc["agents"] if a["type"] == 1)
    launch_kind, launch_op = _op(proc, "HIP_RUNTIME_API", "hipLaunchKernel")
    copy_kind, h2d = _op(proc, "MEMORY_COPY", "MEMORY_COPY_HOST_TO_DEVICE")
    for r in records["kernel_dispatch"]:
        corr = r["correlation_id"]["internal"]
        records["hip_api"].append({"size": 64, "kind": launch_kind, "operation": launch_op, "correlation_id":
                                   {"internal": corr, "external": 0}, "start_timestamp": r["start_timestamp"] - 5000,
                                   "end_timestamp": r["start_timestamp"] - 1000, "thread_id": 908})
    records["memory_copy"].append({"size": 80, "kind": copy_kind, "operation": h2d, "thread_id": 908,
                                   "correlation_id": {"internal": 99, "external": 0}, "start_timestamp": 100,
                                   "end_timestamp": 1100, "dst_agent_id": {"handle": gpu1},
                                   "src_agent_id": {"handle": cpu}, "bytes": 4096})
    table = load_rocprof(_write(doc, tmp_path / "linked.json"))
    assert table.ranks == [0, 1]  # GPU 0 (kernels) and GPU 1 (the copy): one rank per GPU agent
    runtime = table.mask_kind(Kind.RUNTIME)
    assert set(table.name_of(table["name_id"][runtime]).tolist()) == {"hipLaunchKernel"}
    assert table["rank"][runtime].tolist() == [0] * 6
    ops = gpu_ops(table)
    kernels = ops[ops["kind"] == int(Kind.KERNEL)]
    assert (kernels["launch_row"] >= 0).all() and set(kernels["api"].astype(str)) == {"kernel"}
    cp = table.mask_kind(Kind.MEMCPY)
    assert table.name_of(table["name_id"][cp]).tolist() == ["MEMORY_COPY_HOST_TO_DEVICE"]
    assert (table["bytes"][cp].tolist(), table["device"][cp].tolist(), table["rank"][cp].tolist()) == ([4096], [1], [1])
    assert table.meta[0].devices[1].endswith("GPU 1")


@pytest.mark.slow
def test_several_processes_and_files_number_ranks_on(raw: dict[str, Any], tmp_path: Path) -> None:
    doc = _small(raw)
    doc["rocprofiler-sdk-tool"].append(copy.deepcopy(doc["rocprofiler-sdk-tool"][0]))
    doc["rocprofiler-sdk-tool"][1]["metadata"]["pid"] = 909
    table = load_rocprof(_write(doc, tmp_path / "two.json"), rank_offset=0)
    assert table.ranks == [0, 1]
    assert "2 processes (pids 908, 909): one rank per process and GPU" in table.meta[0].warnings[0]
    one = _write(_small(raw, 3), tmp_path / "one.json")
    both = load_trace_files([one, tmp_path / "two.json"])
    assert both.ranks == [0, 1, 2] and len(both) == 3 + 12
    with pytest.raises(TraceError, match="not a rocprofv3 JSON among rocprofv3 files"):
        load_trace_files([one, Path("/work/shared/bench/traces/hta_cp_alexnet_a100.json.gz")])


@pytest.mark.slow
def test_dispatch_ending_before_it_starts_is_dropped_and_counted(raw: dict[str, Any], tmp_path: Path) -> None:
    doc = _small(raw)
    first = doc["rocprofiler-sdk-tool"][0]["buffer_records"]["kernel_dispatch"][0]
    first["end_timestamp"] = first["start_timestamp"] - 1
    table = load_rocprof(_write(doc, tmp_path / "neg.json"))
    assert len(table) == 5 and dict(table.meta[0].dropped) == {"ends before it starts": 1}


def _one_line_error(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["analyze", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and str(path) in err and "Traceback" not in err
    return err


@pytest.mark.slow
def test_damaged_files_give_one_line_and_exit_2(raw: dict[str, Any], tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    text = json.dumps(_small(raw), separators=(",", ":"))
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2])
    assert "truncated" in _one_line_error(cut, capsys)
    gz = tmp_path / "cut.json.gz"
    gz.write_bytes(gzip.compress(text.encode())[:-40])
    assert "damaged gzip data" in _one_line_error(gz, capsys)
    doc = _small(raw)
    del doc["rocprofiler-sdk-tool"][0]["buffer_records"]["kernel_dispatch"][2]["end_timestamp"]
    err = _one_line_error(_write(doc, tmp_path / "missing.json"), capsys)
    assert "kernel_dispatch[2]" in err and "end_timestamp" in err and "missing required field" in err
    doc = _small(raw)
    doc["rocprofiler-sdk-tool"][0]["buffer_records"]["kernel_dispatch"][1]["start_timestamp"] = "12"
    err = _one_line_error(_write(doc, tmp_path / "wrong.json"), capsys)
    assert "kernel_dispatch[1].start_timestamp" in err and "Expected `int`, got `str`" in err
    doc = _small(raw)
    doc["rocprofiler-sdk-tool"] = {"not": "a list"}
    assert "Expected `array`, got `object`" in _one_line_error(_write(doc, tmp_path / "shape.json"), capsys)


@pytest.mark.slow
def test_cli_analyze_reads_the_real_trace(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(REAL), "--only", "kernels", "--format", "json"]) == 0
    out = capsys.readouterr().out
    assert "ncclDevKernel_Generic_1" in out and "Cijk_" in out
