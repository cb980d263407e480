"""The profile summary fits its terminal: $COLUMNS, else 80 when not a tty; point labels wrap
with a hanging indent, a workload's constant parameters are said once in its header line, and
`backend_ran` shows only where it differs from `backend`."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from perfkit.core.env import Env
from perfkit.core.measurement import Measurement
from perfkit.core.record import PointResult, Run
from perfkit.core.terminal import terminal_width
from perfkit.pipeline.spec import load_spec
from perfkit.reports.console import summary_table

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "attention-cpu.yaml"


def _attention_run() -> Run:
    """The example's 56 points, timed, each with the backend SDPA ran ('auto' ran flash)."""
    timed = Measurement(samples_s=(7e-6,) * 12, warmup_reps=1, stop_reason="converged", timer="perf_counter",
                        target_rel_ci=0.03)
    points = []
    for p in load_spec(EXAMPLE).points():
        ran = "flash" if p.params["backend"] == "auto" else p.params["backend"]
        points.append(PointResult(key=p.key, kind=p.kind, workload=p.workload, params={**p.params, "backend_ran": ran},
                                  status="ok", measurement=timed))
    return Run(run_id="20260101-000000-abcdef", created="2026-01-01T00:00:00+00:00", status="complete", spec={},
               spec_hash="h", spec_path=str(EXAMPLE), device="cpu", env=Env(), points=tuple(points))


def _render(run: Run, width: int | None = None) -> list[str]:
    console = Console(width=400, record=True, soft_wrap=False)
    console.print(summary_table(run, width))
    return console.export_text().splitlines()


def test_width_is_columns_else_80_when_not_a_tty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    assert terminal_width() == 80  # pytest captures stdout: not a tty
    monkeypatch.setenv("COLUMNS", "200")
    assert terminal_width() == 200


def test_attention_fits_80_columns_with_hanging_indents_and_constants_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    run = _attention_run()
    lines = _render(run)
    assert max(len(line) for line in lines) <= 80
    assert "prefill phase=prefill batch=1 num_heads=8 gqa=native fp32" in lines  # the workload header
    assert sum("num_heads=8" in line for line in lines) == 2  # once per workload, on no point
    rows = [i for i, line in enumerate(lines) if "  ok  " in line]
    assert len(rows) == len(run.points)
    hung = 0
    for i in rows:  # a label's continuation lines hang two columns further in than its first line
        first = len(lines[i]) - len(lines[i].lstrip())
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if nxt.strip() and "  ok  " not in nxt and not nxt.startswith("decode"):
            assert len(nxt) - len(nxt.lstrip()) == first + 2
            hung += 1
    assert hung > len(rows) // 2  # most attention labels do not fit one line in 80 columns
    joined = "\n".join(lines)
    assert joined.count("backend_ran=") == joined.count("backend=auto")  # only where it differs
    assert joined.count("backend_ran=") > 0


def test_a_wide_terminal_gets_one_line_per_point(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    run = _attention_run()
    lines = _render(run)
    assert max(len(line) for line in lines) > 80 and max(len(line) for line in lines) <= 200
    points = [line for line in lines if line.startswith("  ")]
    assert len(points) == len(run.points)  # no label wrapped


def test_a_label_word_wider_than_its_column_is_never_split() -> None:
    """`moe_decode_impl=gather` in a 24-column name column printed as `moe_decode_impl=gath` /
    `er`; words stay whole (one wider than the column takes its own line) and the cells stay
    in their columns."""
    from rich.text import Text

    from perfkit.reports.text_layout import Row, table_lines

    rows = [Row("batch=1 moe_decode_impl=gather", (Text("ok"), Text("1.07 ms")), indent=2),
            Row("averyveryverylongwordwithoutspaces_here x", (Text("ok"), Text("2.00 ms")), indent=2)]
    lines = [t.plain for t in table_lines(["point", "status", "median"], [False, False, True], rows, 38)]
    text = "\n".join(lines)
    assert "moe_decode_impl=gather" in text and "moe_decode_impl=gath\n" not in text + "\n"
    assert "averyveryverylongwordwithoutspaces_here" in text
    status_col = lines[0].index("status")
    for line in lines[2:]:
        if "ok" in line.split():
            assert line.index(" ok ") + 1 == status_col, line  # the cells never move


def test_a_point_key_wraps_after_a_comma_never_inside_a_parameter() -> None:
    """`perfkit history` printed `...,mo` / `de=eager,...`: a key now breaks after a comma, slash
    or space, and its lines give the key back."""
    from perfkit.reports.text_layout import wrap_key

    key = ("decode/tiny-dense/model=tiny,dtype=fp32,batch=1,prompt_len=64,decode_steps=32,mode=eager,"
           "decode_attention=sdpa,timed=decode_step:achieved_bytes_per_s")
    lines = wrap_key(f"{key} on AMD EPYC: 2 commits", 80)
    assert len(lines) > 1 and all(len(line) <= 80 for line in lines)
    assert all(line.rstrip().endswith((",", "/")) or " " in line for line in lines[:-1])
    assert "".join(line.strip() if i else line for i, line in enumerate(lines)).startswith(key)
    assert wrap_key("x" * 100, 40) == ["x" * 100]  # one piece longer than a line: whole, alone
