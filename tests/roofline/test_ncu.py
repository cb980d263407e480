"""Nsight Compute: command building, CSV import (raw and details pages), kernel flop / bytes."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from perfkit.core.errors import TraceError
from perfkit.roofline.calibration import Calibration
from perfkit.roofline.ceilings import MEASURED, roofs_for
from perfkit.roofline.ncu import (
    build_command,
    build_import_command,
    load_csv,
    load_meta,
    roofline_metrics,
)
from perfkit.roofline.ncu_kernels import kernel_table
from perfkit.roofline.place import place_kernels

IDENT = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC"'
METRICS = [
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "gpu__time_duration.sum",
    "l1tex__t_bytes.sum",
    "lts__t_bytes.sum",
    "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
    "sm__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "sm__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "sm__sass_thread_inst_executed_op_fmul_pred_on.sum",
]
# A raw-page export in the documented format (--csv --page raw --print-units base): ==PROF== lines,
# header, units row, thousands separators, an "n/a"; three kernels of a bf16 GEMM step on an H100.
RAW_CSV_FILE = Path(__file__).parent / "data" / "ncu_raw_handwritten.csv"
RAW_BASE = RAW_CSV_FILE.read_text()


@pytest.fixture
def raw_csv() -> Path:
    return RAW_CSV_FILE


def test_build_command_with_nvtx_filters() -> None:
    cmd = build_command(
        ["python", "-m", "perfkit", "profile", "m.yaml"],
        "out/ncu.ncu-rep",
        nvtx_include=["decode/"],
        kernel_regex="gemm|flash",
        launch_skip=5,
        launch_count=20,
        compute_capability="9.0",
        ncu="/opt/ncu",
    )
    assert cmd[:4] == ["/opt/ncu", "--export", "out/ncu.ncu-rep", "--force-overwrite"]
    assert cmd[cmd.index("--clock-control") + 1] == "base"
    assert cmd[cmd.index("--nvtx-include") - 1] == "--nvtx"
    assert cmd[cmd.index("--nvtx-include") + 1] == "decode/"
    assert cmd[cmd.index("--kernel-name") + 1] == "regex:gemm|flash"
    assert cmd[cmd.index("--launch-skip") + 1] == "5"
    assert cmd[cmd.index("--launch-count") + 1] == "20"
    metrics = cmd[cmd.index("--metrics") + 1].split(",")
    assert "gpu__time_duration.sum" in metrics and "lts__t_bytes.sum" in metrics
    assert "sm__ops_path_tensor_src_fp8.sum" in metrics  # Hopper has fp8 tensor cores
    assert cmd[-5:] == ["python", "-m", "perfkit", "profile", "m.yaml"]


def test_build_command_defaults_and_checks() -> None:
    cmd = build_command(["./app"], "r.ncu-rep", clock_control="none", ncu="ncu")
    assert "--nvtx" not in cmd
    assert cmd[cmd.index("--clock-control") + 1] == "none"
    with pytest.raises(ValueError, match="clock_control"):
        build_command(["./app"], "r", clock_control="boost")
    with pytest.raises(ValueError, match="command to profile"):
        build_command([], "r")


def test_metric_set_follows_the_architecture() -> None:
    assert not any("tensor" in m for m in roofline_metrics("7.5"))
    assert "sm__ops_path_tensor_src_bf16_dst_fp32.sum" in roofline_metrics("8.0")
    assert "sm__ops_path_tensor_src_fp8.sum" not in roofline_metrics("8.0")
    assert "sm__ops_path_tensor_src_fp8.sum" in roofline_metrics("8.9")
    assert "sm__ops_path_tensor_src_fp8.sum" in roofline_metrics("10.0")


def test_import_command() -> None:
    assert build_import_command("r.ncu-rep", ncu="ncu") == [
        "ncu", "--import", "r.ncu-rep", "--csv", "--page", "raw", "--print-units", "base"
    ]


def test_load_raw_page(raw_csv: Path) -> None:
    df = load_csv(raw_csv)
    assert len(df) == 3
    assert list(df["id"]) == [0, 1, 2]
    assert df["kernel_name"][0].startswith("nvjet_hsh")
    assert df["grid_size"][1] == "(1,056, 1, 1)"  # identity columns stay text
    assert df["dram__bytes_read.sum"][0] == 402_653_184
    assert df["gpu__time_duration.sum"][1] == pytest.approx(280e-6)
    assert math.isnan(df["gpu__time_duration.sum"][2])
    assert df.attrs["units"]["gpu__time_duration.sum"] == "second"


def test_load_raw_page_with_auto_units(tmp_path: Path) -> None:
    """Without --print-units base ncu scales units per column: Mbyte, usecond, Gbyte/second."""
    text = "\n".join(
        [
            IDENT + ',"dram__bytes_read.sum","gpu__time_duration.sum","dram__throughput.avg.pct_of_peak_sustained_elapsed","dram__bytes.sum.per_second"',
            '"","","","","","","","","","",""' + ',"Mbyte","usecond","%","Tbyte/second"',
            '"0","1","p","h","k","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","1,234.50","12.25","88.1","2.90"',
        ]
    )
    path = tmp_path / "auto.csv"
    path.write_text(text)
    df = load_csv(path)
    assert df["dram__bytes_read.sum"][0] == pytest.approx(1.2345e9)
    assert df["gpu__time_duration.sum"][0] == pytest.approx(12.25e-6)
    assert df["dram__throughput.avg.pct_of_peak_sustained_elapsed"][0] == pytest.approx(88.1)
    assert df["dram__bytes.sum.per_second"][0] == pytest.approx(2.9e12)
    assert df.attrs["units"]["dram__bytes.sum.per_second"] == "byte/second"


def test_load_details_page(tmp_path: Path) -> None:
    head = IDENT + ',"Section Name","Metric Name","Metric Unit","Metric Value"'
    ident0 = '"0","1","p","h","k0","1","7","(1, 1, 1)","(1, 1, 1)","0","8.0"'
    ident1 = '"1","1","p","h","k1","1","7","(1, 1, 1)","(1, 1, 1)","0","8.0"'
    text = "\n".join(
        [
            head,
            ident0 + ',"Command line profiler metrics","gpu__time_duration.sum","nsecond","2,000"',
            ident0 + ',"Command line profiler metrics","dram__bytes_read.sum","Kbyte","4.00"',
            ident1 + ',"Command line profiler metrics","gpu__time_duration.sum","msecond","1.50"',
            ident1 + ',"Command line profiler metrics","dram__bytes_read.sum","byte","100"',
        ]
    )
    path = tmp_path / "details.csv"
    path.write_text(text)
    df = load_csv(path)
    assert list(df["kernel_name"]) == ["k0", "k1"]
    assert df["gpu__time_duration.sum"].tolist() == pytest.approx([2e-6, 1.5e-3])
    assert df["dram__bytes_read.sum"].tolist() == pytest.approx([4000.0, 100.0])


def test_bad_csv_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.csv"
    empty.write_text("==PROF== Connected\nhello from the program\n")
    with pytest.raises(TraceError, match="no ncu CSV header"):
        load_csv(empty)
    truncated = tmp_path / "trunc.csv"
    truncated.write_text("\n".join(RAW_BASE.splitlines()[:5]) + '\n"1","4242","python3"\n')
    with pytest.raises(TraceError, match=r"trunc\.csv:6: 3 fields where the header has 20"):
        load_csv(truncated)
    with pytest.raises(TraceError, match="cannot read"):
        load_csv(tmp_path / "absent.csv")


def test_kernel_table_flop_and_bytes(raw_csv: Path) -> None:
    k = kernel_table(load_csv(raw_csv))
    gemm, add, sgemm = (k.iloc[i] for i in range(3))
    assert gemm["flop"] == pytest.approx(2 * 8192**3)
    assert gemm["dtype"] == "bf16"
    assert gemm["bytes_dram"] == pytest.approx(402_653_184 + 134_217_728)
    assert gemm["bytes_l2"] == pytest.approx(3e9) and gemm["bytes_l1"] == pytest.approx(9e9)
    assert add["flop"] == 67_108_864 and add["dtype"] == "fp32"
    # fp32 flop = fadd + fmul + 2 ffma
    assert sgemm["flop_fp32"] == 1_000 + 3_000 + 2 * 2_000_000
    assert sgemm["dtype"] == "fp32"
    assert k["key"][0] == "ncu/0/" + gemm["name"]


def test_tensor_metrics_are_not_double_counted(tmp_path: Path) -> None:
    cols = [
        "gpu__time_duration.sum",
        "sm__ops_path_tensor_src_fp16.sum",
        "sm__ops_path_tensor_src_fp16_dst_fp16.sum",
        "sm__ops_path_tensor_src_fp16_dst_fp32.sum",
        "sm__ops_path_tensor_src_fp8_sparsity_off.sum",
        "sm__ops_path_tensor_src_fp8_sparsity_on.sum",
        "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
        "sm__sass_thread_inst_executed_op_ffma_pred_on.sum",
    ]
    text = "\n".join(
        [
            IDENT + "," + ",".join(f'"{c}"' for c in cols),
            '"0","1","p","h","k","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","0.001","300","100","200","50","0","7","7"',
        ]
    )
    path = tmp_path / "t.csv"
    path.write_text(text)
    k = kernel_table(load_csv(path))
    assert k["flop_tensor_fp16"][0] == 300  # the aggregate, not 300 + 100 + 200
    assert k["flop_tensor_fp8"][0] == 50  # sparsity_off + sparsity_on when no aggregate
    assert k["flop_fp32"][0] == 14  # sm__ and smsp__ spell one counter
    assert k["flop"][0] == 364
    assert k["dtype"][0] == "fp16"


def test_kernel_table_needs_time_and_flop(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    path.write_text(IDENT + ',"dram__bytes_read.sum"\n"0","1","p","h","k","1","7","a","b","0","9.0","5"\n')
    with pytest.raises(TraceError, match=r"gpu__time_duration\.sum"):
        kernel_table(load_csv(path))
    path.write_text(IDENT + ',"gpu__time_duration.sum"\n"0","1","p","h","k","1","7","a","b","0","9.0","5"\n')
    with pytest.raises(TraceError, match="no flop metrics"):
        kernel_table(load_csv(path))


def test_ncu_kernels_on_the_hierarchical_roof(raw_csv: Path, h100_calibration: Calibration) -> None:
    roofs = roofs_for(h100_calibration.device, h100_calibration)
    placed = place_kernels(kernel_table(load_csv(raw_csv)), roofs)
    gemm, add = placed.iloc[0], placed.iloc[1]
    assert gemm[f"bound_{MEASURED}"] == "compute"
    assert gemm["achieved_flop_per_s"] == pytest.approx(2 * 8192**3 / 1.5e-3)
    assert gemm[f"pct_of_roof_{MEASURED}"] == pytest.approx(100 * 2 * 8192**3 / 1.5e-3 / 798e12)
    assert add[f"bound_{MEASURED}"] == "memory"
    assert add[f"bound_level_{MEASURED}"] == "dram"
    assert add["achieved_bytes_per_s"] == pytest.approx((536_870_912 + 268_435_456) / 280e-6)


def test_load_meta(tmp_path: Path) -> None:
    csv_path = tmp_path / "ncu.csv"
    assert load_meta(csv_path) == {}
    (tmp_path / "ncu.json").write_text('{"clock_control": "base"}')
    assert load_meta(csv_path) == {"clock_control": "base"}
