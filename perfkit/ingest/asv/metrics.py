"""The metrics of one asv benchmark: its type (benchmarks.json, else its name's prefix) gives the
metric's suffix, unit and direction; each combination of its params is one metric.

    time_*     (type time, timeraw)   NAME(P1, P2):time_s      s   lower
    mem_*      (type memory)          NAME(P1, P2):bytes       B   lower
    peakmem_*  (type peakmemory)      NAME(P1, P2):peak_bytes  B   lower
    track_*    (type track, or any other type)  NAME(P1, P2):value  its unit  lower

The parameter values are asv's own repr() strings in parameter order, as `asv compare` prints
them (`time_ops(100, 'float')`); a benchmark without params is `NAME:time_s`. A track benchmark
says no direction: it is stored lower-is-better, the rule `asv compare` and asv's regression
detection apply to every benchmark type.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

from perfkit.core.direction import LOWER
from perfkit.ingest.asv.results import AsvEntry
from perfkit.store.metrics import MetricRecord

_BY_TYPE = {"time": ("time_s", "s"), "timeraw": ("time_s", "s"), "memory": ("bytes", "B"),
            "peakmemory": ("peak_bytes", "B")}
_BY_PREFIX = (("timeraw_", "timeraw"), ("time_", "time"), ("peakmem_", "peakmemory"), ("mem_", "memory"),
              ("track_", "track"))


@dataclass(frozen=True)
class BenchmarkKind:
    type: str  # asv's benchmark type: time, memory, peakmemory, track, ...
    unit: str | None  # benchmarks.json's unit (a track benchmark's own)


@dataclass(frozen=True)
class EntryMetrics:
    metrics: tuple[MetricRecord, ...]
    failed: tuple[str, ...]  # metric names whose result is null
    skipped: tuple[str, ...]  # ... NaN


def kinds_from_benchmarks_json(data: Any) -> dict[str, BenchmarkKind]:
    """name -> type and unit, from benchmarks.json (its 'version' key and odd entries left out)."""
    if not isinstance(data, dict):
        return {}
    return {name: BenchmarkKind(str(b.get("type")), str(b["unit"]) if b.get("unit") else None)
            for name, b in data.items() if isinstance(b, dict) and b.get("type")}


def kind_of(name: str, kinds: dict[str, BenchmarkKind]) -> BenchmarkKind:
    """benchmarks.json's word, else asv's own rule: the prefix of the name's last part."""
    if name in kinds:
        return kinds[name]
    last = name.rsplit(".", 1)[-1]
    return BenchmarkKind(next((t for prefix, t in _BY_PREFIX if last.startswith(prefix)), "track"), None)


def entry_metrics(entry: AsvEntry, kind: BenchmarkKind) -> EntryMetrics:
    suffix, unit = _BY_TYPE.get(kind.type, ("value", kind.unit or "unit"))
    combos = list(itertools.product(*entry.params))
    metrics: list[MetricRecord] = []
    failed: list[str] = []
    skipped: list[str] = []
    for combo, value, samples in zip(combos, entry.results, entry.samples, strict=True):
        name = f"{entry.name}({', '.join(combo)}):{suffix}" if combo else f"{entry.name}:{suffix}"
        if value is None:
            failed.append(name)
        elif math.isnan(value):
            skipped.append(name)
        else:
            metrics.append(MetricRecord(name, None, unit, LOWER, samples or (value,)))
    return EntryMetrics(tuple(metrics), tuple(failed), tuple(skipped))
