"""Damaged and hostile rocprofv3 JSON through `perfkit analyze`: the rocprof loader's damage matrix.

The document is the real file's first six dispatches (tests/analyzers/data/rocprof), damaged in
one field at a time. Every case is exit 2 with one line naming the file (a file that is not the
layout), or exit 0 with the damaged record left out and counted, or its value read as unknown.
"""

from __future__ import annotations

import copy
import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from perfkit.analyzers.loaders.rocprof.schema import read_bytes
from perfkit.cli import main
from perfkit.core.errors import TraceError

REAL = Path(__file__).parent / "data" / "rocprof" / "908_results.json.gz"
U64 = (1 << 64) - 1


@pytest.fixture(scope="module")
def small() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(gzip.decompress(REAL.read_bytes()))
    proc = doc["rocprofiler-sdk-tool"][0]
    proc["buffer_records"] = {"kernel_dispatch": proc["buffer_records"]["kernel_dispatch"][:6]}
    proc["kernel_symbols"] = [s for s in proc["kernel_symbols"]
                              if s["kernel_id"] in {k["dispatch_info"]["kernel_id"] for k in
                                                    proc["buffer_records"]["kernel_dispatch"]}]
    return doc


def _run(path: Path, capsys: pytest.CaptureFixture[str], *more: str) -> tuple[int, str, list[str]]:
    capsys.readouterr()
    rc = main(["analyze", str(path), *more])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return rc, out, err.strip().splitlines()


def _first(p: dict[str, Any]) -> dict[str, Any]:
    first: dict[str, Any] = p["buffer_records"]["kernel_dispatch"][0]
    return first


# damage, then (the note of what was left out, or "" when every kernel is kept)
DAMAGE: list[tuple[str, Callable[[dict[str, Any]], object], str]] = [
    ("start-2-63", lambda p: _first(p).update(start_timestamp=(1 << 63) - 1), "ends before it starts (1)"),
    ("start-10-30", lambda p: _first(p).update(start_timestamp=10**30), "ends before it starts (1)"),
    ("start-and-end-10-30", lambda p: _first(p).update(start_timestamp=10**30, end_timestamp=10**30 + 5),
     "start or end beyond 2^62 ns (146 years) (1)"),
    ("start-and-end-2-64", lambda p: _first(p).update(start_timestamp=U64 - 1, end_timestamp=U64),
     "start or end beyond 2^62 ns (146 years) (1)"),
    ("start-minus-2-63", lambda p: _first(p).update(start_timestamp=-(1 << 63)), "start or end beyond 2^62 ns"),
    ("correlation-u64", lambda p: _first(p)["correlation_id"].update(internal=U64), ""),
    ("queue-handle-u64", lambda p: _first(p)["dispatch_info"]["queue_id"].update(handle=U64), ""),
    ("grid-u64", lambda p: _first(p)["dispatch_info"]["grid_size"].update(x=U64), ""),
    ("workgroup-zero", lambda p: _first(p)["dispatch_info"]["workgroup_size"].update(x=0), ""),
    ("workgroup-negative", lambda p: _first(p)["dispatch_info"]["workgroup_size"].update(x=-5, y=-1), ""),
    ("agent-unknown", lambda p: _first(p)["dispatch_info"]["agent_id"].update(handle=123456789), ""),
    ("gpu-index-2-62", lambda p: [a.update(logical_node_type_id=1 << 62) for a in p["agents"] if a["type"] == 2], ""),
    ("symbols-twice", lambda p: p["kernel_symbols"].extend(copy.deepcopy(p["kernel_symbols"])), ""),
    ("hip-call-kind-2-62", lambda p: p["buffer_records"].update(hip_api=[{
        "kind": 1 << 62, "operation": -1, "thread_id": U64, "correlation_id": {"internal": U64, "external": 0},
        "start_timestamp": 1, "end_timestamp": 2}]), ""),
    ("copy-bytes-negative", lambda p: p["buffer_records"].update(memory_copy=[{
        "kind": 1, "operation": 2, "thread_id": 1, "correlation_id": {"internal": 1}, "start_timestamp": 1,
        "end_timestamp": 2, "dst_agent_id": {"handle": 1}, "src_agent_id": {"handle": 2}, "bytes": -1}]), ""),
]


@pytest.mark.parametrize(("damage", "note"), [pytest.param(d, n, id=i) for i, d, n in DAMAGE])
def test_a_damaged_value_is_left_out_or_read_as_unknown(small: dict[str, Any], tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str],
                                                        damage: Callable[[dict[str, Any]], object], note: str) -> None:
    doc = copy.deepcopy(small)
    damage(doc["rocprofiler-sdk-tool"][0])
    path = tmp_path / "damaged.json"
    path.write_text(json.dumps(doc))
    rc, out, err = _run(path, capsys, "--format", "json", "--only", "kernels")
    assert rc == 0, err
    kernels = [k for k in json.loads(out)["kernels"] if k["kind"] == "kernel"]
    assert sum(k["count"] for k in kernels) == (5 if note else 6)
    assert all(k["total_ns"] >= 0 for k in kernels)
    if note:
        assert any("events left out" in line and note in line for line in err), err


def _text(small: dict[str, Any]) -> str:
    return json.dumps(small)


REFUSED: list[tuple[str, Callable[[str], bytes], str]] = [
    ("cut-at-30", lambda t: t[:30].encode(), "Input data was truncated; the file is cut short"),
    ("cut-at-half", lambda t: t[: len(t) // 2].encode(), "Input data was truncated"),
    ("cut-before-the-last-byte", lambda t: t[:-1].encode(), "Input data was truncated"),
    ("nan", lambda t: t.replace('"start_timestamp": ', '"start_timestamp": NaN, "x": ', 1).encode(),
     "invalid character"),
    ("1e999", lambda t: t.replace('"start_timestamp": ', '"start_timestamp": 1e999, "x": ', 1).encode(),
     "kernel_dispatch[0].start_timestamp: Number out of range"),
    ("a-float-time", lambda t: t.replace('"start_timestamp": ', '"start_timestamp": 1.5, "x": ', 1).encode(),
     "Expected `int`, got `float`"),
    ("a-name-not-text", lambda t: t.replace('"formatted_kernel_name": ', '"formatted_kernel_name": 5, "x": ',
                                             1).encode(), "formatted_kernel_name: Expected `str`, got `int`"),
    ("nested-100000-deep", lambda t: t.replace('"start_timestamp": ', '"zz": ' + "[" * 100_000 + "]" * 100_000
                                                + ', "start_timestamp": ', 1).encode(), "nested too deeply to decode"),
    ("garbage-after-the-key", lambda t: b'{"rocprofiler-sdk-tool"' + bytes(range(256)) * 4, "not valid JSON"),
    ("empty-gzip", lambda t: b"", "the file is empty"),
    ("gzip-cut", lambda t: gzip.compress(t.encode())[:-40], "damaged gzip data"),
]


@pytest.mark.parametrize(("make", "needle"), [pytest.param(m, n, id=i) for i, m, n in REFUSED])
def test_a_file_that_is_not_the_layout_is_one_line_exit_2(small: dict[str, Any], tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str],
                                                          make: Callable[[str], bytes], needle: str) -> None:
    path = tmp_path / ("results.json.gz" if needle in ("the file is empty", "damaged gzip data") else "results.json")
    path.write_bytes(make(_text(small)))
    rc, out, err = _run(path, capsys)
    assert rc == 2 and out == "" and len(err) == 1, err
    assert err[0].startswith(f"perfkit: error: {path}") and needle in err[0], err


def test_plain_json_named_gz_reads_by_its_content(small: dict[str, Any], tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "results.json.gz"
    path.write_text(_text(small))
    rc, out, _ = _run(path, capsys, "--format", "json", "--only", "kernels")
    assert rc == 0 and sum(k["count"] for k in json.loads(out)["kernels"]) == 6


def test_a_gzip_bomb_stops_at_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "bomb.json.gz"
    path.write_bytes(gzip.compress(b" " * (4 << 20)))  # 4 MiB of spaces: 4 KiB gzipped
    with pytest.raises(TraceError, match=r"gunzips to more than 1,048,576 bytes of JSON"):
        read_bytes(path, limit=1 << 20)
    assert len(read_bytes(path, limit=8 << 20)) == 4 << 20


def test_kernel_names_are_escaped_in_the_terminal(small: dict[str, Any], tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    doc = copy.deepcopy(small)
    evil = "\x1b[31mk\x07</td>=1+1\u202e"
    for s in doc["rocprofiler-sdk-tool"][0]["kernel_symbols"]:
        s["formatted_kernel_name"] = evil
    path = tmp_path / "names.json"
    path.write_text(json.dumps(doc))
    rc, out, _ = _run(path, capsys, "--only", "kernels", "--wide")
    assert rc == 0 and "\x1b" not in out and "\x07" not in out and "\\x1b[31mk\\x07</td>=1+1\\u202e" in out
    rc, out, _ = _run(path, capsys, "--only", "kernels", "--format", "csv")
    # CSV keeps the name, its control characters as visible \xNN text (perfkit/core/csv_cells.py)
    assert rc == 0 and "\x1b" not in out and "\\x1b[31mk\\x07</td>=1+1" in out
