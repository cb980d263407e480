"""Build a large Kineto trace by tiling a real one, for the analyzer benchmark.

Each tile is a copy of every timed event of the source trace shifted in time by one trace span
plus a gap; correlation ids (and the `ac2g` flow ids that carry them), External ids, `fwdbwd`
flow ids, `Ev Idx` and `ProfilerStep#N` numbers are offset per tile so that every link stays
one-to-one exactly as in the source. Metadata events (ph M) and the profiler span appear once.

    python -m benchmarks.analyzer_tiled_trace SOURCE.json.gz OUT.json --events 1000000

The output is plain JSON (what `export_chrome_trace("x.json")` writes); it belongs in a temp
folder, never in git.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
from pathlib import Path
from typing import Any

import msgspec

GAP_US = 1000.0


def _read(path: Path) -> dict[str, Any]:
    opener = gzip.open if path.read_bytes()[:2] == b"\x1f\x8b" else open
    with opener(path, "rb") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


def _max_arg(events: list[dict[str, Any]], key: str) -> int:
    best = 0
    for e in events:
        v = (e.get("args") or {}).get(key)
        if isinstance(v, int) and v > best:
            best = v
    return best


def _step_number(name: str) -> int | None:
    if name.startswith("ProfilerStep#"):
        tail = name[len("ProfilerStep#") :]
        if tail.isdigit():
            return int(tail)
    return None


class _Plan(msgspec.Struct):
    period_us: float
    corr_off: int
    ext_off: int
    fwdbwd_off: int
    evidx_off: int
    step_off: int
    float_ts: bool


def _plan(events: list[dict[str, Any]]) -> _Plan:
    timed = [e for e in events if e.get("ph") != "M" and isinstance(e.get("ts"), (int, float))]
    t0 = min(e["ts"] for e in timed)
    t1 = max(e["ts"] + (e.get("dur") or 0) for e in timed)
    flow_ids = [e["id"] for e in events if e.get("cat") == "ac2g" and isinstance(e.get("id"), int)]
    fwdbwd = [e["id"] for e in events if e.get("cat") == "fwdbwd" and isinstance(e.get("id"), int)]
    steps = [n for n in (_step_number(str(e.get("name", ""))) for e in events) if n is not None]
    return _Plan(
        period_us=math.ceil(t1 - t0) + GAP_US,
        corr_off=max([_max_arg(events, "correlation"), *flow_ids, 0]) + 1,
        ext_off=_max_arg(events, "External id") + 1,
        fwdbwd_off=max([*fwdbwd, 0]) + 1,
        evidx_off=_max_arg(events, "Ev Idx") + 1,
        step_off=(max(steps) - min(steps) + 1) if steps else 0,
        float_ts=any(isinstance(e.get("ts"), float) for e in timed),
    )


def _shift(e: dict[str, Any], k: int, plan: _Plan) -> dict[str, Any]:
    out = dict(e)
    ts = e.get("ts")
    if isinstance(ts, (int, float)):
        shifted = ts + k * plan.period_us
        out["ts"] = round(shifted, 3) if plan.float_ts else int(shifted)
    if "id" in e and isinstance(e["id"], int):
        if e.get("cat") == "ac2g":
            out["id"] = e["id"] + k * plan.corr_off
        elif e.get("cat") == "fwdbwd":
            out["id"] = e["id"] + k * plan.fwdbwd_off
    args = e.get("args")
    if isinstance(args, dict):
        new = dict(args)
        if isinstance(args.get("correlation"), int) and args["correlation"] > 0:
            new["correlation"] = args["correlation"] + k * plan.corr_off
        if isinstance(args.get("External id"), int) and args["External id"] > 0:
            new["External id"] = args["External id"] + k * plan.ext_off
        if isinstance(args.get("Ev Idx"), int):
            new["Ev Idx"] = args["Ev Idx"] + k * plan.evidx_off
        out["args"] = new
    step = _step_number(str(e.get("name", "")))
    if step is not None:
        out["name"] = f"ProfilerStep#{step + k * plan.step_off}"
    return out


def tile_trace(source: Path, out: Path, min_events: int) -> int:
    """Write a tiled copy of `source` with at least `min_events` events; return the count."""
    data = _read(source)
    events: list[dict[str, Any]] = data.pop("traceEvents")
    once = [e for e in events if e.get("ph") == "M" or e.get("cat") == "Trace" or (e.get("ph") == "i" and e.get("s") == "g")]
    body = [e for e in events if not (e.get("ph") == "M" or e.get("cat") == "Trace" or (e.get("ph") == "i" and e.get("s") == "g"))]
    plan = _plan(events)
    tiles = max(1, math.ceil((min_events - len(once)) / len(body)))
    enc = msgspec.json.Encoder()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    count = 0
    with open(tmp, "wb") as fh:
        header = enc.encode(data)  # {...}
        fh.write(header[:-1] + (b"," if len(data) else b"") + b'"traceEvents":[\n')
        fh.write(b",\n".join(enc.encode(e) for e in once))
        count += len(once)
        for k in range(tiles):
            fh.write(b",\n")
            fh.write(b",\n".join(enc.encode(_shift(e, k, plan)) for e in body))
            count += len(body)
        fh.write(b"\n]}\n")
    tmp.replace(out)
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--events", type=int, default=1_000_000)
    args = parser.parse_args()
    n = tile_trace(args.source, args.out, args.events)
    print(f"{args.out}: {n} events, {args.out.stat().st_size / 1e6:.0f} MB")


if __name__ == "__main__":
    main()
