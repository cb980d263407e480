"""The profile summary fits 80 columns: short point labels, units in the headers, repeated
reasons once as footnotes."""

from __future__ import annotations

from dataclasses import replace

from rich.console import Console

from perfkit.core.cost import Cost
from perfkit.core.env import Env
from perfkit.core.measurement import Measurement
from perfkit.core.record import PointResult, Run
from perfkit.core.terminal import DEFAULT_WIDTH as SUMMARY_WIDTH
from perfkit.reports.console import rate_scale, summary_table
from perfkit.reports.point_params import point_label


def _point(workload: str, i: int, status: str = "ok", **extra: object) -> PointResult:
    return PointResult(key=f"{workload}/x/m={i}", kind="custom", workload=workload, status=status,
                       params={"m": 16 * i, "n": 512, "dtype": "bf16" if i % 2 else "fp32"}, **extra)  # type: ignore[arg-type]


def _render(run: Run, width: int = SUMMARY_WIDTH) -> str:
    console = Console(width=width, record=True, soft_wrap=False)
    console.print(summary_table(run, width))
    return console.export_text()


def _run(points: list[PointResult]) -> Run:
    return Run(run_id="20260101-000000-abcdef", created="2026-01-01T00:00:00+00:00", status="complete",
               spec={}, spec_hash="h", spec_path="s.yaml", device="cpu", env=Env(), points=tuple(points))


def test_every_line_fits_80_columns_and_a_repeated_reason_is_one_footnote() -> None:
    reason = "Triton kernels run under Triton's interpreter on cpu (TRITON_INTERPRET=1): numerics checked, " \
             "timing skipped because the interpreter's speed says nothing about the kernel"
    points = [_point("rmsnorm-triton-with-a-long-name", i, metrics={"timing_skipped": reason}) for i in range(1, 9)]
    points += [_point("rmsnorm-torch", i, status="failed", error="CUDA out of memory") for i in range(1, 4)]
    text = _render(_run(points))
    assert max(len(line) for line in text.splitlines()) <= SUMMARY_WIDTH
    assert text.count("interpreter's speed") == 1 and text.count("CUDA out of memory") == 1
    assert "[1] numerics only: Triton kernels" in text and "[2] CUDA out of memory" in text
    assert text.count("ok [1]") == 8 and text.count("FAIL [2]") == 3
    lines = text.splitlines()
    assert "rmsnorm-torch n=512" in lines  # a row naming the workload and its constants above its points
    assert text.count("n=512") == 2 and "  m=16 bf16" in text  # constants once per workload


def test_labels_name_what_varies_and_dtype_by_its_value() -> None:
    p = _point("w", 3)
    assert point_label(p, ["m", "dtype"]) == "m=48 bf16"
    assert point_label(p, []) == "w"


def test_rates_read_in_the_unit_of_their_header() -> None:
    assert rate_scale([2.5e12, 3e9]) == ("T", 1e12)
    assert rate_scale([]) == ("", 1.0)
    timed = Measurement(samples_s=(1.0,) * 5, warmup_reps=1, stop_reason="converged", timer="perf_counter",
                        target_rel_ci=0.01)
    points = [replace(_point("g", i), measurement=timed, cost=Cost(flop=v, bytes=v / 10))
              for i, v in enumerate((1.5e12, 2.25e11), start=1)]
    text = _render(_run(points))
    header = next(line for line in text.splitlines() if "median" in line)
    assert "Tflop/s" in header and "GB/s" in header
    assert " 1.5 " in text and " 0.225 " in text and " 150 " in text and " 22.5 " in text
