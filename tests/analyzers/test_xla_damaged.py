"""Damaged and hostile JAX / XLA inputs through `perfkit analyze`: the damage matrix of the xplane
(protobuf wire) and JAX JSON loaders.

Every case ends in one of two ways: exit 2 with one line naming the file and what is wrong
(never a traceback), or exit 0 with the damaged events left out and counted in a note. Inputs
are made here, tiny: an XSpace written field by field (tests/helpers/xspace_wire.py), cuts of
the real xplane in tests/analyzers/data/xla, JAX JSON traces with the damage spelled in the text.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from perfkit.cli import main
from tests.helpers.peak_rss import perfkit_peak_rss
from tests.helpers.xspace_wire import LENGTH, bytes_field, int_field, key, varint, xspace

EIGHT = Path(__file__).parent / "data" / "xla" / "conv_8gpu_jax08.xplane.pb"
I64 = (1 << 63) - 1


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, list[str]]:
    capsys.readouterr()
    rc = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return rc, out, err.strip().splitlines()


def _refused(path: Path, capsys: pytest.CaptureFixture[str], needle: str) -> str:
    rc, out, err = _run(["analyze", str(path)], capsys)
    assert rc == 2 and len(err) == 1 and out == "", err
    assert err[0].startswith(f"perfkit: error: {path}") and needle in err[0], err
    return err[0]


def _read(path: Path, capsys: pytest.CaptureFixture[str], *more: str) -> tuple[dict[str, Any], list[str]]:
    rc, out, err = _run(["analyze", str(path), "--format", "json", *more], capsys)
    assert rc == 0, err
    doc = json.loads(out)
    assert [f"perfkit analyze: {n}" for n in doc.get("notes", [])] == err  # every note on stderr, one line each
    return doc, doc.get("notes", [])


def _kernels(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in doc["kernels"] if r["kind"] == "kernel"]


# --- the xplane: bytes that are not an XSpace -----------------------------------------------------

def _cut(n: int) -> Callable[[], bytes]:
    return lambda: EIGHT.read_bytes()[:n]


REFUSED: list[tuple[str, Callable[[], bytes], str]] = [
    ("cut-at-1", _cut(1), "a varint runs past its message at byte 1"),
    ("cut-at-7", _cut(7), "runs past its message"),
    ("cut-at-1000", _cut(1000), "runs past its message"),
    ("cut-before-the-last-byte", lambda: EIGHT.read_bytes()[:-1], "runs past its message"),
    ("empty", lambda: b"", "the file is empty"),
    ("zeros", lambda: bytes(5000), "field number 0 at byte 0"),
    ("garbage", lambda: random.Random(1).randbytes(5000), "not a readable XSpace"),
    ("wire-type-3-group", lambda: key(1, 3) + b"\x00", "wire type 3 (not one of 0, 1, 2, 5)"),
    ("length-2-40", lambda: key(1, LENGTH) + varint(1 << 40) + b"abc", "field 1 (1099511627776 bytes) runs past"),
    ("varint-11-bytes", lambda: key(1, 0) + b"\xff" * 10 + b"\x01", "a varint longer than 10 bytes"),
    ("length-past-inner-message", lambda: bytes_field(1, key(2, LENGTH) + varint(50) + b"/device:GPU:0"),
     "field 2 (50 bytes) runs past its message"),
]


@pytest.mark.parametrize(("make", "needle"), [pytest.param(m, n, id=i) for i, m, n in REFUSED])
def test_bytes_that_are_no_xspace_are_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      make: Callable[[], bytes], needle: str) -> None:
    path = tmp_path / "damaged.xplane.pb"
    path.write_bytes(make())
    _refused(path, capsys, needle)


def test_a_directory_a_symlink_loop_and_an_unreadable_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "dir.xplane.pb"
    folder.mkdir()
    _refused(folder, capsys, "Is a directory")
    loop = tmp_path / "loop.xplane.pb"
    loop.symlink_to(loop)
    _refused(loop, capsys, "symbolic links")
    if os.geteuid() != 0:  # root reads a file of mode 000 all the same
        locked = tmp_path / "locked.xplane.pb"
        locked.write_bytes(xspace())
        locked.chmod(0)
        _refused(locked, capsys, "Permission denied")


# --- the xplane: a valid container with damaged values ---------------------------------------------

def test_the_tiny_xspace_reads_one_kernel(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ok.xplane.pb"
    path.write_bytes(xspace())
    doc, _ = _read(path, capsys)
    assert [(k["name"], k["count"], k["total_ns"]) for k in _kernels(doc)] == [("ampere_gemm", 1, 2)]


LEFT_OUT: list[tuple[str, dict[str, Any], str]] = [
    ("negative-duration", {"duration_ps": -5000}, "negative duration (1)"),
    ("negative-offset-and-duration", {"offset_ps": -1, "duration_ps": -1}, "negative duration (1)"),
    ("line-time-2-63", {"ts_ns": I64}, "start or end beyond 2^62 ns (146 years) (2)"),
    ("duration-2-63", {"duration_ps": I64, "ts_ns": 1 << 62}, "start or end beyond 2^62 ns"),
    ("offset-2-63", {"offset_ps": I64, "ts_ns": (1 << 62) - 1000}, "start or end beyond 2^62 ns (146 years) (2)"),
]


@pytest.mark.parametrize(("values", "note"), [pytest.param(v, n, id=i) for i, v, n in LEFT_OUT])
def test_damaged_times_are_left_out_and_counted(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                values: dict[str, Any], note: str) -> None:
    path = tmp_path / "times.xplane.pb"
    path.write_bytes(xspace(**values))
    doc, notes = _read(path, capsys)
    assert _kernels(doc) == []
    assert any("events left out" in n and note in n for n in notes), notes


def test_a_negative_start_is_kept_like_the_other_loaders_keep_it(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "early.xplane.pb"
    path.write_bytes(xspace(ts_ns=-10**12))
    doc, _ = _read(path, capsys)
    assert [(k["count"], k["total_ns"]) for k in _kernels(doc)] == [(1, 2)]


def test_values_past_64_bits_read_as_unknown_not_an_overflow(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stats = (bytes_field(4, int_field(1, 2) + int_field(3, (1 << 64) - 1))  # correlation_id: uint64 max
             + bytes_field(4, int_field(1, 3) + bytes_field(5, "grid:99999999999999999999999,1,1 block:1,1,1 "
                                                              "regs:-99999999999999999999")))
    path = tmp_path / "wide.xplane.pb"
    path.write_bytes(xspace(line="Stream #99999999999999999999999(Kernel)", extra_stats=stats))
    doc, _ = _read(path, capsys, "--only", "kernels")
    (kernel,) = _kernels(doc)
    assert kernel["count"] == 1 and kernel["registers"] is None and kernel["grid"].startswith("-")


def test_a_device_number_of_ten_digits_is_no_device(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "device.xplane.pb"
    path.write_bytes(xspace(plane="/device:GPU:99999999999999999999999"))
    doc, notes = _read(path, capsys)
    assert _kernels(doc) == [] and any("no device events" in n for n in notes)
    path.write_bytes(xspace(plane="/device:GPU:2147483647"))  # the largest int32 is an ordinal
    doc, _ = _read(path, capsys, "--only", "kernels")
    assert [(k["name"], k["count"]) for k in _kernels(doc)] == [("ampere_gemm", 1)]


def test_wrong_wire_types_are_skipped_as_protobuf_readers_skip_them(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "types.xplane.pb"
    # a plane given as a varint, a plane whose name is a varint, then the tiny XSpace
    path.write_bytes(int_field(1, 5) + bytes_field(1, int_field(1, 1) + int_field(2, 9)) + xspace())
    doc, _ = _read(path, capsys)
    assert [(k["name"], k["count"]) for k in _kernels(doc)] == [("ampere_gemm", 1)]


def test_a_message_nested_5000_deep_in_an_unread_field_costs_nothing(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    deep = b""
    for _ in range(5000):
        deep = bytes_field(99, deep)
    path = tmp_path / "deep.xplane.pb"
    path.write_bytes(xspace(extra_stats=bytes_field(4, deep)))
    doc, _ = _read(path, capsys)
    assert [(k["name"], k["count"]) for k in _kernels(doc)] == [("ampere_gemm", 1)]


EVIL = "\x1b[31mk\x07</td><b>x</b>\u202e"
EVIL_HLO = "\x1b]0;pwn\x07fusion"


def test_names_are_escaped_in_the_terminal_and_kept_whole_in_json(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "names.xplane.pb"
    path.write_bytes(xspace(name=EVIL, hlo=EVIL_HLO))
    rc, out, _ = _run(["analyze", str(path), "--only", "kernels,hlo_ops", "--wide"], capsys)
    assert rc == 0 and "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "\\x1b[31mk\\x07</td><b>x</b>\\u202e" in out and "\\x1b]0;pwn\\x07fusion" in out
    doc, _ = _read(path, capsys, "--only", "kernels,hlo_ops")
    assert _kernels(doc)[0]["name"] == EVIL and doc["hlo_ops"][0]["hlo_op"] == EVIL_HLO


def test_names_that_are_not_utf8_read_with_replacement_characters(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "latin1.xplane.pb"
    path.write_bytes(xspace(name=b"caf\xe9_kernel", hlo=b"\xc3(fusion"))
    doc, _ = _read(path, capsys, "--only", "kernels,hlo_ops")
    assert _kernels(doc)[0]["name"] == "caf\ufffd_kernel" and doc["hlo_ops"][0]["hlo_op"] == "\ufffd(fusion"


@pytest.mark.slow
def test_a_length_of_2_40_allocates_nothing(tmp_path: Path) -> None:
    """Peak RSS of a whole `perfkit analyze` on a file declaring a 1 TiB field stays the interpreter's."""
    path = tmp_path / "huge.xplane.pb"
    path.write_bytes(bytes_field(1, bytes_field(3, b"")) + key(1, LENGTH) + varint(1 << 40) + b"x" * 64)
    rc, lines, peak_kib = perfkit_peak_rss(["analyze", str(path)], tmp_path)
    assert rc == 2 and len(lines) == 1 and "1099511627776 bytes" in lines[0], lines
    assert peak_kib < 400 * 1024, peak_kib  # the interpreter with numpy and msgspec: measured ~120 MiB


# --- JAX JSON traces -------------------------------------------------------------------------------

_META = ('{"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/device:GPU:0"}}, '
         '{"ph": "M", "pid": 1, "tid": 7, "name": "thread_name", "args": {"name": "Stream #7(Kernel)"}}, '
         '{"ph": "M", "pid": 2, "name": "process_name", "args": {"name": "/host:CPU"}}')


def _jax(tmp: Path, events: str, gz: bool = True) -> Path:
    text = '{"displayTimeUnit": "ns", "traceEvents": [' + _META + (", " + events if events else "") + ", {}]}"
    path = tmp / "host.trace.json.gz"
    path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    return path


def _kernel(ts: str = "10", dur: str = "2", **fields: Any) -> str:
    ev = {"ph": "X", "pid": 1, "tid": 7, "name": "kern", "args": {"hlo_op": "fusion"}, **fields}
    return json.dumps(ev)[:-1] + f', "ts": {ts}, "dur": {dur}}}'


JSON_LEFT_OUT: list[tuple[str, str, str]] = [
    ("ts-nan", _kernel(ts="NaN"), "no readable ts / dur (1)"),
    ("ts-minus-infinity", _kernel(ts="-Infinity"), "no readable ts / dur (1)"),
    ("ts-1e999", _kernel(ts="1e999"), "start or end beyond 2^62 ns (146 years) (1)"),
    ("dur-1e999", _kernel(dur="1e999"), "start or end beyond 2^62 ns (146 years) (1)"),
    ("ts-40-digits", _kernel(ts="1" + "0" * 40), "start or end beyond 2^62 ns (146 years) (1)"),
    ("dur-negative", _kernel(dur="-2"), "no readable ts / dur (1)"),
    ("pid-a-list", _kernel(pid=[1]), "event of an unnamed process (1)"),
    ("tid-an-object", _kernel(tid={"a": 1}), "device line '' (derived from the stream lines) (1)"),
]


@pytest.mark.parametrize(("event", "note"), [pytest.param(e, n, id=i) for i, e, n in JSON_LEFT_OUT])
def test_jax_json_damaged_events_are_left_out_and_counted(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          event: str, note: str) -> None:
    doc, notes = _read(_jax(tmp_path, event + ", " + _kernel(ts="20")), capsys)
    assert [(k["name"], k["count"]) for k in _kernels(doc)] == [("kern", 1)]  # the undamaged one
    assert any("events left out" in n and note in n for n in notes), notes


def test_jax_json_odd_fields_read_as_absent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events = ", ".join([
        '{"ph": "M", "pid": [1], "name": "process_name", "args": {"name": "/device:GPU:1"}}',  # a list as a pid
        _kernel(name=12), _kernel(ts="11", args=[1, 2]),
        _kernel(ts="12", args={"hlo_op": {"a": [1]}, "correlation_id": "x", "kernel_details": 5}),
        _kernel(ts="13").replace('"ts": 13', '"ts": 13, "ts": 14'),  # a key given twice: the last wins
    ])
    doc, _ = _read(_jax(tmp_path, events), capsys, "--only", "kernels,hlo_ops")
    assert sorted((k["name"], k["count"]) for k in _kernels(doc)) == [("12", 1), ("kern", 3)]
    assert {r["hlo_op"] for r in doc["hlo_ops"]} >= {"fusion", "{'a': [1]}"}


JSON_REFUSED: list[tuple[str, Callable[[Path], Path], str]] = [
    ("empty-gz", lambda t: _write(t, b""), "the file is empty"),
    ("not-gzip-named-gz", lambda t: _write(t, b"hello, not gzip"), "not JSON (byte 0 is b'h')"),
    ("gzip-cut", lambda t: _write(t, gzip.compress(("[" + _META + "," + _kernel() * 1 + "]").encode() * 50)[:200]),
     "compressed data is truncated or corrupt"),
    ("json-cut", lambda t: _write(t, gzip.compress(('{"traceEvents": [' + _META + ", " + _kernel()).encode())),
     "the trace was cut off"),
    ("nested-100000-deep", lambda t: _write(t, gzip.compress(
        ('{"traceEvents": [' + _META + ", " + _kernel().replace('"args": {"hlo_op": "fusion"}',
                                                                '"args": ' + "[" * 100_000 + "]" * 100_000)
         + "]}").encode())), "nested too deeply to decode"),
    ("an-int-of-5000-digits", lambda t: _jax(t, _kernel(ts="1" + "0" * 5000)), "Integer value out of range"),
]


def _write(tmp: Path, data: bytes) -> Path:
    path = tmp / "host.trace.json.gz"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(("make", "needle"), [pytest.param(m, n, id=i) for i, m, n in JSON_REFUSED])
def test_jax_json_that_cannot_be_read_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         make: Callable[[Path], Path], needle: str) -> None:
    _refused(make(tmp_path), capsys, needle)


def test_jax_json_names_are_escaped_in_the_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _jax(tmp_path, _kernel(name=EVIL, args={"hlo_op": EVIL_HLO}))
    rc, out, _ = _run(["analyze", str(path), "--only", "kernels,hlo_ops", "--wide"], capsys)
    assert rc == 0 and "\x1b" not in out and "\x07" not in out and "\\x1b]0;pwn\\x07fusion" in out


@pytest.mark.slow
def test_a_100_mb_name_is_refused_in_bounded_memory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One event larger than the stream's window (4 blocks, 16 MiB): one line, never the whole
    100 MB held as a string (the gzip is ~100 KB; the name is never decoded)."""
    name = "A" * (100 << 20)
    text = '{"traceEvents": [' + _META + ", " + _kernel(name=name) + "]}"
    del name
    path = _write(tmp_path, gzip.compress(text.encode(), compresslevel=1))
    del text
    _refused(path, capsys, "no event boundary found")


def test_struct_pack_sanity() -> None:  # the helper's varint matches the wire format's examples
    assert varint(1) == b"\x01" and varint(300) == b"\xac\x02" and len(varint(-1)) == 10
    assert struct.pack("<B", 8) == key(1, 0)
