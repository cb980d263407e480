"""Is the client-bound flag right? Stated error bounds against the server's own stamps.

One `perfkit serve --synthetic` (known TTFT and ITL) in another process; stages at several
concurrencies, each with an idle client and with a CPU-burning thread in the client (pure Python:
it holds the GIL between switch intervals, as a busy client does). Per stage: the stated bound of
each number (measurements/client_error.py), its actual error (the client's number minus the same
number from the server's stamps, measurements/served_records.py), and the verdict
(measurements/client_bound.py). Two checks:
- good stages: of the stages whose numbers are all within 1 ms of the stamps, how many were flagged
  (target <= 1 in 10);
- the bound is valid: every stage with an actual error above its stated bound is flagged.

    python -m benchmarks.serving_client_error [--repeats 3] [--concurrency 1 4 16] [--out FILE.md]
    python -m benchmarks.serving_client_error --smoke
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import threading
from dataclasses import dataclass, replace
from pathlib import Path

from perfkit.workloads.serving.client.send import ClientOptions, Prompt
from perfkit.workloads.serving.client.stage import StagePlan, StageResult, run_stage
from perfkit.workloads.serving.measurements.client_bound import (
    FLOOR_S,
    MATERIAL_SHARE,
    p99,
    stage_verdict,
)
from perfkit.workloads.serving.measurements.client_error import BOUNDED
from perfkit.workloads.serving.measurements.latency import (
    e2e_s,
    per_request,
    pooled,
    quantile,
    token_itls_s,
    tpot_s,
    ttft_s,
)
from perfkit.workloads.serving.measurements.served_records import as_served
from perfkit.workloads.serving.records import RequestRecord

GOOD_S = 1e-3  # "within 1 ms of the server's stamps"
_SAMPLES = {"ttft": lambda rs: per_request(rs, ttft_s), "tpot": lambda rs: per_request(rs, tpot_s),
            "token_itl": lambda rs: pooled(rs, token_itls_s), "e2e": lambda rs: per_request(rs, e2e_s)}
_SHORT = {"ttft_p50_s": "TTFT50", "ttft_p99_s": "TTFT99", "tpot_p50_s": "TPOT50", "token_itl_p50_s": "ITL50",
          "token_itl_p99_s": "ITL99", "e2e_p50_s": "E2E50"}


@dataclass(frozen=True)
class Stage:
    concurrency: int
    burn: bool
    bound_s: dict[str, float]
    actual_s: dict[str, float]  # client number - the number from the server's stamps
    client_s: dict[str, float]  # ... with the client's own send times: the error of the client's reads
    intake_p50_s: float  # server received_s - client sent_s: outside the client (see the module doc)
    flagged: bool
    lag_p99_s: float

    @property
    def good(self) -> bool:
        return all(abs(a) <= GOOD_S for a in self.actual_s.values())

    @property
    def exceeded(self) -> list[str]:
        return [k for k, a in self.client_s.items() if abs(a) > self.bound_s.get(k, 0.0)]


def number(records: list[RequestRecord], key: str) -> float | None:
    values = _SAMPLES[key.rsplit("_", 2)[0]](records)
    return quantile(values, BOUNDED[key]) if values else None


def _burn(stop: threading.Event) -> None:
    x = 0
    while not stop.is_set():
        for _ in range(10_000):  # pure Python: holds the GIL between switch intervals
            x += 1


def run_one(url: str, concurrency: int, requests: int, output: int, burn: bool) -> StageResult:
    client = ClientOptions(base_url=url, model="m")
    plan = StagePlan(prompt_for=lambda i: Prompt("a b c d", 4, output + (i * 7) % 9), concurrency=concurrency,
                     requests=requests, warmup=concurrency)
    stop = threading.Event()
    burner = threading.Thread(target=_burn, args=(stop,), daemon=True)
    if burn:
        burner.start()
    try:
        return asyncio.run(run_stage(client, plan))
    finally:
        stop.set()
        if burn:
            burner.join()


def judge(result: StageResult, concurrency: int, burn: bool) -> Stage:
    ok = [r for r in result.records if r.ok]
    served = as_served(ok, result.t0_monotonic_s)
    by_index = {r.index: r for r in ok}
    read_side = [replace(r, sent_s=by_index[r.index].sent_s) for r in served]
    intake = [s.sent_s - sent for s in served if s.sent_s is not None and (sent := by_index[s.index].sent_s) is not None]
    bounds, reason = stage_verdict(result.records, result.lag_s, result.lateness_s, result.mean_interarrival_s)
    actual, client = {}, {}
    for b in bounds:
        truth, truth_read = number(served, b.metric), number(read_side, b.metric)
        if truth is not None and truth_read is not None:
            actual[b.metric], client[b.metric] = b.value_s - truth, b.value_s - truth_read
    return Stage(concurrency, burn, {b.metric: b.bound_s for b in bounds}, actual, client, statistics.median(intake),
                 reason is not None, p99(result.lag_s) or 0.0)


def start_server(ttft_ms: float, itl_ms: float) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "perfkit", "serve", "--synthetic", "--ttft-ms", str(ttft_ms),
                             "--itl-ms", str(itl_ms), "--port", "0"], env=env, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline() if proc.stdout else ""
    if "listening on " not in line:
        proc.kill()
        raise RuntimeError(f"perfkit serve did not start: {line!r}")
    return proc, line.split("listening on ", 1)[1].split()[0]


def _ms(x: float) -> str:
    return f"{x * 1e3:+.2f}"


def table(stages: list[Stage]) -> list[str]:
    keys = list(BOUNDED)
    lines = ["| conc | client | lag p99 ms | " + " | ".join(f"{_SHORT[k]} bound / client / stamps ms" for k in keys)
             + " | intake p50 ms | flagged | bound held |",
             "|---:|---|---:|" + "---|" * len(keys) + "---:|---|---|"]
    for s in stages:
        cells = [f"{s.bound_s[k] * 1e3:.2f} / {_ms(s.client_s[k])} / {_ms(s.actual_s[k])}" if k in s.actual_s else "-"
                 for k in keys]
        held = "yes" if not s.exceeded else "no: " + ", ".join(_SHORT[k] for k in s.exceeded)
        lines.append(f"| {s.concurrency} | {'burn' if s.burn else 'idle'} | {s.lag_p99_s * 1e3:.2f} | "
                     + " | ".join(cells) + f" | {s.intake_p50_s * 1e3:.2f} | {'yes' if s.flagged else 'no'} | {held} |")
    return lines


def summary(stages: list[Stage]) -> list[str]:
    good = [s for s in stages if s.good]
    exceeded = [s for s in stages if s.exceeded]
    missed = [s for s in exceeded if not s.flagged]
    return [f"rule: flagged when a bound > {MATERIAL_SHARE:.0%} of its number, > {FLOOR_S * 1e3:g} ms and > its sampling "
            "uncertainty",
            f"good stages (every number within {GOOD_S * 1e3:g} ms of the stamps): {len(good)}, flagged "
            f"{sum(s.flagged for s in good)} (target <= 1 in 10)",
            f"stages whose actual error exceeded the stated bound: {len(exceeded)}, not flagged {len(missed)} (target 0)",
            f"burning stages flagged: {sum(s.flagged for s in stages if s.burn)} of {sum(s.burn for s in stages)}"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--smoke", action="store_true", help="one concurrency, one repeat, few requests")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--ttft-ms", type=float, default=40.0)
    ap.add_argument("--itl-ms", type=float, default=20.0)
    ap.add_argument("--out", type=Path, help="write the table as Markdown here")
    args = ap.parse_args(argv)
    concurrencies, repeats = ([2], 1) if args.smoke else (args.concurrency, args.repeats)
    proc, url = start_server(args.ttft_ms, args.itl_ms)
    stages = []
    try:
        for _ in range(repeats):
            for c in concurrencies:
                for burn in (False, True):
                    requests = 4 if args.smoke else max(8 * c, 32)
                    stages.append(judge(run_one(url, c, requests, 8 if args.smoke else 16, burn), c, burn))
                    print(f"stage: concurrency {c}, {'burn' if burn else 'idle'}: flagged {stages[-1].flagged}",
                          flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    lines = [f"# serving_client_error: synthetic server TTFT {args.ttft_ms:g} ms, ITL {args.itl_ms:g} ms; "
             f"{os.cpu_count()} cores", "", *table(stages), "", *summary(stages)]
    print("\n".join(lines))
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
