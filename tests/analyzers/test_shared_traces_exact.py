"""Every real trace, exact to the nanosecond: perfkit's tables against an independent reading.

The reference reads each file with the standard library's json and decimal.Decimal (every
number exactly as written, no float64), converts microseconds to nanoseconds with decimal
arithmetic (half to even, as perfkit documents), and evaluates the definitions with plain
loops. perfkit's loader is not used for the reference. Traces: ../shared/bench/traces/*.json.gz
(HTA's test data from real A100 / V100 runs) and the repository's examples/traces/ when present;
each test skips when its folder is absent.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter, defaultdict
from decimal import ROUND_HALF_EVEN, Context, Decimal
from pathlib import Path
from typing import Any

import pytest

from perfkit.analyzers.collectives.kernels import collective_of
from perfkit.analyzers.collectives.names import canonical_collective
from perfkit.analyzers.loaders.kineto.load import load_trace
from perfkit.analyzers.suite import run_analyses

REPO = Path(__file__).resolve().parents[2]
FOLDERS = (REPO.parent / "shared" / "bench" / "traces", REPO / "examples" / "traces")
# every test reads a whole real trace twice (perfkit and the exact-decimal reference): 0.1-3 s of
# module setup per trace, so the module runs in the full suite, not the fast loop
pytestmark = pytest.mark.slow

TRACES = sorted(p for folder in FOLDERS if folder.is_dir() for p in folder.glob("*.json*"))
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
SKIPPED_CATS = {"trace", "python_function"}
_WIDE = Context(prec=60)
_NCCL = re.compile(r"^(void )?(nccl|rccl|msccl)", re.I)


def _ns(value: Any) -> int:
    """Microseconds (an int or a Decimal as written in the file) -> nanoseconds, half to even."""
    scaled = Decimal(value).scaleb(3, context=_WIDE)
    return int(scaled.quantize(Decimal(1), rounding=ROUND_HALF_EVEN, context=_WIDE))


def _union_ns(intervals: list[tuple[int, int]]) -> int:
    total, end = 0, None
    start = 0
    for s, e in sorted(intervals):
        if end is None or s > end:
            if end is not None:
                total += end - start
            start, end = s, e
        elif e > end:
            end = e
    return total + (end - start if end is not None else 0)


class Reference:
    """The numbers of one trace, from its raw events."""

    def __init__(self, path: Path) -> None:
        opener: Any = gzip.open if path.read_bytes()[:2] == b"\x1f\x8b" else open
        with opener(path, "rb") as fh:
            doc = json.load(fh, parse_float=Decimal)
        events = doc["traceEvents"] if isinstance(doc, dict) else doc
        self.x = [e for e in events if e.get("ph") == "X" and str(e.get("cat", "")).lower() not in SKIPPED_CATS]
        self.gpu = [(e["name"], e["cat"], _ns(e["ts"]), _ns(e["dur"])) for e in self.x if e.get("cat") in GPU_CATS]
        kernels = [g for g in self.gpu if g[1] == "kernel"]
        self.kernel_count = len(kernels)
        self.kernel_ns = sum(g[3] for g in kernels)
        self.per_name: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for name, _, _, dur in self.gpu:
            self.per_name[name][0] += 1
            self.per_name[name][1] += dur
        intervals = [(ts, ts + dur) for _, _, ts, dur in self.gpu]
        self.first_ns = min(s for s, _ in intervals)
        self.span_ns = max(e for _, e in intervals) - self.first_ns
        self.busy_ns = _union_ns(intervals)
        # NCCL kernels no record_param_comms with a collective name claims (by External id)
        claimed = {e["args"].get("External id") for e in self.x
                   if e.get("name") == "record_param_comms" and "Collective name" in e.get("args", {})}
        unclaimed = [e for e in self.x
                     if e.get("cat") == "kernel" and _NCCL.match(e["name"]) and e["args"].get("External id") not in claimed]
        self.nccl_unclaimed_ns = [_ns(e["dur"]) for e in unclaimed]
        self.nccl_calls = self._calls_by_range(unclaimed)
        steps = [e for e in self.x if re.fullmatch(r"ProfilerStep#\d+", str(e.get("name")))]
        self.steps = sorted(int(e["name"].split("#")[1]) for e in steps)

    def _calls_by_range(self, kernels: list[dict[str, Any]]) -> Counter[tuple[str, int]]:
        """(collective, total ns) of each call: the kernels launched inside one `nccl:<op>` range
        (innermost, on the launching thread) make one call; a kernel outside any, its own."""
        launches = {e["args"]["correlation"]: e for e in self.x
                    if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
        # each range as (start ns, end ns, event), converted once (not once per kernel: 8 million
        # Decimal conversions on the largest trace)
        ranges: dict[tuple[Any, Any], list[tuple[int, int, dict[str, Any]]]] = defaultdict(list)
        for e in self.x:
            if e.get("cat") == "user_annotation" and str(e["name"]).startswith("nccl:"):
                ranges[(e["pid"], e["tid"])].append((_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"]), e))
        calls: dict[Any, list[Any]] = {}
        for k in kernels:
            call = launches.get(k["args"].get("correlation"))
            at = _ns(call["ts"]) if call is not None else None
            mine = ranges.get((call["pid"], call["tid"]), []) if call is not None else []
            around = [(start, r) for start, end, r in mine if at is not None and start <= at <= end]
            if around:
                inner = max(around, key=lambda sr: sr[0])[1]
                name = canonical_collective(str(inner["name"]).removeprefix("nccl:"))
                calls.setdefault(id(inner), [name, 0])[1] += _ns(k["dur"])
            else:
                calls[id(k)] = [collective_of(k["name"])[0], _ns(k["dur"])]
        return Counter((name, ns) for name, ns in calls.values())


@pytest.fixture(scope="module", params=TRACES, ids=[p.name for p in TRACES])
def pair(request: pytest.FixtureRequest) -> tuple[Reference, Any, dict[str, Any]]:
    path: Path = request.param
    table = load_trace(path)
    return Reference(path), table, run_analyses(table, ["kernels", "temporal", "collectives"])


def test_there_are_traces_to_check() -> None:
    if not TRACES:
        pytest.skip(f"no traces in {[str(f) for f in FOLDERS]}")
    assert all(p.stat().st_size > 0 for p in TRACES)


@pytest.mark.slow
def test_every_kept_event_is_read_and_nothing_is_dropped(pair: tuple[Reference, Any, dict[str, Any]]) -> None:
    ref, table, _ = pair
    meta = table.meta[0]
    assert len(table) == len(ref.x) == meta.events_kept
    assert (meta.dropped, meta.coerced, meta.warnings) == ((), (), ())
    assert meta.unknown_categories == ()


def test_kernel_count_and_total_time_are_exact(pair: tuple[Reference, Any, dict[str, Any]]) -> None:
    ref, _, tables = pair
    ks = tables["kernels"]
    kernels = ks[ks["kind"] == "kernel"]
    assert int(kernels["count"].sum()) == ref.kernel_count > 0
    assert int(kernels["total_ns"].sum()) == ref.kernel_ns
    got = {row.name: (int(row.count), int(row.total_ns)) for row in ks.itertuples()}
    assert got == {name: (c, t) for name, (c, t) in ref.per_name.items()}


def test_gpu_span_and_busy_share_are_exact(pair: tuple[Reference, Any, dict[str, Any]]) -> None:
    ref, table, tables = pair
    whole = tables["temporal"]
    row = whole[whole["step"] == -1].iloc[0]
    assert int(row.span_ns) == ref.span_ns
    assert int(row.busy_ns) == ref.busy_ns
    assert int(row.idle_ns) == ref.span_ns - ref.busy_ns
    assert int(row.gpu_ops) == len(ref.gpu)
    assert row.idle_pct == pytest.approx(100 * (ref.span_ns - ref.busy_ns) / ref.span_ns, rel=1e-12)
    assert int(table["ts_ns"][table.gpu_mask()].min()) == ref.first_ns


def test_timestamps_equal_the_decimal_text(pair: tuple[Reference, Any, dict[str, Any]]) -> None:
    """Every GPU op's (name, ts, dur) as a multiset: not one nanosecond off anywhere."""
    ref, table, _ = pair
    gpu = table.gpu_mask()
    names = table.name_of(table["name_id"][gpu])
    got = Counter(zip(names, table["ts_ns"][gpu].tolist(), table["dur_ns"][gpu].tolist(), strict=True))
    assert got == Counter((name, ts, dur) for name, _, ts, dur in ref.gpu)


def test_collectives_from_kernels_are_exact(pair: tuple[Reference, Any, dict[str, Any]]) -> None:
    """The NCCL kernels no collective op with args claims make the kernel / NVTX-sourced calls: the
    total equals the sum over those kernels in the raw JSON, count and name per call as an
    independent reading of the `nccl:` ranges says; such rows are never sized."""
    ref, _, tables = pair
    coll = tables["collectives"]
    mine = coll[coll["source"].isin(["kernel", "nvtx"]) & (coll["rank"] >= 0)] if len(coll) else coll
    assert int(mine["total_ns"].sum()) == sum(ref.nccl_unclaimed_ns)
    # one call per `nccl:` range around the launches (else per kernel), named by the range
    assert int(mine["count"].sum()) == sum(ref.nccl_calls.values())
    got = {name: (int(g["count"].sum()), int(g["total_ns"].sum())) for name, g in mine.groupby("collective")}
    want: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for (name, ns), n in ref.nccl_calls.items():
        want[name][0] += n
        want[name][1] += ns * n
    assert got == {name: tuple(v) for name, v in want.items()}
    assert mine["message_bytes"].isna().all() if len(mine) else True
    if len(coll):
        assert "" not in set(coll["collective"])  # never a row without a name


def test_every_profiler_step_is_a_step(pair: tuple[Reference, Any, dict[str, Any]]) -> None:
    ref, _, tables = pair
    temporal = tables["temporal"]
    assert sorted(temporal.loc[temporal["step"] >= 0, "step"].tolist()) == ref.steps
