"""perfkit's serve-bench, AIPerf and GuideLLM in the same run, against the same synthetic server.

Run:  PYTHONPATH=. OMP_NUM_THREADS=1 python -m benchmarks.serving_peers \\
          --aiperf /work/peers-venv/aiperf/bin/aiperf --guidellm /work/peers-venv/guidellm/bin/guidellm \\
          [--concurrency 1,8,32,64] [--out benchmarks/results/serving_peers-vm]
      ... --smoke   (one case, one small stage; a peer not given is skipped, with the reason)

The peers come from --aiperf / --guidellm (or $PERFKIT_AIPERF / $PERFKIT_GUIDELLM): executables
installed in their own virtual environments, never perfkit's. A peer that is absent is skipped
and says why.

Per case, one `perfkit serve --synthetic --port 0` (benchmarks.gpu_validate_serve.launch) with a
known TTFT, ITL and output length, its tokens words of a local tokenizer folder written here
(tests/helpers/tiny_tokenizer.py: a byte-level BPE, with the tokenizer_config.json transformers
needs), so the text re-tokenizes to exactly the tokens sent and every tool counts from the same
tokenizer; cases: one token per chunk with usage, and 4 tokens per chunk with no usage (a tool
must count from the text). Each tool runs each stage (a fixed concurrency, closed loop) in a
process of its own; the server's /metrics is read before and after, so each stage also has the
server's own view: its mean TTFT (arrival -> first token written), mean gap between tokens and
the tokens it wrote. The truth: TTFT = --ttft-ms, TPOT = --itl-ms, output = --output-len, as long
as the server kept its deadlines ("server exact": its own mean TTFT within 10%, its mean gap within
2%). The server shares the machine's cores with the tool, so a tool that takes the CPU makes it
late; each stage says how far the server kept pace. What a tool adds to TTFT: its TTFT p50 minus
the server's mean TTFT (a burst of arrivals waits in the server's intake too, so it is not all
the tool's). A tool's client capacity: the load (in output tokens per second at the server's own
pace) up to which its TPOT p50 stays within 10% of the server's mean gap, its own error.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # benchmarks.* when run as a script
    sys.path.insert(0, str(ROOT))

from benchmarks.serving_peers_tools import TOOLS, StageLoad, run_peer, run_perfkit  # noqa: E402

DISTORTED = 0.10  # a p50 this far off the truth is the tool's own error
SERVER_TTFT_TOL = 0.10
SERVER_ITL_TOL = 0.02


@dataclass(frozen=True)
class Case:
    name: str
    tokens_per_chunk: int
    usage: bool


CASES = {"1-per-chunk": Case("1-per-chunk", 1, True), "4-per-chunk-no-usage": Case("4-per-chunk-no-usage", 4, False)}


def tokenizer_folder(folder: Path) -> Path:
    """The tiny BPE tokenizer (tests/helpers) with the tokenizer_config.json transformers needs to load it."""
    sys.path.insert(0, str(ROOT / "tests" / "helpers"))
    from tiny_tokenizer import tiny_tokenizer  # type: ignore[import-not-found]

    tiny_tokenizer(folder)
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]", "model_max_length": 1_000_000}))
    return folder


def server_view(url: str) -> dict[str, float]:
    """The synthetic server's counters: TTFT and ITL histogram sums and counts, tokens, requests."""
    with urllib.request.urlopen(url + "/metrics", timeout=10) as resp:
        text = resp.read().decode()
    want = {"time_to_first_token_seconds_sum": "ttft_sum", "time_to_first_token_seconds_count": "ttft_n",
            "inter_token_latency_seconds_sum": "itl_sum", "inter_token_latency_seconds_count": "itl_n",
            "generation_tokens_total": "tokens", "request_success_total": "requests"}
    out: dict[str, float] = {}
    for line in text.splitlines():
        name = line.split("{", 1)[0].removeprefix("perfkit:")
        if name in want:
            out[want[name]] = float(line.rsplit(" ", 1)[1])
    return out


def server_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float | None]:
    d = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after}
    return {"ttft_mean_s": d["ttft_sum"] / d["ttft_n"] if d.get("ttft_n") else None,
            "itl_mean_s": d["itl_sum"] / d["itl_n"] if d.get("itl_n") else None,
            "tokens_per_request": d["tokens"] / d["requests"] if d.get("requests") else None}


def _err(value: float | None, truth: float) -> float | None:
    return None if value is None else value / truth - 1.0


def judge(row: dict[str, Any], a: argparse.Namespace) -> dict[str, Any]:
    """A stage's errors: the tool's against the truth (the configured TTFT, ITL, output length) and
    against the server's own view of the same requests (its mean TTFT and mean gap). Distorted (the
    tool's own error): its TPOT p50 more than 10% off the server's mean gap. Server exact: the
    server's mean gap within 2% of the ITL and its mean TTFT within 10% of the TTFT; server kept
    pace: its mean gap within 10% of the ITL (a tool that takes the CPU slows a server beside it)."""
    ttft_s, itl_s = a.ttft_ms / 1e3, a.itl_ms / 1e3
    s_ttft, s_itl = row["server_ttft_mean_s"], row["server_itl_mean_s"]
    exact = (s_ttft is not None and s_itl is not None and abs(s_ttft / ttft_s - 1.0) <= SERVER_TTFT_TOL
             and abs(s_itl / itl_s - 1.0) <= SERVER_ITL_TOL)
    ttft, tpot = row["ttft_p50_s"], row["tpot_p50_s"]
    vs_server = None if tpot is None or not s_itl else tpot / s_itl - 1.0
    return {"ttft_err": _err(ttft, ttft_s), "tpot_err": _err(tpot, itl_s),
            "tokens_err": _err(row["output_tokens_mean"], a.output_len),
            "ttft_added_s": None if ttft is None or s_ttft is None else ttft - s_ttft,
            "tpot_vs_server": vs_server, "server_exact": exact,
            "server_kept_pace": s_itl is not None and abs(s_itl / itl_s - 1.0) <= DISTORTED,
            "distorted": row["error"] is None and (vs_server is None or abs(vs_server) > DISTORTED)}


def run_case(case: Case, tools: dict[str, str], a: argparse.Namespace, tmp: Path, tok: Path) -> list[dict[str, Any]]:
    from benchmarks.gpu_validate_serve import launch

    cmd = [sys.executable, "-m", "perfkit", "serve", "--synthetic", "--port", "0", "--ttft-ms", str(a.ttft_ms),
           "--itl-ms", str(a.itl_ms), "--output-tokens", str(a.output_len), "--tokenizer", str(tok),
           "--tokens-per-chunk", str(case.tokens_per_chunk)] + ([] if case.usage else ["--no-usage"])
    server, url = launch(cmd, tmp / f"serve-{case.name}.log", 120.0)
    rows = []
    try:
        for c in a.concurrency:
            load = StageLoad(url, "perfkit-synthetic", c, max(a.min_requests, a.requests_per_slot * c), a.input_len,
                             a.output_len, tok, case.usage)
            for tool, exe in tools.items():
                work = tmp / case.name / f"c{c}" / tool
                work.mkdir(parents=True, exist_ok=True)
                before, load_before = server_view(url), os.getloadavg()[0]
                stage = (run_perfkit(load, work, a.timeout_s) if tool == "perfkit"
                         else run_peer(tool, exe, load, work, a.timeout_s))
                server_side = server_delta(before, server_view(url))
                row = {"case": case.name, "tool": tool, "concurrency": c, "requests": load.requests,
                       "load_1min": max(load_before, os.getloadavg()[0]),
                       **asdict(stage), **{f"server_{k}": v for k, v in server_side.items()}}
                row.update(judge(row, a))
                rows.append(row)
                print(line(row), flush=True)
    finally:
        server.terminate()
        server.wait(timeout=30)
    return rows


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:+.1f}%"


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1e3:.2f}"


def line(r: dict[str, Any]) -> str:
    if r["error"]:
        return f"{r['case']} {r['tool']} c={r['concurrency']}: FAILED {r['error']}"
    return (f"{r['case']} {r['tool']} c={r['concurrency']}: ttft_p50 {_ms(r['ttft_p50_s'])} ms ({_pct(r['ttft_err'])}), "
            f"tpot_p50 {_ms(r['tpot_p50_s'])} ms ({_pct(r['tpot_err'])}), tokens {r['output_tokens_mean']} "
            f"({_pct(r['tokens_err'])}); server exact {r['server_exact']}; {r['wall_s']:.0f} s")


def table(rows: list[dict[str, Any]], a: argparse.Namespace) -> str:
    out = ["| case | tool | concurrency | served tok/s | requests ok | TTFT p50 ms (err) | client adds ms "
           "| TPOT p50 ms (err; vs server) | output tokens (err) | server TTFT / ITL ms | server exact | load | tool wall s |",
           "|:--|:--|---:|---:|---:|--:|--:|--:|--:|--:|:--|--:|--:|"]
    for r in rows:
        if r["error"]:
            out.append(f"| {r['case']} | {r['tool']} | {r['concurrency']} | {served_tok_per_s(r, a):.0f} | failed: "
                       f"{r['error'][:160].replace('|', '/')} | | | | | | | {r['load_1min']:.1f} | {r['wall_s']:.0f} |")
            continue
        toks = "-" if r["output_tokens_mean"] is None else f"{r['output_tokens_mean']:.1f}"
        out.append(f"| {r['case']} | {r['tool']} | {r['concurrency']} | {served_tok_per_s(r, a):.0f} | "
                   f"{r['completed']} of {r['requests']} | {_ms(r['ttft_p50_s'])} ({_pct(r['ttft_err'])}) | "
                   f"{_ms(r['ttft_added_s'])} | {_ms(r['tpot_p50_s'])} ({_pct(r['tpot_err'])}; {_pct(r['tpot_vs_server'])}) | "
                   f"{toks} ({_pct(r['tokens_err'])}) | "
                   f"{_ms(r['server_ttft_mean_s'])} / {_ms(r['server_itl_mean_s'])} | {r['server_exact']} | "
                   f"{r['load_1min']:.1f} | {r['wall_s']:.0f} |")
    return "\n".join(out)


def served_tok_per_s(r: dict[str, Any], a: argparse.Namespace) -> float:
    """Output tokens per second the stage's load asked of the server, at the server's own pace
    (its mean TTFT and gap; the configured ones where it said nothing)."""
    ttft = r["server_ttft_mean_s"] or a.ttft_ms / 1e3
    itl = r["server_itl_mean_s"] or a.itl_ms / 1e3
    return float(r["concurrency"] * a.output_len / (ttft + (a.output_len - 1) * itl))


def _up_to(rows: list[dict[str, Any]], key: str, good: bool, a: argparse.Namespace) -> str:
    """'X tok/s (concurrency c)' of the last stage before the first whose `key` is not `good`, and that stage."""
    best = None
    for r in rows:
        if r["error"] or r[key] != good:
            stop = "failed" if r["error"] else "missed"
            where = f", {stop} at concurrency {r['concurrency']} ({served_tok_per_s(r, a):.0f} tok/s)"
            break
        best = r
    else:
        where = ", the highest load tried"
    up = f"up to {served_tok_per_s(best, a):.0f} tok/s (concurrency {best['concurrency']})" if best else "at no load"
    return up + where


def capacity(rows: list[dict[str, Any]], a: argparse.Namespace) -> list[str]:
    """Per case and tool: how far its TPOT stayed within 10% of the server's own gaps, and how far
    the server beside it kept pace."""
    out = []
    for case in dict.fromkeys(r["case"] for r in rows):
        for tool in dict.fromkeys(r["tool"] for r in rows):
            mine = sorted((r for r in rows if r["case"] == case and r["tool"] == tool), key=lambda r: r["concurrency"])
            if mine:
                out.append(f"- {case}, {tool}: TPOT within 10% of the server's gaps {_up_to(mine, 'distorted', False, a)}"
                           f"; the server kept pace {_up_to(mine, 'server_kept_pace', True, a)}")
    return out


def report(rows: list[dict[str, Any]], a: argparse.Namespace) -> str:
    head = ("Client capacity (served tok/s: the load at the server's own pace). A tool's TPOT p50 within 10% of "
            "the server's mean gap (its own error), and the server's mean gap within 10% of the ITL while the tool "
            "ran beside it on the same cores:")
    return table(rows, a) + "\n\n" + head + "\n" + "\n".join(capacity(rows, a))


def peers(a: argparse.Namespace) -> dict[str, str]:
    tools = {"perfkit": sys.executable}
    for tool in TOOLS[1:]:
        exe = getattr(a, tool) or os.environ.get(f"PERFKIT_{tool.upper()}")
        path = shutil.which(exe) if exe else None
        if path is None:
            print(f"{tool} skipped: {'not found: ' + exe if exe else f'not given (--{tool} PATH or $PERFKIT_{tool.upper()})'}")
        else:
            tools[tool] = path
    return tools


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--aiperf", help="the aiperf executable (default $PERFKIT_AIPERF)")
    ap.add_argument("--guidellm", help="the guidellm executable (default $PERFKIT_GUIDELLM)")
    ap.add_argument("--concurrency", default="1,8,32,64", type=lambda s: [int(x) for x in s.split(",")])
    ap.add_argument("--cases", default=",".join(CASES), type=lambda s: s.split(","))
    ap.add_argument("--tools", default=",".join(TOOLS), type=lambda s: s.split(","))
    ap.add_argument("--ttft-ms", type=float, default=50.0)
    ap.add_argument("--itl-ms", type=float, default=10.0)
    ap.add_argument("--input-len", type=int, default=32)
    ap.add_argument("--output-len", type=int, default=65, help="1 + a multiple of 4: whole chunks")
    ap.add_argument("--requests-per-slot", type=int, default=2)
    ap.add_argument("--min-requests", type=int, default=16)
    ap.add_argument("--timeout-s", type=float, default=600.0, help="per tool and stage")
    ap.add_argument("--out", type=Path, help="write FILE.md and FILE.json")
    ap.add_argument("--smoke", action="store_true", help="one case, concurrency 1, 4 requests")
    ap.add_argument("--table-from", type=Path, metavar="FILE.json",
                    help="judge and print the stages of an earlier --out FILE.json again (same truth options)")
    a = ap.parse_args(argv)
    if a.table_from:
        print(report([{**r, **judge(r, a)} for r in json.loads(a.table_from.read_text())], a))
        return 0
    if a.smoke:
        a.cases, a.concurrency, a.min_requests, a.output_len = ["4-per-chunk-no-usage"], [1], 4, 9
    tools = {t: exe for t, exe in peers(a).items() if t in a.tools}
    t0 = time.monotonic()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as d:
        tok = tokenizer_folder(Path(d) / "tokenizer")
        for name in a.cases:
            rows += run_case(CASES[name], tools, a, Path(d), tok)
    text = report(rows, a)
    print(text)
    if a.out:
        head = (f"`python -m benchmarks.serving_peers {' '.join(sys.argv[1:] if argv is None else argv)}` on "
                f"{os.uname().nodename}, {os.cpu_count()} cores, {time.monotonic() - t0:.0f} s; truth: TTFT "
                f"{a.ttft_ms:g} ms, ITL {a.itl_ms:g} ms, {a.output_len} output tokens.\n\n")
        a.out.with_suffix(".md").write_text(head + text + "\n")
        a.out.with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
