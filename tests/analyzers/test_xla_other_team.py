"""TraceLens's JAX 0.8 MI300X fixtures (tests/analyzers/data/xla/tracelens_jax08): every GPU op
of every "/device:GPU:N" plane's "Stream #" lines is read, counted and timed as a plain
protobuf wire reading of the file says, and `perfkit analyze` exits 0."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from perfkit.analyzers.event_table import Kind
from perfkit.analyzers.loaders.trace_files import load_trace_file
from tests.helpers.forked_cli import run_perfkit

REPO = Path(__file__).resolve().parents[2]
FILES = sorted((Path(__file__).parent / "data" / "xla" / "tracelens_jax08").glob("*.xplane.pb"))
GPU_KINDS = (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET)


def fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) of one protobuf message: varints as ints, length-delimited as bytes."""
    out: list[tuple[int, int | bytes]] = []
    i = 0
    while i < len(data):
        tag, i = _varint(data, i)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, i = _varint(data, i)
            out.append((number, value))
        elif wire == 2:
            size, i = _varint(data, i)
            out.append((number, data[i:i + size]))
            i += size
        else:  # fixed64 / fixed32 (doubles in stats): skipped
            i += 8 if wire == 1 else 4
    return out


def _varint(data: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = data[i]
        value |= (b & 0x7F) << shift
        i, shift = i + 1, shift + 7
        if b < 0x80:
            return value, i


def ns_half_even(ps: int) -> int:
    q, r = divmod(ps, 1000)
    return q + (1 if r > 500 or (r == 500 and q % 2) else 0)


def gpu_ops(path: Path) -> dict[int, tuple[int, int]]:
    """{GPU index: (ops, total ns)} over the Stream lines of the device planes."""
    out: dict[int, tuple[int, int]] = {}
    for number, plane in fields(path.read_bytes()):
        if number != 1:  # XSpace: errors, warnings, hostnames
            continue
        assert isinstance(plane, bytes)
        pf = fields(plane)
        name = next(v for n, v in pf if n == 2)
        assert isinstance(name, bytes)
        if not name.startswith(b"/device:GPU:"):
            continue
        device = int(name.rsplit(b":", 1)[1])
        count, total = out.get(device, (0, 0))
        for line in (v for n, v in pf if n == 3):
            assert isinstance(line, bytes)
            lf = fields(line)
            line_name = next((v for n, v in lf if n == 2), b"")
            if not (isinstance(line_name, bytes) and line_name.startswith(b"Stream #")):
                continue
            base_ps = next((int(v) for n, v in lf if n == 3), 0) * 1000
            for event in (v for n, v in lf if n == 4):
                assert isinstance(event, bytes)
                ef = dict(fields(event))
                start = base_ps + int(ef.get(2, 0))
                count += 1
                total += ns_half_even(start + int(ef.get(3, 0))) - ns_half_even(start)
        out[device] = (count, total)
    return {d: v for d, v in out.items() if v[0]}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_every_gpu_op_is_read_and_timed(path: Path) -> None:
    expected = gpu_ops(path)
    table = load_trace_file(path)
    gpu = np.isin(table["kind"], [int(k) for k in GPU_KINDS])
    got = {}
    for d in np.unique(table["device"][gpu]).tolist():
        sel = gpu & (table["device"] == d)
        got[int(d)] = (int(sel.sum()), int(table["dur_ns"][sel].astype(np.int64).sum()))
    assert got == expected and sum(c for c, _ in expected.values()) > 20
    meta = table.meta[0]
    assert set(dict(meta.dropped)) <= {"python function"}  # only host Python frames are left out
    assert Counter(int(k) for k in table["kind"][gpu])[int(Kind.KERNEL)] > 0


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["json", "table"])
def test_analyze_exits_0(fmt: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = run_perfkit(["analyze", *map(str, FILES[:1]), "--format", fmt], Path.cwd(), env)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
