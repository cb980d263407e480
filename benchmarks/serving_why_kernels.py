"""Does the kernel-level why name the slowed op class first, and nothing in unchanged pairs?

Two modes:

- `--mode serve` (the issue's check; needs `perfkit serve --slow-op` / `--profile-dir` and
  `serve-bench --profile`): per pair, three `perfkit serve --model tiny` processes, each measured
  once by `perfkit serve-bench --profile` into a run directory: a baseline, a candidate with
  `--slow-op CLASS=K` (the changed pair) and a second baseline (the unchanged pair); then
  `perfkit compare BASE CAND --format json` and the first class of the decode steps' kernel level
  is read from `serving_why[].kernels`. A run that fails counts as a miss in both.
- `--mode traces` (runs anywhere): the same statistics on traces of perfkit's decoder written in
  process (tests/data/traces/perfkit/make_traces.py; the class made K x slower by running it K times).

Pass: the slowed class is named first (state moved) in >= 19 of 20 changed pairs, and no class
moved in >= 19 of 20 unchanged pairs.

    python benchmarks/serving_why_kernels.py --mode traces --pairs 20
    python benchmarks/serving_why_kernels.py --mode serve --pairs 20 --slow-op attention=3
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "data" / "traces" / "perfkit"))
if str(ROOT) not in sys.path:  # benchmarks.gpu_validate_serve when run as a script
    sys.path.insert(0, str(ROOT))


def _first(kernels: dict[str, Any]) -> tuple[str, str]:
    """(first class, its state) of the decode steps, ('', '') when there are none."""
    for s in kernels.get("step_types", []):
        if s["kind"] == "decode" and s["classes"]:
            return s["classes"][0]["name"], s["classes"][0]["state"]
    return "", ""


def _traces_pair(tmp: Path, i: int, slow: dict[str, int]) -> dict[str, Any]:
    from make_traces import profile_decoder  # type: ignore[import-not-found]

    from perfkit.comparison.server_traces import kernel_why

    # one process profiles both sides: alternate which goes first, so warm-up (caches, allocator,
    # clocks) does not read as a change of every class in the unchanged pairs
    if i % 2:
        c = profile_decoder(tmp / f"c{i}.json.gz", steps=16, slow=slow)
        b = profile_decoder(tmp / f"b{i}.json.gz", steps=16)
    else:
        b = profile_decoder(tmp / f"b{i}.json.gz", steps=16)
        c = profile_decoder(tmp / f"c{i}.json.gz", steps=16, slow=slow)
    return kernel_why(f"pair{i}", [str(b)], [str(c)]).to_json()


def _serve_run(tmp: Path, tag: str, slow: str | None, load: list[str]) -> Path:
    from benchmarks.gpu_validate_serve import launch

    cmd = [sys.executable, "-m", "perfkit", "serve", "--model", "tiny", "--port", "0",
           "--profile-dir", str(tmp / f"traces-{tag}")] + (["--slow-op", slow] if slow else [])
    server, url = launch(cmd, tmp / f"serve-{tag}.log", 120.0)
    try:
        out = tmp / f"runs-{tag}"
        subprocess.run([sys.executable, "-m", "perfkit", "serve-bench", url, *load,
                        "--no-store", "--out", str(out)], check=True, timeout=600, capture_output=True, text=True)
        return next(out.glob("*/run.json")).parent
    finally:
        server.terminate()
        server.wait(timeout=30)


def _kernels(base: Path, cand: Path) -> dict[str, Any]:
    p = subprocess.run([sys.executable, "-m", "perfkit", "compare", str(base), str(cand), "--format", "json"],
                       capture_output=True, text=True, timeout=600)
    why = json.loads(p.stdout).get("serving_why", [])
    return next((w["kernels"] for w in why if "kernels" in w), {})


def _serve_pairs(tmp: Path, i: int, slow: str, load: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(changed, unchanged) kernel whys of pair i: one baseline server's run against a slowed
    server's and against a second baseline server's (three server processes, one run each)."""
    base = _serve_run(tmp, f"b{i}", None, load)
    return _kernels(base, _serve_run(tmp, f"c{i}", slow, load)), _kernels(base, _serve_run(tmp, f"s{i}", None, load))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=("traces", "serve"), default="traces")
    ap.add_argument("--pairs", type=int, default=20)
    ap.add_argument("--slow-op", default="attention=3")
    ap.add_argument("--load", default="--concurrency 4 --requests 24 --input-len 32 --output-len 32 --profile 16",
                    help="serve-bench options of each side (--mode serve)")
    ap.add_argument("--smoke", action="store_true", help="one pair of generated traces; checks the script, judges nothing")
    a = ap.parse_args()
    if a.smoke:
        a.mode, a.pairs = "traces", 1
    cls, k = a.slow_op.split("=")
    want = f"perfkit_{cls}"
    hits = clean = 0
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if a.mode == "traces":  # warm-up: the first profile of a process runs slower
            _traces_pair(tmp, -2, {})
        for i in range(a.pairs):
            if a.mode == "traces":
                changed, same = _traces_pair(tmp, i, {cls: int(k)}), _traces_pair(tmp, 100 + i, {})
            else:
                try:
                    changed, same = _serve_pairs(tmp, i, a.slow_op, a.load.split())
                except subprocess.CalledProcessError as exc:  # a run that failed counts against both
                    tail = " | ".join(str(exc.stderr or "").strip().splitlines()[-3:])
                    print(f"pair {i}: a run failed (exit {exc.returncode}): {tail}", flush=True)
                    continue
            first, state = _first(changed)
            hits += first == want and state == "moved"
            moved = [c["name"] for s in same.get("step_types", []) for c in s["classes"] if c["state"] == "moved"]
            clean += not moved
            print(f"pair {i}: changed -> {first} ({state}); unchanged -> moved {moved or 'nothing'}", flush=True)
    print(f"slowed class named first: {hits}/{a.pairs}; unchanged pairs with nothing moved: {clean}/{a.pairs}")
    ok = hits >= a.pairs * 19 / 20 and clean >= a.pairs * 19 / 20
    print("PASS" if ok else "FAIL")
    return 0 if ok or a.smoke else 1


if __name__ == "__main__":
    sys.exit(main())
