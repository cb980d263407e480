"""Trace notes: empty tables are never silent (CPU-only traces, unread devices, dropped events)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from perfkit.analyzers.event_table import EventTable
from perfkit.analyzers.loaders.kineto.load import load_trace
from perfkit.analyzers.suite import run_analyses
from perfkit.analyzers.trace_notes import empty_reason, trace_notes
from perfkit.cli import main

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "bench" / "traces"


def _with_meta(table: EventTable, **fields: Any) -> EventTable:
    return EventTable(table.columns, table.names, table.args_text, tuple(replace(m, **fields) for m in table.meta))


def test_cpu_trace(cpu_trace: Path, raw: Callable[[Path], list[dict[str, Any]]]) -> None:
    table = load_trace(cpu_trace)
    n_ops = sum(1 for e in raw(cpu_trace) if e.get("ph") == "X" and e.get("cat") == "cpu_op")
    notes = trace_notes(table)
    assert notes == [
        f"{cpu_trace}: no GPU kernels: this is a CPU trace with {n_ops:,} CPU ops; "
        "the ops table shows those whose cost perfkit computes"
    ]
    tables = run_analyses(table)
    assert tables["kernels"].empty and not tables["ops"].empty
    assert empty_reason("kernels", table) == "(no rows: the trace has no GPU kernels, memcpy or memset)"


def test_unread_device_and_loader_findings(kineto, tmp_path: Path) -> None:
    t = kineto()
    t.cpu("aten::add", 0, 5)
    t.x("mtia_kernel", "mtia_matmul", 10, 5, pid=2, tid=3)  # a device perfkit does not read
    table = load_trace(t.write(tmp_path / "mtia.json"))
    note, loader_note = trace_notes(table)
    assert "no GPU kernels perfkit reads, but 1 events of categories it does not read" in note
    assert loader_note.endswith("1 events of categories perfkit does not read: mtia_kernel (1)")  # the loader counted it
    table = _with_meta(
        table,
        unknown_categories=(("mtia_kernel", 1_500), ("mtia_runtime", 20)),
        dropped=(("no ts", 3), ("negative dur", 1)),
        warnings=("mtia.json: traceEvents[7]: ts is not a number; the event is left out",),
    )
    path = table.meta[0].path
    notes = trace_notes(table)
    assert notes[0].startswith(f"{path}: no GPU kernels perfkit reads, but 1,520 events")
    assert notes[1:] == [
        f"{path}: 1,520 events of categories perfkit does not read: mtia_kernel (1,500), mtia_runtime (20)",
        f"{path}: 4 events left out: no ts (3), negative dur (1)",
        "mtia.json: traceEvents[7]: ts is not a number; the event is left out",
    ]


def test_unlinked_and_other_share(kineto, tmp_path: Path) -> None:
    t = kineto()
    t.gpu("mystery_kernel", 10, 40, corr=5)  # no runtime event carries correlation 5
    t.gpu("ampere_sgemm_128x64_nn", 60, 60, corr=6)
    table = load_trace(t.write(tmp_path / "g.json"))
    notes = trace_notes(table)
    assert len(notes) == 2
    assert "none of the 2 GPU ops is linked to a launch call" in notes[0]
    assert "40% of GPU time is in kernels no category rule names" in notes[1]


def test_real_gpu_trace_has_no_work_notes() -> None:
    path = SHARED / "hta_nccl_data_a100.json.gz"
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    notes = trace_notes(load_trace(path))
    assert not [n for n in notes if "GPU kernels" in n or "linked" in n or "category rule" in n]


def test_empty_reasons(kineto, tmp_path: Path) -> None:
    t = kineto()
    t.kernel("ampere_sgemm_128x64_nn", 0, 1, 2, 3)
    table = load_trace(t.write(tmp_path / "k.json"))
    assert "no user annotations" in empty_reason("ranges", table)
    t.annotation("decode", 0, 10)
    table = load_trace(t.write(tmp_path / "k2.json"))
    assert empty_reason("ranges", table, "^prefill") == "(no rows: no annotation name matches --range '^prefill')"
    assert "record_shapes=True" in empty_reason("ops", table)
    assert "XLA / JAX trace" in empty_reason("hlo_ops", table)  # a Kineto trace: where HLO ops come from
    assert empty_reason("kernels", load_trace(kineto().write(tmp_path / "none.json"))).startswith("(no rows: the trace has no events")


def test_cli_notes_on_stderr_and_in_json(cpu_trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(cpu_trace), "--only", "kernels,ops"]) == 0
    out, err = capsys.readouterr()
    assert err.startswith(f"perfkit analyze: {cpu_trace}: no GPU kernels: this is a CPU trace")
    assert err.count("\n") == 1
    assert "## kernels\n(no rows: the trace has no GPU kernels, memcpy or memset)\n" in out
    assert "(no rows)\n" not in out
    assert main(["analyze", str(cpu_trace), "--only", "kernels,ops", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert list(data) == ["kernels", "ops", "notes"] and data["kernels"] == []
    assert data["notes"] == [err.removeprefix("perfkit analyze: ").strip()]
    assert main(["analyze", str(cpu_trace), "--only", "kernels", "--format", "csv"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("# kernels\n") and "no GPU kernels" in err


def test_cli_vs_notes_both_sides(cpu_trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(cpu_trace), "--vs", str(cpu_trace)]) == 0
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert lines[0].startswith(f"perfkit analyze: BASE {cpu_trace}: no GPU kernels")
    assert lines[1].startswith(f"perfkit analyze: {cpu_trace}: no GPU kernels")
    # no kernels on either side: the diff is of CPU ops, said so, with real times
    assert "the diff is of CPU ops" in err and "## diff_totals\nstatus     ops" in out
