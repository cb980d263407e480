"""`kind: custom` specs: validation at load time (located SpecErrors), sweeps, tune expansion."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from perfkit.cli import main
from perfkit.core.errors import SpecError
from perfkit.pipeline.spec import load_spec
from perfkit.workloads.custom.spec import CustomSpec

HEADER = "name: t\ndevice: cpu\nworkloads:\n"


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(HEADER + textwrap.dedent(body))
    return path


def load_error(tmp_path: Path, body: str) -> str:
    path = write(tmp_path, body)
    with pytest.raises(SpecError) as info:
        load_spec(path)
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(f"{path}:")
    return text


def test_valid_spec_sweeps_and_records_positions(tmp_path: Path) -> None:
    path = write(tmp_path, """\
      - kind: custom
        name: mm
        entry: mypkg.ops:make_case
        reference: mypkg.ops:reference
        params: {m: [16, 32], n: 64, dtype: [fp32, bf16], fused: [true, false]}
        cost: {flop: 2*m*n, bytes: sizeof(dtype) * m * n}
    """)
    spec = load_spec(path)
    w = spec.workloads[0]
    assert isinstance(w, CustomSpec)
    assert len(w.sweep()) == 8
    assert w.sweep()[0] == {"m": 16, "n": 64, "dtype": "fp32", "fused": True}
    assert w.where("entry") == f"{path}:6:3"
    assert w.where("reference") == f"{path}:7:3"
    assert w.where("cost") == f"{path}:9:3"
    # positions are not part of the spec's record or hash
    assert "_where" not in spec.to_dict()["workloads"][0]
    assert spec.hash() == load_spec(path).hash()


def test_tune_axes_multiply_shapes_and_where_filters(tmp_path: Path) -> None:
    path = write(tmp_path, """\
      - kind: custom
        entry: mypkg.ops:make_case
        params: {n: [256, 1024]}
        tune:
          axes: {BLOCK_SIZE: [128, 256, 512, 1024], num_warps: [4, 8]}
          where: BLOCK_SIZE <= n and num_warps * 32 <= BLOCK_SIZE
        cost: {flop: n, bytes: 4*n}
    """)
    w = load_spec(path).workloads[0]
    assert isinstance(w, CustomSpec)
    points = w.sweep()
    small = [p for p in points if p["n"] == 256]
    assert {(p["BLOCK_SIZE"], p["num_warps"]) for p in small} == {(128, 4), (256, 4), (256, 8)}
    assert len(points) == 3 + 8 - 1  # n=1024: every config except (128, 8)
    assert w.shape_names == ("n",) and w.config_names == ("BLOCK_SIZE", "num_warps")


def test_cost_as_function_shorthand(tmp_path: Path) -> None:
    path = write(tmp_path, """\
      - kind: custom
        entry: mypkg.ops:make_case
        cost: mypkg.costs:mm_cost
    """)
    w = load_spec(path).workloads[0]
    assert isinstance(w, CustomSpec) and w.cost is not None
    assert w.cost.function == "mypkg.costs:mm_cost"
    assert w.sweep() == [{}]


@pytest.mark.parametrize(
    ("body", "line_col", "message"),
    [
        ("""\
      - kind: custom
        entry: mypkg.ops:make
        params: {m: 8}
        cost: {flop: 2*m*, bytes: m}
    """, "7:16", "cost.flop: '2*m*' is not an arithmetic expression (syntax error"),
        ("""\
      - kind: custom
        entry: mypkg.ops:make
        params: {m: 8}
        cost:
          flop: 2*m
          bytes: 4*q
    """, "9:12", "cost.bytes: '4*q': unknown name 'q'"),
        ("""\
      - kind: custom
        entry: mypkg.ops:make
        params: {m: 8}
        cost: {flop: m.real, bytes: m}
    """, "7:16", "attribute access is not allowed"),
        ("""\
      - kind: custom
        entry: mypkg.ops:make
        params: {m: 8}
        cost: {flop: "__import__('os')", bytes: m}
    """, "7:16", "calling '__import__' is not allowed"),
        ("""\
      - kind: custom
        entry: mypkg.ops.make
    """, "5:10", "'mypkg.ops.make' is not 'package.module:function'"),
        ("""\
      - kind: custom
        entry: mypkg.ops:make
        params: {device: cuda}
    """, "6:11", "parameter name 'device' is reserved"),
        ("""\
      - kind: custom
        entry: mypkg.ops:make
        params: {2m: 8}
    """, "6:11", "is not a Python identifier"),
        ("""\
      - kind: custom
        entry: mypkg.ops:make
        params: {m: 8}
        cost: {flop: 2*m}
    """, "7:9", "give both flop and bytes"),
        ("""\
      - kind: custom
        entry: mypkg.ops:make
        params: {m: 8}
        tune: {axes: {m: [1, 2]}}
    """, "7:9", "'m' is both a parameter and a tune axis"),
        ("""\
      - kind: custom
        entry: mypkg.ops:make
        params: {m: 8}
        tune: {axes: {B: [1, 2]}, where: B < z}
    """, "7:36", "tune.where: 'B < z': unknown name 'z'"),
        ("""\
      - kind: custom
        entry: mypkg.ops:make
        params: {m: [8, 64]}
        tune: {axes: {B: [16, 32]}, where: B >= m}
    """, "4:3", "leaves no configuration for m=64"),
        ("""\
      - kind: custom
        entry: mypkg.ops:make
        tolerance: 0
    """, "6:14", "'tolerance' is 0; it must be > 0"),
        ("""\
      - kind: custom
        entry: mypkg.ops:make
        entry_point: x
    """, "6:3", "unknown key 'entry_point'; did you mean 'entry'?"),
    ],
)
def test_spec_errors_are_located(tmp_path: Path, body: str, line_col: str, message: str) -> None:
    text = load_error(tmp_path, body)
    assert f"spec.yaml:{line_col}:" in text, text
    assert message in text, text


def test_bad_expression_exits_2_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, """\
      - kind: custom
        entry: mypkg.ops:make
        params: {m: 8}
        cost: {flop: 2*m**, bytes: m}
    """)
    out = tmp_path / "runs"
    assert main(["profile", str(path), "--out", str(out), "--quiet"]) == 2
    assert "spec.yaml:7:16: cost.flop:" in capsys.readouterr().err
    assert not out.exists()
