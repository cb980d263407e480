"""Trace fidelity of the Kineto loader: odd fields are coerced or dropped and counted, never
fatal; timestamps are exact to the nanosecond; bad times never reach the totals; a byte-order
mark or a Latin-1 byte does not lose the trace. Traces are written here, byte for byte."""

from __future__ import annotations

import gzip
import json
import random
from decimal import ROUND_HALF_EVEN, Context, Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perfkit.analyzers.event_table import Kind
from perfkit.analyzers.kernel_summary import kernel_summary
from perfkit.analyzers.launch import launch_summary
from perfkit.analyzers.loaders.kineto.fields import DROP_REASONS, MAX_WARNINGS
from perfkit.analyzers.loaders.kineto.json_numbers import (
    ABSENT,
    FROM_STRING,
    NOT_NUMBER,
    OK,
    OUT_OF_RANGE,
    us_to_ns,
)
from perfkit.analyzers.loaders.kineto.load import load_trace
from perfkit.analyzers.temporal import temporal_breakdown
from perfkit.core.errors import TraceError

_WIDE = Context(prec=80)


def _event(name: Any, ts: str, dur: str | None, cat: str = "kernel", args: str = '{"stream": 7, "device": 0}') -> str:
    """One X event as JSON text (ts / dur are written as given: numbers, strings, NaN ...)."""
    fields = [f'"ph": "X", "cat": "{cat}", "name": {json.dumps(name)}, "pid": 0, "tid": 7, "ts": {ts}']
    if dur is not None:
        fields.append(f'"dur": {dur}')
    fields.append(f'"args": {args}')
    return "{" + ", ".join(fields) + "}"


def _write(path: Path, events: list[str], head: str = '"schemaVersion": 1') -> Path:
    text = "{" + head + ', "traceEvents": [\n' + ",\n".join(events) + '\n], "traceName": "t"}'
    data = text.encode()
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
    return path


def _names(table: Any, mask: Any = None) -> list[str]:
    ids = table["name_id"] if mask is None else table["name_id"][mask]
    return list(table.name_of(ids))


def _counts(pairs: tuple[tuple[str, int], ...]) -> dict[str, int]:
    return dict(pairs)


# ---- 1. one odd field never loses the trace --------------------------------------------------


def test_string_bytes_in_a_rocm_memcpy_are_read_as_integers(tmp_path: Path) -> None:
    """The real ROCm vLLM case: hipMemcpyAsync with "bytes": "32768" (a string)."""
    events = [
        _event("hipMemcpyAsync", "10", "5", cat="hip_runtime", args='{"correlation": 1, "bytes": "32768"}'),
        _event("Memcpy HtoD", "20", "4", cat="gpu_memcpy", args='{"stream": 7, "device": 0, "correlation": 1, "bytes": "32768"}'),
        _event("Memset", "30", "1", cat="gpu_memset", args='{"stream": 7, "device": 0, "correlation": 2, "bytes": "n/a"}'),
        _event("k", "40", "2", args='{"stream": 7, "device": 0, "correlation": 3, "bytes": 1.0}'),
    ]
    table = load_trace(_write(tmp_path / "rocm.json", events))
    assert len(table) == 4
    gpu = table.mask_kind(Kind.MEMCPY, Kind.MEMSET)
    assert table["bytes"][gpu].tolist() == [32768, -1]
    coerced = _counts(table.meta[0].coerced)
    # only the fields perfkit reads are coerced: the runtime call's bytes and the kernel's are not read
    assert coerced == {"args.bytes: string read as integer": 1, "args.bytes: not an integer, set to -1": 1}
    assert table.meta[0].dropped == ()
    assert any("traceEvents[2] 'Memset': args.bytes: not an integer" in w for w in table.meta[0].warnings)


def test_every_field_of_a_wrong_type_is_coerced_and_counted(tmp_path: Path) -> None:
    events = [
        _event(12345, "10", "5"),  # name as a number
        '{"ph": "X", "name": "no cat", "pid": 0, "tid": 1, "ts": 11, "dur": 1}',  # cat missing
        _event("args list", "12", "1", cat="cpu_op", args="[1, 2]"),  # args not an object
        _event("args null", "13", "1", cat="cpu_op", args="null"),
        '{"ph": "X", "cat": "cpu_op", "name": "float pid", "pid": 100.0, "tid": null, "ts": 14, "dur": 1}',
        '{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 0, "tid": 1, "ts": 20, "dur": 2, "args": {"correlation": 77}}',
        _event("linked", "30", "3", args='{"stream": "7", "device": "0", "correlation": "77"}'),
        '{"ph": "X", "cat": ["odd"], "name": "list cat", "pid": 0, "tid": 1, "ts": 40, "dur": 1}',
    ]
    table = load_trace(_write(tmp_path / "types.json", events))
    assert len(table) == len(events)
    names = _names(table)
    assert names[0] == "12345" and "list cat" in names
    meta = table.meta[0]
    coerced = _counts(meta.coerced)
    assert coerced["name: not a string, read as its text"] == 1
    assert coerced["args: not an object, ignored"] == 2
    assert coerced["pid: number read as integer"] == 1
    assert coerced["tid: not an integer, set to -1"] == 1
    assert coerced["args.stream: string read as integer"] == 1
    assert coerced["args.correlation: string read as integer"] == 1
    assert coerced["cat: not a string, read as its text"] == 1
    assert _counts(meta.unknown_categories) == {"(none)": 1, '["odd"]': 1}
    row = int(np.flatnonzero(table.name_of(table["name_id"]) == "float pid")[0])
    assert (table["pid"][row], table["tid"][row]) == (100, -1)
    kernel = table.mask_kind(Kind.KERNEL) & (table.name_of(table["name_id"]) == "linked")
    assert table["stream"][kernel].tolist() == [7] and table["correlation"][kernel].tolist() == [77]
    assert launch_summary(table).iloc[0].linked_ops == 1  # the string correlation still links
    assert len(meta.warnings) <= MAX_WARNINGS


def test_items_that_are_not_events_are_dropped_and_counted(tmp_path: Path) -> None:
    events = [
        _event("k1", "10", "5"),
        "5",
        "null",
        '{"cat": "kernel", "name": "no ph", "ts": 1, "dur": 1}',
        '{"ph": "Z", "name": "unknown ph"}',
        '{"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "python"}}',
        _event("k2", "20", "5"),
    ]
    table = load_trace(_write(tmp_path / "items.json", events))
    assert _names(table) == ["k1", "k2"]
    assert _counts(table.meta[0].dropped) == {"not an event object": 2, "no ph": 1, "unknown ph": 1}
    assert table.meta[0].events_read == len(events)
    assert any("traceEvents[3] 'no ph'" in w for w in table.meta[0].warnings)


def test_numbers_beyond_float_range_in_fields(tmp_path: Path) -> None:
    """msgspec refuses 1e400 anywhere but in raw text: the event is read field by field."""
    events = [
        _event("k1", "10", "5"),
        _event("big bytes", "20", "5", cat="gpu_memcpy", args='{"stream": 7, "device": 0, "bytes": 1e400}'),
        '{"ph": "X", "cat": "kernel", "name": 1e400, "pid": 0, "tid": 7, "ts": 30, "dur": 1, "args": {"stream": 7}}',
        _event("k3", "40", "5"),
    ]
    table = load_trace(_write(tmp_path / "big.json", events))
    assert _names(table) == ["k1", "big bytes", "1e400", "k3"]
    assert table["bytes"][table.mask_kind(Kind.MEMCPY)].tolist() == [-1]
    coerced = _counts(table.meta[0].coerced)
    assert coerced["args.bytes: not an integer, set to -1"] == 1
    assert coerced["name: not a string, read as its text"] == 1


def test_nan_and_infinity_literals_become_text_not_a_lost_trace(tmp_path: Path) -> None:
    events = [
        _event("ok", "10", "5"),
        _event("nan bytes", "20", "5", cat="gpu_memcpy", args='{"stream": 7, "device": 0, "bytes": NaN}'),
        _event("inf dur", "30", "Infinity"),
        _event("neg inf ts", "-Infinity", "1"),
        _event("c nan", "40", "nan"),
        _event("ok2", "50", "5"),
    ]
    head = '"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "GPU", "clock": NaN}]'
    table = load_trace(_write(tmp_path / "nan.json", events, head))
    assert _names(table) == ["ok", "nan bytes", "ok2"]
    assert _counts(table.meta[0].dropped) == {"dur not a number": 2, "ts not a number": 1}
    assert table.meta[0].devices == ("GPU",)
    assert _counts(table.meta[0].coerced)["NaN / Infinity (not JSON) read as text"] == 4


# ---- 2. exact timestamps ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("1683564901951734", 1683564901951734000),  # integer microseconds (torch < 2.3)
        ("1712195495519695.812", 1712195495519695812),  # epoch float: 0.25 us apart as a float64
        ("4458676522690.655", 4458676522690655),
        ("1.7e15", 1700000000000000000),
        ("1.712195495519695812e15", 1712195495519695812),
        ("17121954955196958.12e-1", 1712195495519695812),
        ('"1712195495519695.812"', 1712195495519695812),  # a string holding a number
        ("0", 0),
        ("0.0005", 0),  # half to even at the nanosecond
        ("0.0015", 2),
        ("0.00150001", 2),
        ("-2.5", -2500),
    ],
)
def test_timestamps_are_parsed_exactly(tmp_path: Path, text: str, ns: int) -> None:
    table = load_trace(_write(tmp_path / "ts.json", [_event("k", text, "0.001")]))
    assert table["ts_ns"].tolist() == [ns]
    assert table["dur_ns"].tolist() == [1]


def test_exact_parse_agrees_with_decimal_arithmetic() -> None:
    rng = random.Random(7)
    tokens = []
    for _ in range(20000):
        whole = str(rng.randint(0, 10 ** rng.randint(1, 16) - 1))
        frac = "".join(rng.choice("0123456789") for _ in range(rng.randint(0, 9)))
        text = ("-" if rng.random() < 0.1 else "") + whole + ("." + frac if frac else "")
        if rng.random() < 0.05:
            text += f"e{rng.randint(-12, 2)}"
        tokens.append(text.encode())
    tokens += [b"", b"null", b'"7"', b'"x"', b"9223372036854775.808", b"12345678901234567", b"1.5e300", b"[1]"]
    values, status = us_to_ns(tokens)
    for token, value, st in zip(tokens, values.tolist(), status.tolist(), strict=True):
        if token in (b"", b"null", b'"x"', b"[1]"):
            assert st == (ABSENT if not token else NOT_NUMBER)
            continue
        number = Decimal(token.strip(b'"').decode())
        exact = 2**64 if number.adjusted() > 20 else int(number.scaleb(3, context=_WIDE).quantize(Decimal(1), rounding=ROUND_HALF_EVEN, context=_WIDE))
        if abs(exact) > 2**63 - 1:
            assert st == OUT_OF_RANGE, token
        else:
            assert (value, st) == (exact, FROM_STRING if token[:1] == b'"' else OK), token


def test_float64_would_be_wrong_here(tmp_path: Path) -> None:
    """What the exact parse buys: at epoch scale a float64 is off by tens of nanoseconds."""
    text = "1712195495519695.812"
    assert round(float(text) * 1000) != 1712195495519695812
    table = load_trace(_write(tmp_path / "epoch.json", [_event("k", text, "63.813")]))
    assert table["ts_ns"][0] == 1712195495519695812 and table["dur_ns"][0] == 63813


# ---- 6. bad timing fields are dropped, counted and located ------------------------------------


def test_bad_times_are_dropped_with_a_count_per_reason(tmp_path: Path) -> None:
    events = [
        _event("good1", "1000", "10"),
        '{"ph": "X", "cat": "kernel", "name": "no ts", "pid": 0, "tid": 7, "dur": 5, "args": {"stream": 7}}',
        _event("negative dur", "1100", "-5"),
        _event("huge ts", "1.5e300", "5"),
        _event("no dur", "1200", None),
        _event("string ts", '"abc"', "5"),
        _event("null dur", "1300", "null"),
        _event("ts wraps", "9223372036854775.000", "1000"),  # ts fits, ts + dur does not
        _event("cpu no dur", "1400", None, cat="cpu_op"),
        _event("good2", "1500", "20"),
    ]
    path = _write(tmp_path / "times.json", events)
    table = load_trace(path)
    assert _names(table) == ["good1", "good2"]
    meta = table.meta[0]
    assert _counts(meta.dropped) == {
        "no ts": 1, "negative dur": 1, "ts out of range": 1, "no dur": 2, "ts not a number": 1,
        "dur not a number": 1, "ts + dur out of range": 1,
    }  # fmt: skip
    assert set(_counts(meta.dropped)) <= set(DROP_REASONS)
    assert len(meta.warnings) == MAX_WARNINGS  # 8 drops, 5 located lines
    assert meta.warnings[0] == f"{path}: traceEvents[1] 'no ts': no ts; event dropped"
    assert all(w.startswith(f"{path}: traceEvents[") and "\n" not in w for w in meta.warnings)
    # totals are sums of the valid events only: no 53-year span from a kernel placed at 0
    ks = kernel_summary(table)
    assert ks["count"].sum() == 2 and ks["total_ns"].sum() == 30_000
    row = temporal_breakdown(table, per_step=False).iloc[0]
    assert (row.span_ns, row.busy_ns) == (520_000, 30_000)


def test_warnings_are_capped_and_drops_come_first(tmp_path: Path) -> None:
    events = [_event("mem", str(i), "1", cat="gpu_memcpy", args='{"stream": 7, "bytes": "8"}') for i in range(20)]
    events += [_event(f"bad{i}", str(100 + i), "-1") for i in range(30)]
    table = load_trace(_write(tmp_path / "many.json", events), block_bytes=256)
    meta = table.meta[0]
    assert _counts(meta.dropped) == {"negative dur": 30}
    assert _counts(meta.coerced) == {"args.bytes: string read as integer": 20}
    assert len(meta.warnings) == MAX_WARNINGS
    assert all("negative dur" in w for w in meta.warnings)
    assert "traceEvents[20] 'bad0'" in meta.warnings[0]


# ---- 7. byte-order mark, Latin-1 bytes, UTF-16 ------------------------------------------------


def test_utf8_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    plain = _write(tmp_path / "plain.json", [_event("k", "10", "5")])
    for name, data in (("bom.json", plain.read_bytes()), ("bom.json.gz", plain.read_bytes())):
        path = tmp_path / name
        body = b"\xef\xbb\xbf" + data
        path.write_bytes(gzip.compress(body) if name.endswith(".gz") else body)
        table = load_trace(path)
        assert _names(table) == ["k"] and table["ts_ns"].tolist() == [10_000]
        assert table.meta[0].coerced == () and table.meta[0].warnings == ()


def test_latin1_byte_is_replaced_counted_and_located(tmp_path: Path) -> None:
    good = [_event(f"k{i}", str(10 * i), "5") for i in range(30)]
    text = ("{" + '"traceEvents": [' + ",".join([*good[:15], _event("caf@", "500", "5"), *good[15:]]) + "]}").encode()
    data = text.replace(b"caf@", b"caf\xe9")  # Latin-1 e-acute: not UTF-8
    offset = data.index(b"\xe9")
    for block in (97, 4096, 1 << 20):
        path = tmp_path / f"latin1_{block}.json"
        path.write_bytes(data)
        table = load_trace(path, block_bytes=block)
        assert len(table) == 31 and "caf\ufffd" in _names(table)
        meta = table.meta[0]
        assert _counts(meta.coerced) == {"invalid UTF-8 byte(s) replaced by U+FFFD": 1}
        assert meta.warnings == (f"{path}: byte {offset}: invalid UTF-8 byte(s) replaced by U+FFFD (1 in the file)",)


def test_valid_multibyte_names_split_across_blocks_are_untouched(tmp_path: Path) -> None:
    names = [f"\u6838\u5fc3{i}\u2014\u00b5s\U0001f680" for i in range(40)]
    path = _write(tmp_path / "utf8.json.gz", [_event(n, str(10 * i), "5") for i, n in enumerate(names)])
    for block in (61, 64, 97, 1 << 20):
        table = load_trace(path, block_bytes=block)
        assert _names(table) == names
        assert table.meta[0].coerced == ()


def test_utf16_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "utf16.json"
    path.write_bytes('{"traceEvents": []}'.encode("utf-16"))
    with pytest.raises(TraceError, match="UTF-16") as info:
        load_trace(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


# ---- the same answers whatever the block size --------------------------------------------------


def test_odd_trace_reads_the_same_in_any_block_size(tmp_path: Path) -> None:
    rng = random.Random(3)
    events = []
    for i in range(120):
        kind = rng.choice(["ok", "ok", "ok", "str bytes", "no ts", "neg", "name num", "nan", "obj"])
        if kind == "ok":
            events.append(_event(f"k{i}", f"{1712195495519000 + i}.{rng.randint(0, 999):03d}", "1.5"))
        elif kind == "str bytes":
            events.append(_event(f"m{i}", str(100 + i), "1", cat="gpu_memcpy", args='{"stream": 7, "bytes": "64"}'))
        elif kind == "no ts":
            events.append('{"ph": "X", "cat": "kernel", "name": "x", "dur": 1}')
        elif kind == "neg":
            events.append(_event(f"n{i}", str(i), "-3"))
        elif kind == "name num":
            events.append(_event(i, str(i), "2"))
        elif kind == "nan":
            events.append(_event(f"nan{i}", str(i), "NaN"))
        else:
            events.append("[1, 2]")
    path = _write(tmp_path / "odd.json", events)
    whole = load_trace(path)
    assert whole.meta[0].dropped and whole.meta[0].coerced
    for block in (128, 700, 4096):
        part = load_trace(path, block_bytes=block)
        for col in whole.columns:
            if col != "name_id":
                assert np.array_equal(whole[col], part[col]), (block, col)
        assert _names(whole) == _names(part)
        assert (part.meta[0].dropped, part.meta[0].coerced) == (whole.meta[0].dropped, whole.meta[0].coerced)
