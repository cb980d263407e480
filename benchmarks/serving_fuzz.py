"""Fuzz the serving client against a scripted server: random chunk shapes, token counts, numbers,
SSE framing and status codes, thousands of streams, each checked against what was streamed.

Each request's prompt names its stream; the server draws the stream from that name, and so does
the check (`stream_for`): what it sent, whether an honest client must measure it (`ok`), must
refuse it (`fail`: a count past max_tokens, a final usage that lies, an HTTP error, a cut
stream, a redirect to another server) or may do either (`any`: numbers the boundary drops), and
the token count a client that believes only what was streamed finds. A stream is BAD when the
client raised (a stage lost), kept a count that contradicts the stream, failed an honest stream,
measured a stream it must refuse, or its records cannot be written (NaN / Infinity).

    python -m benchmarks.serving_fuzz                 # 10,000 streams -> results/serving_fuzz-vm.md
    python -m benchmarks.serving_fuzz --streams 200   # smoke: prints, writes nothing
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfkit.workloads.serving.client.request_file import read_requests, write_requests
from perfkit.workloads.serving.client.send import ClientOptions, Prompt
from perfkit.workloads.serving.client.stage import StagePlan, run_stage
from perfkit.workloads.serving.records import RequestRecord
from tests.helpers.scripted_server import plain, scripted_server

REPO = Path(__file__).resolve().parents[1]
MAX_TOKENS = 8
PER_STAGE = 250
CONCURRENCY = 8
LIES = ("usage_past_max", "usage_huge", "final_usage_lies", "logprobs_huge", "usage_stuck")
DROPPED = ("nan_stamp", "inf_usage", "string_usage", "huge_prompt_count")
BROKEN = ("http_500", "http_429", "cut_before_done", "cut_mid_event", "redirect_away", "not_json", "empty")
KINDS = ("honest",) * 6 + LIES + DROPPED + BROKEN


@dataclass
class Stream:
    pieces: list[bytes]  # what the server writes, in these pieces
    expect: str  # ok | fail | any
    tokens: int  # the count a client believing only the stream finds (ok / any)
    kind: str


@dataclass
class Tally:
    streams: int = 0
    bad: list[str] = field(default_factory=list)
    by_kind: Counter[str] = field(default_factory=Counter)
    ok_by_kind: Counter[str] = field(default_factory=Counter)
    stages: int = 0


def _frame(events: list[bytes], rng: random.Random) -> bytes:
    eol = rng.choice([b"\n", b"\r\n", b"\r"])
    out = b""
    for e in events:
        if rng.random() < 0.1:
            out += b": keep-alive" + eol
        if rng.random() < 0.1:
            out += b"event: message" + eol + b"id: 7" + eol
        out += (b"data: " if rng.random() < 0.8 else b"data:") + e + eol + eol
    return out


def _split(body: bytes, rng: random.Random) -> list[bytes]:
    if rng.random() < 0.5 or len(body) < 4:
        return [body]
    cuts = sorted(rng.sample(range(1, len(body)), min(len(body) - 1, rng.randint(1, 6))))
    return [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]


def _j(obj: Any) -> bytes:
    return json.dumps(obj).encode()


def stream_for(name: str) -> Stream:
    """The stream the server sends for prompt `name` (deterministic)."""
    rng = random.Random(name)
    kind = rng.choice(KINDS)
    n = rng.randint(1, MAX_TOKENS)
    source = rng.choice(["usage", "logprobs", "ids", "text"])
    per = [1] * n if source in ("usage", "text") else [rng.randint(1, 2) for _ in range(n)]
    while sum(per) > MAX_TOKENS:
        per.pop()
    events: list[bytes] = []
    total = 0
    for k in per:
        total += k
        choice: dict[str, Any] = {"index": 0, "text": "w" * k}
        chunk: dict[str, Any] = {"choices": [choice]}
        if source == "usage":
            chunk["usage"] = {"prompt_tokens": 4, "completion_tokens": total}
        elif source == "logprobs":
            choice["logprobs"] = {"tokens": ["w"] * k}
        elif source == "ids":
            choice["token_ids"] = list(range(k))
        chunk["perfkit"] = {"sent_s": time.monotonic(), "tokens": k}
        events.append(_j(chunk))
    expect, tokens = "ok", total if source != "text" else len(per)
    if kind == "usage_past_max":
        events.append(_j({"choices": [{"text": "x"}], "usage": {"completion_tokens": MAX_TOKENS + 1}}))
        expect = "fail"
    elif kind == "usage_huge":
        events.insert(0, _j({"choices": [{"text": "x"}], "usage": {"completion_tokens": 10 ** rng.choice([7, 9, 30])}}))
        expect = "fail"
    elif kind == "final_usage_lies":
        events.append(_j({"choices": [], "usage": {"completion_tokens": rng.choice([10**6, MAX_TOKENS + 5])}}))
        expect = "fail"
    elif kind == "logprobs_huge":
        events.append(_j({"choices": [{"text": "x", "logprobs": {"tokens": [1] * 400_000}}]}))
        expect = "fail"
    elif kind == "usage_stuck":
        events = [_j({"choices": [{"text": "x"}], "usage": {"completion_tokens": 1}}) for _ in range(MAX_TOKENS)]
        expect = "fail"
    elif kind == "nan_stamp":
        events = [e.replace(b'"sent_s": ', b'"sent_s": NaN, "x": ') for e in events]
        expect = "any"
    elif kind == "inf_usage":
        events.append(b'{"choices": [], "usage": {"completion_tokens": Infinity, "prompt_tokens": -Infinity}}')
        expect = "any"
    elif kind == "string_usage":
        events.append(_j({"choices": [], "usage": {"completion_tokens": "lots", "prompt_tokens": [1]}}))
        expect = "any"
    elif kind == "huge_prompt_count":
        events.append(_j({"choices": [], "usage": {"prompt_tokens": 10**12}}))
        expect = "any"
    if kind == "http_500":
        return Stream([plain("500 Internal Server Error", b"\x1b[31moops")], "fail", 0, kind)
    if kind == "http_429":
        return Stream([plain("429 Too Many Requests", b'{"error": "slow down"}')], "fail", 0, kind)
    if kind == "redirect_away":
        return Stream([plain("307 Temporary Redirect", b"", extra_headers="Location: http://127.0.0.1:1/v1\r\n")],
                      "fail", 0, kind)
    if kind == "not_json":
        events.insert(rng.randint(0, len(events)), b"{not json")
        expect = "fail"
    if kind == "empty":
        events, expect = [], "fail"
    done = kind not in ("cut_before_done", "cut_mid_event")
    body = _frame(events, rng) + (b"data: [DONE]\n\n" if done else b"")
    if kind == "cut_mid_event":
        body += b'data: {"choices": [{"text": "cu'
    if not done:
        expect = "fail"
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
    return Stream([head, *_split(body, rng)], expect, tokens, kind)


def _check(rec: RequestRecord, name: str, tally: Tally) -> None:
    s = stream_for(name)
    tally.streams += 1
    tally.by_kind[s.kind] += 1
    tally.ok_by_kind[s.kind] += rec.ok
    problem = None
    if rec.error is not None and rec.error.startswith("client could not read the response"):
        problem = f"client error: {rec.error}"
    elif s.expect == "ok" and not rec.ok:
        problem = f"an honest stream failed: {rec.error}"
    elif s.expect == "fail" and rec.ok:
        problem = f"measured a stream it must refuse ({rec.output_tokens} tokens)"
    elif rec.ok and rec.output_tokens != s.tokens:
        problem = f"stored {rec.output_tokens} output tokens, the stream carried {s.tokens}"
    elif rec.ok and rec.output_tokens > MAX_TOKENS:
        problem = f"stored {rec.output_tokens} output tokens past max_tokens {MAX_TOKENS}"
    if problem:
        tally.bad.append(f"{name} ({s.kind}): {problem}")


async def _stage(url: str, stage: int, n: int) -> list[RequestRecord]:
    opts = ClientOptions(base_url=url, model="fuzz", read_timeout_s=10, request_timeout_s=30)
    plan = StagePlan(prompt_for=lambda i: Prompt(f"fuzz {stage}-{i}", 4, MAX_TOKENS), concurrency=CONCURRENCY,
                     requests=n)
    return (await run_stage(opts, plan)).records


def fuzz(streams: int) -> Tally:
    tally = Tally()
    with scripted_server(lambda req: stream_for(str(req.json().get("prompt"))).pieces) as (url, _), \
            tempfile.TemporaryDirectory() as tmp:
        for stage in range((streams + PER_STAGE - 1) // PER_STAGE):
            n = min(PER_STAGE, streams - stage * PER_STAGE)
            try:
                records = asyncio.run(_stage(url, stage, n))
            except Exception as exc:  # a stage lost: what this benchmark exists to find
                tally.bad.append(f"stage {stage} lost: {type(exc).__name__}: {exc}")
                continue
            tally.stages += 1
            if len(records) != n:
                tally.bad.append(f"stage {stage}: {len(records)} records for {n} requests")
            for rec in records:
                _check(rec, f"fuzz {stage}-{rec.index}", tally)
            path = Path(tmp) / f"s{stage}.jsonl.gz"
            try:  # what a stage stores: written (allow_nan=False) and read back
                write_requests(path, records)
                read_requests(path)
            except Exception as exc:
                tally.bad.append(f"stage {stage}: request file: {type(exc).__name__}: {exc}")
    return tally


def report(tally: Tally, seconds: float) -> str:
    lines = [f"# serving_fuzz: {tally.streams} streams, {tally.stages} stages, {len(tally.bad)} BAD",
             "", f"{seconds:.0f} s; max_tokens {MAX_TOKENS}, {PER_STAGE} streams per stage at concurrency "
             f"{CONCURRENCY}; a stream is BAD when the client raised, lost a stage, failed an honest stream, "
             "measured one it must refuse or stored a count the stream contradicts.", "",
             "| kind | streams | measured |", "|---|---|---|"]
    lines += [f"| {k} | {tally.by_kind[k]} | {tally.ok_by_kind[k]} |" for k in sorted(tally.by_kind)]
    if tally.bad:
        lines += ["", "BAD:", *(f"- {b}" for b in tally.bad[:50])]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--streams", type=int, default=10_000)
    ap.add_argument("--out", type=Path, default=None, help="write the table here (default: results/ at 10,000+)")
    args = ap.parse_args(argv)
    t = time.monotonic()
    tally = fuzz(args.streams)
    text = report(tally, time.monotonic() - t)
    print(text, end="")
    out = args.out or (REPO / "benchmarks" / "results" / "serving_fuzz-vm.md" if args.streams >= 10_000 else None)
    if out is not None:
        out.write_text(text)
    return 1 if tally.bad else 0


if __name__ == "__main__":
    sys.exit(main())
