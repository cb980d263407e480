"""`perfkit analyze` on the real Nsight Systems exports (../shared/bench/nsys) is on par with
`nsys stats`: NVTX ranges grouped by name, a collectives table from the NCCL kernels, and no two
different kernels printed with the same name. Checked through the CLI's output against sums the
test reads from the SQLite file itself."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from perfkit.analyzers.collectives.names import canonical_collective
from perfkit.cli import main

NSYS = Path(__file__).resolve().parents[2].parent / "shared" / "bench" / "nsys"
EXPORTS = sorted(NSYS.glob("*.sqlite")) if NSYS.is_dir() else []
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not EXPORTS, reason="../shared/bench/nsys is absent")]
_NCCL = re.compile(r"^(void )?(nccl|rccl|msccl)", re.I)


def _analyze(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["analyze", *args]) == 0
    return capsys.readouterr().out


def _sql(path: Path, query: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return db.execute(query).fetchall()


def _printed_names(text: str, section: str) -> list[str]:
    """The first column of a table section of the table format (its width from the rule line)."""
    lines = text.split(f"## {section}\n", 1)[1].split("\n\n", 1)[0].splitlines()
    width = len(lines[1].split("  ", 1)[0])
    return [line[:width].rstrip() for line in lines[2:] if not line.startswith(("(", " ", "..."))]


@pytest.mark.parametrize("export", EXPORTS, ids=[p.name for p in EXPORTS])
def test_nvtx_grouped_and_nccl_collectives_exact(export: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = json.loads(_analyze(capsys, str(export), "--only", "ranges,collectives,kernels", "--format", "json"))
    ranges = {r["name"]: r for r in doc["ranges"]}
    assert not [n for n in ranges if re.search(r", (op_id|seq) = \d", n)]  # grouped: no per-call texts
    texts = _sql(export, "SELECT COALESCE(n.text, s.value), n.\"end\" - n.start FROM NVTX_EVENTS n "
                         "LEFT JOIN StringIds s ON s.id = n.textId WHERE n.eventType IN (59, 60) "
                         "AND COALESCE(n.domainId, 0) = 0")  # the default domain's (others read DOMAIN:text)
    per_group: dict[str, list[int]] = {}
    for text, dur in texts:
        per_group.setdefault(str(text).split(", op_id = ")[0].split(", seq = ")[0], []).append(int(str(dur)))
    assert len(per_group) < len(texts) / 10
    for name, durs in per_group.items():
        assert (ranges[name]["count"], ranges[name]["cpu_time_ns"]) == (len(durs), sum(durs)), name
        assert ranges[name]["cpu_max_ns"] == max(durs)
    nccl = [int(str(d)) for name, d in _sql(export, "SELECT s.value, k.\"end\" - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                                                     "JOIN StringIds s ON s.id = k.demangledName") if _NCCL.match(str(name))]
    per_rank = [r for r in doc["collectives"] if r["rank"] >= 0]
    assert sum(r["total_ns"] for r in per_rank) == sum(nccl)
    assert all(r["message_bytes"] is None and r["source"] in ("kernel", "nvtx") and r["collective"] for r in per_rank)
    # kernels launched inside torch's `nccl:<op>` NVTX range (same thread) are that op's calls
    inside = _sql(export, "SELECT n.rowid, COALESCE(n.text, s2.value), k.\"end\" - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                          "JOIN StringIds s ON s.id = k.demangledName "
                          "JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId "
                          "AND r.globalTid / 16777216 = k.globalPid / 16777216 "
                          "JOIN NVTX_EVENTS n ON n.globalTid = r.globalTid AND n.start <= r.start AND r.start <= n.\"end\" "
                          "LEFT JOIN StringIds s2 ON s2.id = n.textId "
                          "WHERE s.value LIKE 'nccl%' AND COALESCE(n.text, s2.value) LIKE 'nccl:%'")
    calls: dict[str, set[int]] = {}
    for row, text, _ in inside:
        op = re.match(r"nccl:(\w+)", str(text))  # emit_nvtx appends ", op_id = N"
        assert op is not None
        calls.setdefault(canonical_collective(op.group(1)), set()).add(int(str(row)))
    by_nvtx = [r for r in per_rank if r["source"] == "nvtx"]
    assert {c: sum(r["count"] for r in by_nvtx if r["collective"] == c) for c in calls} == {c: len(v) for c, v in calls.items()}
    assert sum(r["total_ns"] for r in by_nvtx) == sum(int(str(d)) for _, _, d in inside)
    kernel_only = [r for r in per_rank if r["source"] == "kernel"]
    assert sum(r["count"] for r in kernel_only) == len(nccl) - len(inside)
    kernel_names = [r["name"] for r in doc["kernels"]]
    assert any("<" in n and "(" in n for n in kernel_names)  # JSON keeps whole demangled names


@pytest.mark.parametrize("export", EXPORTS, ids=[p.name for p in EXPORTS])
@pytest.mark.parametrize("width", ["12", "40"])
def test_no_two_kernels_print_alike(export: Path, width: str, capsys: pytest.CaptureFixture[str]) -> None:
    text = _analyze(capsys, str(export), "--only", "kernels,collectives,temporal", "--top", "0", "--name-width", width)
    printed = _printed_names(text, "kernels")
    distinct = {r[0] for r in _sql(export, "SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s "
                                           "ON s.id = k.demangledName")}
    assert len(printed) >= len(distinct) and len(set(printed)) == len(printed)
    assert max(map(len, printed)) <= int(width)
    assert text.split("## temporal\n", 1)[1].split("\n")[1].split() == ["step", "all", "all"]  # not -1
    collectives = text.split("## collectives\n", 1)[1].split("\n\n")[0]
    if _sql(export, "SELECT 1 FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName "
                    "WHERE s.value LIKE 'nccl%' LIMIT 1"):
        lines = collectives.splitlines()  # the rows pooling every rank: a column, or rows, reading "all"
        assert lines[0].split()[-1] == "all" or any(line.split()[:1] == ["all"] for line in lines[2:])
    else:
        assert collectives == "(no rows: no NCCL / RCCL kernels in the export)"


def test_vs_diff_never_prints_two_kernels_alike(capsys: pytest.CaptureFixture[str]) -> None:
    a, b = EXPORTS[0], EXPORTS[-1]
    printed = _printed_names(_analyze(capsys, str(b), "--vs", str(a), "--top", "0", "--name-width", "20"), "diff")
    assert len(printed) > 10 and len(set(printed)) == len(printed)


def test_only_help_lists_every_analysis(capsys: pytest.CaptureFixture[str]) -> None:
    from perfkit.analyzers.suite import ANALYSES

    with pytest.raises(SystemExit):
        main(["analyze", "--help"])
    help_text = "".join(capsys.readouterr().out.split())
    assert f"({','.join(ANALYSES)})" in help_text and "collectives" in ANALYSES
