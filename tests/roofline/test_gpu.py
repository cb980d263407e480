"""On a GPU only (marker `gpu`, skipped without CUDA): a real calibration and a real ncu report."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu


def test_calibrate_cuda_quick_is_near_the_datasheet() -> None:
    from perfkit.roofline.calibrate.run import calibrate
    from perfkit.roofline.devices import lookup

    cal = calibrate("cuda", dtypes=["bf16", "fp32"], quick=True)
    dram, l2, bf16 = cal.ceiling("dram"), cal.ceiling("l2"), cal.ceiling("gemm.bf16")
    assert dram is not None and l2 is not None and bf16 is not None
    assert l2.value > dram.value  # an L2-resident copy beats HBM
    spec = lookup(cal.device.name)
    if spec is not None and spec.bandwidth_bytes_per_s and "bf16" in spec.peak_flop_per_s:
        # REFERENCE.md: copy ~90% of spec, a large bf16 GEMM ~80% of the dense peak
        assert 0.6 < dram.value / spec.bandwidth_bytes_per_s < 1.0
        assert 0.5 < bf16.value / spec.peak_flop_per_s["bf16"] < 1.0


def test_ncu_report_of_a_bf16_gemm(tmp_path: Path) -> None:
    import torch

    from perfkit.roofline import ncu
    from perfkit.roofline.ncu_kernels import kernel_table

    if not ncu.ncu_available():
        pytest.skip("ncu is not installed")
    n = 2048
    script = tmp_path / "probe.py"
    script.write_text(textwrap.dedent(f"""
        import torch
        a = torch.randn({n}, {n}, device="cuda", dtype=torch.bfloat16)
        b = torch.randn({n}, {n}, device="cuda", dtype=torch.bfloat16)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push("probe")
        c = a @ b
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
    """))
    major, minor = torch.cuda.get_device_capability()
    result = ncu.profile([sys.executable, str(script)], tmp_path, nvtx_include=["probe/"],
                         compute_capability=f"{major}.{minor}", timeout_s=300)
    kernels = kernel_table(ncu.load_csv(result.csv))
    assert len(kernels) >= 1
    gemm = kernels.loc[kernels["flop"].idxmax()]
    assert gemm["flop"] == pytest.approx(2 * n**3, rel=0.02)
    assert gemm["dtype"] == "bf16"
    assert gemm["bytes_dram"] > 0 and gemm["bytes_l2"] >= gemm["bytes_dram"] * 0.5
    assert result.clock_control == "base"
    assert ncu.load_meta(result.csv)["clock_control"] == "base"
