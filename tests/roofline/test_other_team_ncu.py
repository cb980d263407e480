"""A real Nsight Compute details-page CSV of another project (tests/data/ncu/superbench): every
metric row is read, values and units equal a plain csv reading, and the roofline import refuses
it in one line (the default sections carry no flop counters)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from perfkit.core.errors import TraceError
from perfkit.roofline.ncu_csv import load_csv
from perfkit.roofline.ncu_kernels import kernel_table
from perfkit.roofline.units import ncu_unit_scale, parse_ncu_number

LOG = Path(__file__).resolve().parents[1] / "data" / "ncu" / "superbench" / "cublaslt_ncu.log"


def plain_rows() -> tuple[list[str], list[list[str]]]:
    lines = LOG.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    rows = list(csv.reader(lines[start:]))
    return rows[0], rows[1:]


def test_short_metric_rows_are_read_and_every_metric_kept() -> None:
    header, rows = plain_rows()
    assert {len(r) for r in rows} == {16, 20} and len(header) == 20  # ncu's own short rows
    col = {h: i for i, h in enumerate(header)}
    metrics = [r for r in rows if r[col["Metric Name"]]]
    df = load_csv(LOG)
    assert len(df) == 1 and len(metrics) == 50
    for r in metrics:
        name = r[col["Metric Name"]]
        key = f"{r[col['Section Name']]}: {name}" if name in ("Block Size", "Grid Size") else name
        try:
            factor, _ = ncu_unit_scale(r[col["Metric Unit"]])
            expected: object = parse_ncu_number(r[col["Metric Value"]]) * factor
        except ValueError:
            expected = r[col["Metric Value"]]
        assert df.loc[0, key] == expected, name


def test_identity_columns_keep_the_launch_configuration() -> None:
    df = load_csv(LOG)
    assert (df.loc[0, "block_size"], df.loc[0, "grid_size"]) == ("(384, 1, 1)", "(9, 32, 1)")
    assert (df.loc[0, "Launch Statistics: Block Size"], df.loc[0, "Launch Statistics: Grid Size"]) == (384, 288)
    assert df.loc[0, "Duration"] == pytest.approx(406240e-9, rel=1e-12)
    assert df.attrs["units"]["Duration"] == "second" and df.loc[0, "cc"] == "10.0"


def test_the_roofline_import_refuses_it_in_one_line() -> None:
    with pytest.raises(TraceError, match=r"no gpu__time_duration\.sum column") as err:
        kernel_table(load_csv(LOG), origin=str(LOG))
    assert "\n" not in str(err.value)
