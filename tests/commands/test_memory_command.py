"""`perfkit memory`: a snapshot with an OOM, a Kineto trace, diff, --oom, json, html, bad input."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from perfkit.cli import main

MiB = 1 << 20
EVIL_NAME = "\x1b[31mevil</script><b>x</b>"


def snapshot(path: Path, extra: int = 0) -> Path:
    frames = [{"name": EVIL_NAME, "filename": "model.py", "line": 3}]
    data = {
        "segments": [{"device": 0, "address": 0, "total_size": 8 * MiB, "stream": 0, "segment_type": "large",
                      "segment_pool_id": [0, 0], "is_expandable": False, "blocks": [
                          {"size": 2 * MiB, "state": "active_allocated", "requested_size": 2 * MiB, "frames": frames},
                          {"size": 3 * MiB, "state": "inactive"},
                          {"size": 1 * MiB, "state": "active_allocated", "requested_size": MiB, "frames": []},
                          {"size": 2 * MiB, "state": "inactive"}]},
                     {"device": 0, "address": 100 * MiB, "total_size": 2 * MiB, "segment_pool_id": [1, 2],
                      "blocks": [{"size": 2 * MiB, "state": "inactive"}]}],
        "device_traces": [[
            {"action": "segment_alloc", "addr": 0, "size": 8 * MiB, "time_us": 1},
            {"action": "alloc", "addr": 0, "size": 2 * MiB, "time_us": 2, "frames": frames},
            {"action": "alloc", "addr": 2 * MiB, "size": (3 * MiB) + extra, "time_us": 3, "frames": []},
            {"action": "free_requested", "addr": 2 * MiB, "size": (3 * MiB) + extra, "time_us": 4},
            {"action": "free_completed", "addr": 2 * MiB, "size": (3 * MiB) + extra, "time_us": 5},
            {"action": "alloc", "addr": 5 * MiB, "size": MiB, "time_us": 6},
            {"action": "oom", "addr": MiB, "size": 4 * MiB, "time_us": 7}]],
    }
    path.write_bytes(pickle.dumps(data))
    return path


def test_table_explains_peak_fragmentation_and_the_oom(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", str(snapshot(tmp_path / "s.pickle"))]) == 0
    out = capsys.readouterr().out
    assert "peak allocated 5 MiB at event 2" in out
    assert "external fragmentation" in out and "1 - largest free / total free" in out
    assert "fits-defragmented" in out  # 4 MiB asked, 3 MiB largest block, 5 + 2 + 1 MiB free
    assert "\x1b" not in out and "\\x1b[31mevil" in out  # the name is escaped for the terminal
    assert max(len(line) for line in out.splitlines()) <= 80


def test_json_holds_the_typed_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", str(snapshot(tmp_path / "s.pickle")), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["peak"]["allocated_bytes"] == 5 * MiB and len(data["peak"]["alive"]) == 2
    assert data["fragmentation"]["largest_free_bytes"] == 3 * MiB
    assert data["fragmentation"]["private_pool_bytes"] == 2 * MiB
    assert data["ooms"][0]["verdict"] == "fits-defragmented"
    assert data["timeline"]["allocated_bytes"][2] == 5 * MiB


def test_html_is_self_contained_and_escaped(tmp_path: Path) -> None:
    out = tmp_path / "m.html"
    assert main(["memory", str(snapshot(tmp_path / "s.pickle")), "--html", str(out), "--format", "json"]) == 0
    page = out.read_text()
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "") and "https://" not in page
    assert "<b>x</b>" not in page and "evil</script>" not in page  # only escaped forms
    assert page.count("</script>") == 2


def test_diff_and_pasted_oom(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = snapshot(tmp_path / "a.pickle"), snapshot(tmp_path / "b.pickle", extra=MiB)
    assert main(["memory", "diff", str(a), str(b), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["peak"]["delta_bytes"] == MiB
    assert main(["memory", "--oom", "CUDA out of memory. Tried to allocate 20.00 MiB. GPU 1 has a total "
                 "capacity of 15.00 GiB of which 4.00 MiB is free. 0 bytes is reserved by PyTorch but unallocated."]) == 0
    out = capsys.readouterr().out
    assert "does-not-fit" in out and "cuda:1" in out


@pytest.mark.parametrize("argv", [["memory"], ["memory", "diff", "x"], ["memory", "a", "b"],
                                  ["memory", "--oom", "no numbers here"]])
def test_bad_use_is_one_line_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("perfkit: error: memory") or err.startswith("perfkit: error: --oom")
    assert "\n" not in err


def test_a_hostile_pickle_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "made"
    path = tmp_path / "evil.pickle"
    path.write_bytes(b"\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00\x8c\x08builtins\x94\x8c\x04open\x94\x93\x94"
                     + pickle.dumps((str(target), "w"), protocol=4)[2:-1] + b"R.")
    assert main(["memory", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "refused" in err and "builtins.open" in err
    assert not target.exists()
