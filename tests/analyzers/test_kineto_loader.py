"""Kineto loader: fields, timestamps, block splitting, metadata, multi-rank, and bad inputs."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import numpy as np
import pytest

from perfkit.analyzers.event_table import Kind
from perfkit.analyzers.loaders.kineto.load import load_trace, load_traces
from perfkit.core.errors import TraceError


def test_cpu_trace_rows_match_the_raw_events(cpu_trace: Path, raw) -> None:
    events = raw(cpu_trace)
    table = load_trace(cpu_trace)
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
    got = table.mask_kind(Kind.CPU_OP)
    assert got.sum() == len(ops) > 10
    names = table.name_of(table["name_id"][got])
    assert sorted(names) == sorted(e["name"] for e in ops)
    ts = np.sort(table["ts_ns"][got])
    want = np.sort([round(e["ts"] * 1000) for e in ops])
    assert np.array_equal(ts, want)
    assert table["dur_ns"][got].sum() == sum(round(e["dur"] * 1000) for e in ops)
    mm = np.flatnonzero(table.mask_kind(Kind.CPU_OP) & (table.name_of(table["name_id"]) == "aten::mm"))
    assert len(mm) == 2
    assert json.loads(table.args_text[table["dims_id"][mm[0]]]) == [[64, 64], [64, 64]]
    assert table.meta[0].rank == 0 and table.meta[0].rank_in_file is None
    assert table.meta[0].events_read == len(events)


def test_shape_arguments_kept_for_supported_ops(kineto, tmp_path: Path) -> None:
    t = kineto()
    t.cpu("aten::mm", 0, 5, **{"Input Dims": [[2, 3], [3, 4]], "Input type": ["float", "float"]})
    t.cpu("aten::add", 6, 5, **{"Input Dims": [[2, 4], [2, 4]], "Input type": ["float", "float"]})
    path = t.write(tmp_path / "shapes.json")
    default = load_trace(path)
    assert default["dims_id"].tolist() == [0, -1]  # only the op whose cost perfkit computes
    assert json.loads(default.args_text[0]) == [[2, 3], [3, 4]]
    every = load_trace(path, shapes="all")
    assert [json.loads(every.args_text[i]) for i in every["dims_id"]] == [[[2, 3], [3, 4]], [[2, 4], [2, 4]]]
    assert load_trace(path, shapes="none")["dims_id"].tolist() == [-1, -1]
    with pytest.raises(ValueError, match="shapes must be"):
        load_trace(path, shapes="some")


def test_float_nanosecond_timestamps_are_exact(kineto, tmp_path: Path) -> None:
    t = kineto()
    corr = t.launch(4786265413460.054, 3.217)
    t.gpu("k", 4786265413470.999, 0.001, corr)
    table = load_trace(t.write(tmp_path / "ns.json"))
    gpu = table.gpu_mask()
    assert table["ts_ns"][gpu][0] == 4786265413470999
    assert table["dur_ns"][gpu][0] == 1
    assert table["dur_ns"][table.mask_kind(Kind.RUNTIME)][0] == 3217


def test_integer_microsecond_epoch_timestamps(kineto, tmp_path: Path) -> None:
    t = kineto()
    corr = t.launch(1683564901951734, 15)
    t.gpu("k", 1683564902133354, 3, corr)
    table = load_trace(t.write(tmp_path / "us.json.gz"))
    assert table["ts_ns"][table.gpu_mask()][0] == 1683564902133354000


def test_tiny_blocks_split_between_events_only(kineto, tmp_path: Path) -> None:
    t = kineto(rank=3, world_size=4)
    for i in range(40):
        # names and args that contain the `},{` a naive splitter would cut at
        t.cpu("weird},{name" if i % 3 == 0 else f"op{i}", 10.0 * i, 5.0, note=[{"a": i}, {"b": "},{"}])
        t.kernel(f"kernel<{i % 4}>", 10.0 * i, 1.0, 10.0 * i + 2, 3.0)
    doc = t.document()
    doc["deviceProperties"] = [{"id": 0, "name": "GPU A"}, {"id": 1, "name": "GPU B"}]  # after the events
    path = tmp_path / "split.json"
    path.write_text(json.dumps(doc))
    whole = load_trace(path)
    for block in (64, 97, 300, 1024):
        part = load_trace(path, block_bytes=block)
        assert len(part) == len(whole) == 120
        assert np.array_equal(whole.name_of(whole["name_id"]), part.name_of(part["name_id"]))
        for col in whole.columns:
            if col != "name_id":
                assert np.array_equal(whole[col], part[col]), col
    assert whole.meta[0].rank == 3 and whole.meta[0].world_size == 4
    assert whole.meta[0].devices == ("GPU A", "GPU B")


def test_bare_event_array_and_gzip_give_the_same_table(kineto, tmp_path: Path) -> None:
    t = kineto()
    t.kernel("k1", 0, 2, 5, 10)
    t.kernel("k2", 3, 2, 16, 4)
    plain = load_trace(t.write(tmp_path / "a.json"))
    gz = load_trace(t.write(tmp_path / "a.json.gz"))
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(t.events))
    arr = load_trace(bare)
    for other in (gz, arr):
        assert np.array_equal(plain["ts_ns"], other["ts_ns"])
        assert list(plain.name_of(plain["name_id"])) == list(other.name_of(other["name_id"]))


def test_rocm_names_and_stream_zero(kineto, tmp_path: Path) -> None:
    t = kineto()
    t.kernel("Cijk_Alik_Bljk_HHS_BH_MT128x128x32", 0, 4, 10, 20, stream=0, api="hipExtModuleLaunchKernel")
    table = load_trace(t.write(tmp_path / "rocm.json"))
    gpu = np.flatnonzero(table.gpu_mask())
    assert table["stream"][gpu].tolist() == [0]
    assert table["stream"][table.mask_kind(Kind.RUNTIME)].tolist() == [-1]


def test_sync_and_python_events(kineto, tmp_path: Path) -> None:
    t = kineto()
    t.x("cuda_sync", "Stream Sync", 0, 50, pid=0, tid=7, stream=7, correlation=5)
    t.x("python_function", "<built-in method>", 0, 1)
    t.x("Trace", "PyTorch Profiler (0)", 0, 100, pid="Spans", tid="PyTorch Profiler")
    table = load_trace(t.write(tmp_path / "s.json"))
    assert list(table["kind"]) == [Kind.SYNC]  # python_function and the profiler span are dropped
    assert not table.gpu_mask().any()
    assert len(table.take(table.gpu_mask())) == 0 and len(table.take(np.arange(1))) == 1


def test_ranks_merge_and_conflicts(kineto, tmp_path: Path) -> None:
    paths = []
    for rank in (1, 0):
        t = kineto(rank=rank, world_size=2)
        t.kernel("k", 0, 1, 2, 3)
        paths.append(t.write(tmp_path / f"r{rank}.json"))
    merged = load_traces(paths)
    assert merged.ranks == [0, 1]
    assert np.bincount(merged["rank"]).tolist() == [2, 2]
    with pytest.raises(TraceError, match="rank 1 is also the rank of"):
        load_traces([paths[0], paths[0]])
    anon = []
    for i in range(2):
        t = kineto()
        t.kernel("k", 0, 1, 2, 3)
        anon.append(t.write(tmp_path / f"anon{i}.json"))
    assert load_traces(anon).ranks == [0, 1]  # no distributedInfo: position is the rank


@pytest.mark.parametrize(
    ("content", "pattern"),
    [
        (b"", r"empty"),
        (b"hello world", r"not JSON \(byte 0"),
        (b'{"schemaVersion": 1, "other": []}', r'no "traceEvents" array'),
        (b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1},\n {"ph": "X", "ts": 2', r"truncated at byte \d+ \(after event index 0\)"),
        (b'{"traceEvents": [{"ph": "X", "ts": 1}, {"ph": "X", "ts": 1x}]}', r"near byte \d+"),
        (b'{"traceEvents": [{"ph": "X", "ts": 1}]', r"truncated"),
        # a header nested 100,000 deep (msgspec's RecursionError before)
        (b'{"deviceProperties": ' + b"[" * 100_000 + b"]" * 100_000 + b', "traceEvents": [{"ph": "X", "ts": 1}]}',
         r"header is nested too deeply"),
        (b'{"traceEvents": [{"ph": "X", "ts": 1}], "zz": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
         r"nested too deeply"),
    ],
)
def test_bad_files_raise_one_line_errors(tmp_path: Path, content: bytes, pattern: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(TraceError, match=pattern) as info:
        load_trace(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message


def test_corrupt_byte_mid_file_is_located(kineto, tmp_path: Path) -> None:
    t = kineto()
    for i in range(300):
        t.kernel(f"k{i}", i, 1, i + 0.5, 0.2)
    data = bytearray(json.dumps(t.document()).encode())
    bad = data.index(b'"name": "k200"')  # an event far past the first blocks
    data[bad : bad + 1] = b"#"
    path = tmp_path / "corrupt.json"
    path.write_bytes(bytes(data))
    for block in (512, 1 << 20):
        with pytest.raises(TraceError, match=r"near byte \d+") as info:
            load_trace(path, block_bytes=block)
        match = re.search(r"near byte (\d+)", str(info.value))
        assert match and abs(int(match.group(1)) - bad) <= 2, (str(info.value), bad)


def test_truncated_gzip_and_missing_file(kineto, tmp_path: Path) -> None:
    t = kineto()
    for i in range(200):
        t.kernel(f"k{i}", i, 1, i + 0.5, 0.2)
    data = gzip.compress(json.dumps(t.document()).encode())
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceError, match=r"truncated|corrupt"):
        load_trace(cut)
    with pytest.raises(TraceError, match="cannot open"):
        load_trace(tmp_path / "nope.json")
