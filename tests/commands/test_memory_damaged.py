"""Damaged and hostile inputs of `perfkit memory`: the damage matrix of the snapshot (pickle and
JSON), restricted unpickler and Kineto-memory loaders, and of `--html`.

Every case is exit 2 with one line naming the file and what is wrong, never a traceback, never
an HTML file half-written; or exit 0 where the input is odd but readable. Inputs are built here.
"""

from __future__ import annotations

import gzip
import json
import os
import pickle
import random
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from perfkit.cli import main
from tests.helpers.peak_rss import perfkit_peak_rss

MiB = 1 << 20
FRAME = {"name": "f", "filename": "m.py", "line": 3}


def snap(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "segments": [{"device": 0, "address": 0, "total_size": 8 * MiB, "stream": 0, "segment_type": "large",
                      "segment_pool_id": [0, 0], "blocks": [
                          {"size": 2 * MiB, "state": "active_allocated", "requested_size": 2 * MiB, "frames": [FRAME]},
                          {"size": 6 * MiB, "state": "inactive"}]}],
        "device_traces": [[{"action": "segment_alloc", "addr": 0, "size": 8 * MiB, "time_us": 1},
                           {"action": "alloc", "addr": 0, "size": 2 * MiB, "time_us": 2, "frames": [FRAME]}]]}
    data.update(changes)
    return data


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, list[str]]:
    capsys.readouterr()
    rc = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return rc, out, err.strip().splitlines()


def _refused(path: Path, capsys: pytest.CaptureFixture[str], needle: str) -> None:
    rc, out, err = _run(["memory", str(path)], capsys)
    assert rc == 2 and out == "" and len(err) == 1, err
    assert err[0].startswith(f"perfkit: error: {path}") and needle in err[0], err


SNAPSHOT = pickle.dumps(snap(), protocol=4)
N = 3000
_EVENT = {"action": "alloc", "addr": 0, "size": 8, "time_us": 1}
# (id, bytes of the file, what its one line says)
PICKLES: list[tuple[str, Callable[[], bytes], str]] = [
    ("cut-at-1", lambda: SNAPSHOT[:1], "damaged pickle"),
    ("cut-at-10", lambda: SNAPSHOT[:10], "damaged pickle"),
    ("cut-at-half", lambda: SNAPSHOT[: len(SNAPSHOT) // 2], "damaged pickle"),
    ("cut-before-the-last-byte", lambda: SNAPSHOT[:-1], "damaged pickle"),
    ("empty", lambda: b"", "the file is empty"),
    ("garbage", lambda: b"\x80" + random.Random(1).randbytes(3000), "damaged pickle"),
    ("GLOBAL", lambda: b"\x80\x02c__builtin__\neval\n.", "refused: the pickle asks for __builtin__.eval"),
    ("STACK_GLOBAL", lambda: b"\x80\x04\x8c\x02os\x94\x8c\x06system\x94\x93.", "asks for os.system"),
    ("INST", lambda: b"\x80\x02(i__builtin__\nobject\n.", "asks for __builtin__.object"),
    ("OBJ", lambda: b"\x80\x02(]o.", "damaged pickle ('list' object is not callable)"),
    ("REDUCE", lambda: b"\x80\x02]](tR.", "damaged pickle ('list' object is not callable)"),
    ("NEWOBJ", lambda: b"\x80\x02](\x81.", "damaged pickle"),
    ("NEWOBJ_EX", lambda: b"\x80\x04](}\x92.", "damaged pickle"),
    ("BUILD", lambda: b"\x80\x02}}b.", "damaged pickle"),
    ("EXT1", lambda: b"\x80\x02\x82\x01.", "unregistered extension code 1"),
    ("EXT2", lambda: b"\x80\x02\x83\x01\x00.", "unregistered extension code 1"),
    ("EXT4", lambda: b"\x80\x02\x84\x01\x00\x00\x00.", "unregistered extension code 1"),
    ("PERSID", lambda: b"\x80\x02P1\n.", "asks for a persistent object"),
    ("BINPERSID", lambda: b"\x80\x02K\x01Q.", "asks for a persistent object"),
    ("NEXT_BUFFER", lambda: b"\x80\x05\x97.", "out-of-band data"),
    ("memo-get-missing", lambda: b"\x80\x02h\x05.", "Memo value not found"),
    ("memo-put-2-31", lambda: b"\x80\x04]r\xff\xff\xff\x7f.", "too large to load in memory"),
    ("BINUNICODE8-2-33", lambda: b"\x80\x04\x8d" + struct.pack("<Q", 1 << 33) + b"abc", "8589934592 bytes"),
    ("BINBYTES8-2-40", lambda: b"\x80\x04\x8e" + struct.pack("<Q", 1 << 40) + b"abc", "too large to load"),
    ("BYTEARRAY8-2-40", lambda: b"\x80\x05\x96" + struct.pack("<Q", 1 << 40) + b"abc", "too large to load"),
    ("FRAME-2-40", lambda: b"\x80\x04\x95" + struct.pack("<Q", 1 << 40) + b"]", "1099511627776 bytes"),
    ("protocol-9", lambda: b"\x80\x09N.", "unsupported pickle protocol: 9"),
    ("bomb-events", lambda: pickle.dumps({"device_traces": [[_EVENT] * N] * N}, protocol=4),
     "device_traces[1]: the same list as device_traces[0] (shared by reference: a pickle bomb"),
    ("bomb-blocks", lambda: pickle.dumps({"segments": [{"address": i * N, "total_size": N, "blocks": b}
                                                       for b in [[{"size": 1, "state": "inactive"}] * N]
                                                       for i in range(N)]}, protocol=4),
     "segments[1].blocks: the same list as segments[0].blocks"),
    ("segment-blocks-short", lambda: pickle.dumps(snap(segments=[{"address": 0, "total_size": 100, "blocks": [
        {"size": 60, "state": "inactive"}]}])), "segments[0]: blocks add up to 60 bytes but total_size is 100"),
    ("segment-size-negative", lambda: pickle.dumps(snap(segments=[{"address": 0, "total_size": -100}])),
     "segments[0].total_size: -100 is not an integer"),
    ("block-size-negative", lambda: pickle.dumps(snap(segments=[{"address": 0, "total_size": 0, "blocks": [
        {"size": -5, "state": "inactive"}, {"size": 5, "state": "inactive"}]}])), "blocks[0].size: -5"),
    ("segments-overlap", lambda: pickle.dumps(snap(segments=[{"address": 0, "total_size": 10},
                                                             {"address": 5, "total_size": 10}])),
     "segments[1]: overlaps segments[0]"),
    ("frame-name-an-int", lambda: pickle.dumps(snap(device_traces=[[{**_EVENT, "frames": [{"name": 5}]}]])),
     "device_traces[0][0].frames[0]: not a frame"),
    ("frame-name-bytes", lambda: pickle.dumps(snap(device_traces=[[{**_EVENT, "frames": [{"name": b"f"}]}]])),
     "device_traces[0][0].frames[0]: not a frame"),
    ("time-2-62", lambda: pickle.dumps(snap(device_traces=[[{**_EVENT, "time_us": 1 << 62}]])),
     "device_traces[0][0].time_us"),
    ("only-unknown-actions", lambda: pickle.dumps({"device_traces": [[{**_EVENT, "action": "zap"}]]}),
     "no memory events and no segments"),
]


@pytest.mark.parametrize(("make", "needle"), [pytest.param(m, n, id=i) for i, m, n in PICKLES])
def test_a_pickle_that_is_no_snapshot_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         make: Callable[[], bytes], needle: str) -> None:
    path = tmp_path / "snapshot.pickle"
    path.write_bytes(make())
    _refused(path, capsys, needle)


@pytest.mark.slow
def test_odd_but_readable_snapshots_are_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "odd.pickle"
    unknown = [{**_EVENT, "action": "\x1b[31mzap"}] * 3 + [{**_EVENT, "action": ["a list"]}, _EVENT]
    path.write_bytes(pickle.dumps(snap(device_traces=[unknown])))
    rc, out, _ = _run(["memory", str(path)], capsys)
    assert rc == 0 and "\x1b" not in out and "\\x1b[31mzap x3" in out and "<list> x1" in out
    frames = [FRAME] * 200_000  # an enormous stack, shared by 2,000 events: read once
    path.write_bytes(pickle.dumps(snap(device_traces=[[{**_EVENT, "addr": i * 8, "frames": frames}
                                                       for i in range(2000)]])))
    rc, out, _ = _run(["memory", str(path), "--format", "json"], capsys)
    assert rc == 0 and json.loads(out)["peak"]["allocated_bytes"] >= 2 * MiB


EVIL = "\x1b[31mf\x07</script><b>x</b>\u202e"


def test_names_are_escaped_in_the_terminal_and_the_html(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "names.pickle"
    path.write_bytes(pickle.dumps(snap(device_traces=[[{**_EVENT, "frames": [
        {"name": EVIL, "filename": "\x1b]0;x\x07.py", "line": 1}]}]], external_annotations=[
        {"device": 0, "stage": "START", "name": "\x1b[2Jstage</td>", "time_us": 0}])))
    html = tmp_path / "m.html"
    rc, out, _ = _run(["memory", str(path), "--html", str(html), "--wide"], capsys)
    assert rc == 0 and "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "\\x1b[31mf\\x07</script><b>x</b>\\u202e" in out and "\\x1b[2Jstage</td>" in out
    page = html.read_text()
    assert "<b>x</b>" not in page and "stage</td>" not in page and page.count("</script>") == 2


HTML_REFUSED: list[tuple[str, Callable[[Path], str], str]] = [
    ("missing-folder", lambda t: str(t / "no" / "such" / "m.html"), "does not exist"),
    ("over-the-input", lambda t: str(t / "s.pickle"), "refusing to overwrite it"),
    ("a-folder-named-like-its-file", lambda t: str(_mkdir(t / "out" / "memory.html").parent), "is not a regular file"),
]


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True)
    return path


@pytest.mark.parametrize(("where", "needle"), [pytest.param(w, n, id=i) for i, w, n in HTML_REFUSED])
def test_html_that_cannot_be_written_is_one_line_before_any_work(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                 where: Callable[[Path], str], needle: str) -> None:
    (tmp_path / "s.pickle").write_bytes(SNAPSHOT)
    rc, out, err = _run(["memory", str(tmp_path / "s.pickle"), "--html", where(tmp_path)], capsys)
    assert rc == 2 and out == "" and len(err) == 1 and needle in err[0], err
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix in (".html", ".tmp")]  # nothing half-written


def test_html_into_a_folder_writes_memory_html_there(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "s.pickle").write_bytes(SNAPSHOT)
    rc, _, _ = _run(["memory", str(tmp_path / "s.pickle"), "--html", str(_mkdir(tmp_path / "out"))], capsys)
    assert rc == 0 and (tmp_path / "out" / "memory.html").read_text().startswith("<!DOCTYPE html>")


def test_unwritable_html_folder_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes into a folder of mode 500")
    (tmp_path / "s.pickle").write_bytes(SNAPSHOT)
    locked = _mkdir(tmp_path / "locked")
    locked.chmod(0o500)
    rc, _, err = _run(["memory", str(tmp_path / "s.pickle"), "--html", str(locked / "m.html")], capsys)
    assert rc == 2 and len(err) == 1 and "not writable" in err[0]


STEXT = json.dumps(snap())
JSONS: list[tuple[str, Callable[[], bytes], str]] = [
    ("nan", lambda: STEXT.replace('"size": 2097152', '"size": NaN', 1).encode(), "blocks[0].size: nan is not"),
    ("1e999", lambda: STEXT.replace('"size": 2097152', '"size": 1e999', 1).encode(), "blocks[0].size: inf is not"),
    ("int-of-40-digits", lambda: STEXT.replace('"size": 2097152', '"size": 1' + "0" * 40, 1).encode(),
     "blocks[0].size: an integer of 41 digits"),
    ("int-of-5000-digits", lambda: STEXT.replace('"size": 2097152', '"size": 1' + "0" * 5000, 1).encode(),
     "an integer over 4300 digits"),
    ("nested-100000-deep", lambda: STEXT.replace('"device_traces"', '"x": ' + "[" * 100_000 + "]" * 100_000
                                                  + ', "device_traces"', 1).encode(), "nested more than 200 levels"),
    ("cut", lambda: STEXT[: len(STEXT) // 2].encode(), "not valid JSON"),
    ("not-utf8", lambda: STEXT.replace('"f"', '"\xff"', 1).encode("latin-1"), "not UTF-8 at byte"),
]


@pytest.mark.parametrize(("make", "needle"), [pytest.param(m, n, id=i) for i, m, n in JSONS])
def test_a_json_snapshot_that_cannot_be_read_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        make: Callable[[], bytes], needle: str) -> None:
    path = tmp_path / "snapshot.json"
    path.write_bytes(make())
    _refused(path, capsys, needle)
    gz = tmp_path / "snapshot.json.gz"
    gz.write_bytes(gzip.compress(make()))
    _refused(gz, capsys, needle)


def test_a_gzipped_json_snapshot_reads_like_the_pickle(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = []
    for name, data in (("s.pickle", SNAPSHOT), ("s.json.gz", gzip.compress(STEXT.encode())),
                       ("s.json", STEXT.replace('"time_us": 2', '"time_us": 9, "time_us": 2', 1).encode())):
        (tmp_path / name).write_bytes(data)  # the last: a key given twice, the last one wins
        rc, out, _ = _run(["memory", str(tmp_path / name), "--format", "json"], capsys)
        assert rc == 0
        docs.append(json.loads(out)["peak"])
    assert docs[0] == docs[1] == docs[2] and docs[0]["allocated_bytes"] == 2 * MiB


M: dict[str, Any] = {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 5,
     "args": {"Addr": 16, "Bytes": 64, "Total Allocated": 64, "Total Reserved": 128, "Device Type": 1, "Device Id": 0}}


def _m(**args: Any) -> dict[str, Any]:
    return {**M, "args": {**M["args"], **args}}


KINETO: list[tuple[str, Callable[[], str], str]] = [
    ("bytes-nan", lambda: json.dumps([M, _m(Bytes=float("nan"))]), "args['Bytes'] is \"N\""),
    ("bytes-text", lambda: json.dumps([M, _m(Bytes="64")]), "args['Bytes'] is \"64\""),
    ("bytes-2-60", lambda: json.dumps([M, _m(Bytes=1 << 60)]), "is beyond any device"),
    ("bytes-2-70", lambda: json.dumps([M, _m(Bytes=1 << 70)]), "not an integer byte count"),
    ("ts-nan", lambda: json.dumps([M, {**M, "ts": float("nan")}]), "without a numeric ts"),
    ("ts-1e300", lambda: json.dumps([M, {**M, "ts": 1e300}]), "without a numeric ts"),
    ("ts-1e999", lambda: json.dumps([M]).replace('"ts": 5', '"ts": 1e999'), "Number out of range"),
    ("args-a-list", lambda: json.dumps([M, {**M, "args": [1]}]), "without an args object"),
    ("nested-100000-deep", lambda: json.dumps([M]).replace('"ph": "i"', '"x": ' + "[" * 100_000 + "]" * 100_000
                                                           + ', "ph": "i"'), "nested too deeply to decode"),
    ("cut", lambda: json.dumps([M] * 20)[:150], "the trace was cut off"),
    ("no-memory-events", lambda: json.dumps([{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 1}]),
     "no [memory] events"),
]


@pytest.mark.parametrize(("make", "needle"), [pytest.param(m, n, id=i) for i, m, n in KINETO])
def test_a_damaged_kineto_memory_trace_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   make: Callable[[], str], needle: str) -> None:
    path = tmp_path / "trace.json"
    events = make()
    path.write_text('{"traceEvents": ' + events + ("}" if events.endswith("]") else ""))
    _refused(path, capsys, needle)


def test_kineto_names_are_escaped_and_odd_ids_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events = [{"ph": "X", "cat": "cpu_op", "name": "\x1b[31maten::x\x07", "pid": 1, "tid": 1, "ts": 1, "dur": 10},
              {"ph": "X", "cat": "user_annotation", "name": "\x1b]0;t\x07stage", "pid": 1, "tid": 1, "ts": 1, "dur": 10},
              M, {**_m(Addr=-5), "pid": [1], "tid": {"a": 1}}, {**M, "name": 5}]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    html = tmp_path / "k.html"
    rc, out, _ = _run(["memory", str(path), "--html", str(html), "--wide"], capsys)
    assert rc == 0 and "\x1b" not in out and "\x07" not in out and "\\x1b[31maten::x\\x07" in out
    assert "\x1b" not in html.read_text()


FILES: list[tuple[str, Callable[[Path], Path], str]] = [
    ("empty-gzip", lambda t: _write(t / "e.json.gz", b""), "the file is empty"),
    ("not-gzip-named-gz", lambda t: _write(t / "n.json.gz", b"abc"), "neither a pickle nor JSON"),
    ("gzip-cut", lambda t: _write(t / "c.json.gz", gzip.compress(STEXT.encode())[:60]), "damaged gzip"),
    ("a-symlink-loop", lambda t: _loop(t / "loop.pickle"), "Too many levels of symbolic links"),
    ("a-directory-of-nothing", lambda t: _mkdir(t / "d"), "a folder without a run's memory budgets"),
]


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _loop(path: Path) -> Path:
    path.symlink_to(path)
    return path


@pytest.mark.parametrize(("make", "needle"), [pytest.param(m, n, id=i) for i, m, n in FILES])
def test_files_that_cannot_be_read_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                make: Callable[[Path], Path], needle: str) -> None:
    _refused(make(tmp_path), capsys, needle)


def test_diff_names_the_damaged_side(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good, bad = _write(tmp_path / "a.pickle", SNAPSHOT), _write(tmp_path / "b.pickle", SNAPSHOT[:-3])
    rc, out, err = _run(["memory", "diff", str(good), str(bad)], capsys)
    assert rc == 2 and out == "" and len(err) == 1 and err[0].startswith(f"perfkit: error: {bad}: damaged pickle")


def test_an_unreadable_snapshot_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads a file of mode 000")
    path = _write(tmp_path / "locked.pickle", SNAPSHOT)
    path.chmod(0)
    _refused(path, capsys, "Permission denied")


@pytest.mark.slow
@pytest.mark.parametrize("opcode", [b"\x80\x04\x8d", b"\x80\x04\x8e", b"\x80\x05\x96", b"\x80\x04\x95"],
                         ids=["BINUNICODE8", "BINBYTES8", "BYTEARRAY8", "FRAME"])
def test_a_declared_size_of_2_40_allocates_nothing(tmp_path: Path, opcode: bytes) -> None:
    """Peak RSS of `perfkit memory` on a pickle announcing a 1 TiB object stays the interpreter's."""
    path = _write(tmp_path / "huge.pickle", opcode + struct.pack("<Q", 1 << 40) + b"abc")
    rc, lines, peak_kib = perfkit_peak_rss(["memory", str(path)], tmp_path)
    assert rc == 2 and len(lines) == 1 and lines[0].startswith(f"perfkit: error: {path}: "), lines  # no SystemError
    assert peak_kib < 200 * 1024, peak_kib  # measured: ~35 MiB
