"""`perfkit serve-bench URL`: load-test an OpenAI-compatible server; the options mirror
`kind: serving` in model.yaml (docs/serving.md). Each load level is a point of a run, stored and
gated like any other: TTFT / TPOT / ITL / E2E, goodput under the SLOs, and cost per million
tokens, with the client-bound check and the server's /metrics differences.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from perfkit.commands._types import fraction, positive_int, seed
from perfkit.core.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK, EXIT_POINTS_FAILED


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "serve-bench", help="load-test an OpenAI-compatible server (latency, goodput, cost) and record a run",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("url", help="the server: http://HOST:PORT, its OpenAI base URL http://HOST:PORT/v1, or a "
                               "full .../v1/completions or .../v1/chat/completions URL")
    p.add_argument("--name", default="serve-bench", help="the run's and workload's name (default: serve-bench)")
    p.add_argument("--model", default="default", help="the model name sent in each request")
    p.add_argument("--api", choices=("completions", "chat"), default=None,
                   help="completions (default) or chat; a full endpoint URL names it")
    p.add_argument("--api-key-env", metavar="VAR", default=None,
                   help="send `Authorization: Bearer $VAR` (the token is never stored or printed)")
    p.add_argument("--follow-redirects", action="store_true",
                   help="follow a redirect to another server (by default such a request fails)")
    load = p.add_mutually_exclusive_group()
    load.add_argument("--concurrency", metavar="N[,N...]", help="closed loop: requests in flight per stage")
    load.add_argument("--rate", metavar="R[,R...]", help="open loop: requests per second per stage (inf: all at once)")
    load.add_argument("--replay", metavar="FILE", help="open loop at the arrival times of FILE")
    p.add_argument("--burstiness", type=float, default=None, help="gamma shape of the gaps (1: Poisson)")
    p.add_argument("--max-concurrency", type=int, default=None, help="open loop: at most this many in flight")
    p.add_argument("--requests", type=int, default=None, help="requests per stage (default 32)")
    p.add_argument("--duration-s", type=float, default=None, help="or: send for this long per stage")
    p.add_argument("--warmup", type=int, default=None, help="warm-up requests before each stage (default 1)")
    p.add_argument("--input-len", type=int, default=None, help="prompt tokens (synthetic; default 128)")
    p.add_argument("--output-len", type=int, default=None, help="output tokens asked for (default 128)")
    p.add_argument("--dataset", metavar="FILE", help="prompts from a ShareGPT-format JSON / JSON-lines file")
    p.add_argument("--shared-prefix", type=int, metavar="TOKENS", help="prompts share a prefix this long")
    p.add_argument("--groups", type=int, default=None, help="distinct shared prefixes (default 4)")
    p.add_argument("--token-ids", action="store_true", help="send token-id prompts (completions)")
    p.add_argument("--vocab-size", type=int, default=None, help="token ids are drawn below this (default 32000)")
    p.add_argument("--slo", metavar="ttft=S,tpot=S,e2e=S", help="SLO thresholds in seconds (goodput)")
    p.add_argument("--slo-quantile", type=fraction, default=None, help="quantile the SLO holds at (default 0.99)")
    p.add_argument("--price-per-gpu-hour", type=float, default=None, metavar="USD")
    p.add_argument("--gpus", type=positive_int, default=None, help="GPUs behind the server (default 1)")
    p.add_argument("--prices", metavar="FILE", help="a prices file (with --price-name)")
    p.add_argument("--price-name", default=None, help="the entry of --prices to use")
    p.add_argument("--target-interactivity", metavar="TPS[,TPS...]",
                   help="cost at these tok/s per user along the measured front")
    p.add_argument("--metrics-url", default=None, help="Prometheus endpoint (default URL/metrics; none: skip)")
    p.add_argument("--read-timeout-s", type=float, default=None, help="longest wait for the next chunk (60)")
    p.add_argument("--request-timeout-s", type=float, default=None, help="longest request (600)")
    p.add_argument("--connect-timeout-s", type=float, default=None, help="longest connect (10)")
    p.add_argument("--no-usage", action="store_true", help="do not ask for stream_options usage")
    p.add_argument("--logprobs", action="store_true", help="ask for logprobs (token counts without usage)")
    p.add_argument("--processes", type=int, default=None,
                   help="client processes each stage's requests are spread over (default 1; more when a "
                        "stage is client-bound)")
    p.add_argument("--seed", type=seed, default=0, help="seed of arrivals and prompts (default 0)")
    p.add_argument("--out", type=Path, default=Path("runs"), help="parent directory of the run (default: runs/)")
    p.add_argument("--db", default=None, help="results store URL (default: $PERFKIT_DB, else sqlite:///perfkit.db)")
    p.add_argument("--no-store", action="store_true", help="do not store the run")
    p.add_argument("--repo", type=Path, default=Path("."), help="git repository whose commit is recorded")
    p.add_argument("--format", choices=("text", "json"), default="text", help="json: the stages on stdout")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--wide", action="store_true", help="print every column of the stage table")
    return p


# spec location -> the option that sets it (for one-line errors)
OPTION_OF = {
    "endpoint": "URL", "model": "--model", "load": "--concurrency / --rate / --replay",
    "load.concurrency": "--concurrency", "load.rate": "--rate", "load.burstiness": "--burstiness",
    "load.max_concurrency": "--max-concurrency", "requests": "--requests", "duration_s": "--duration-s",
    "warmup": "--warmup", "prompts": "--dataset / --shared-prefix", "prompts.input_len": "--input-len",
    "prompts.output_len": "--output-len", "prompts.groups": "--groups", "prompts.vocab_size": "--vocab-size", "prompts.prefix_len": "--shared-prefix",
    "slo": "--slo", "slo.quantile": "--slo-quantile", "price": "--price-per-gpu-hour / --prices",
    "price.gpus": "--gpus", "price.usd_per_gpu_hour": "--price-per-gpu-hour",
    "target_interactivity": "--target-interactivity", "client": "--*-timeout-s", "name": "--name",
    "client.processes": "--processes", "client.api_key_env": "--api-key-env", "api": "URL / --api",
}


def _numbers(text: str, option: str, kind: type) -> list[Any]:
    from perfkit.core.errors import SpecError

    try:
        return [kind(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise SpecError(f"{option} {text[:80]!r}: not a comma-separated list of numbers; e.g. 1,4,16") from None


def _slo(text: str) -> dict[str, float]:
    from perfkit.core.errors import SpecError

    out: dict[str, float] = {}
    for part in text.split(","):
        key, _, value = part.partition("=")
        key = key.strip()
        if key not in ("ttft", "tpot", "e2e"):
            raise SpecError(f"--slo: unknown '{key[:40]}'; write ttft=0.5,tpot=0.05,e2e=10 (seconds)")
        try:
            out[f"{key}_s"] = float(value)
        except ValueError:
            raise SpecError(f"--slo: {key}={value[:40]!r} is not a number of seconds") from None
    return out


def workload(args: argparse.Namespace) -> dict[str, Any]:
    """The `kind: serving` workload the options describe."""
    w: dict[str, Any] = {"kind": "serving", "name": args.name, "endpoint": args.url, "model": args.model}
    if args.api is not None:
        w["api"] = args.api
    load: dict[str, Any] = {}
    if args.rate:
        load["rate"] = _numbers(args.rate, "--rate", float)
    elif args.replay:
        load["replay"] = args.replay
    else:
        load["concurrency"] = _numbers(args.concurrency or "1", "--concurrency", int)
    for key in ("burstiness", "max_concurrency"):
        if getattr(args, key) is not None:
            load[key] = getattr(args, key)
    w["load"] = load
    for key in ("requests", "duration_s", "warmup"):
        if getattr(args, key) is not None:
            w[key] = getattr(args, key)
    prompts: dict[str, Any] = {}
    if args.dataset:
        prompts.update(source="sharegpt", path=args.dataset)
    elif args.shared_prefix:
        prompts.update(source="shared_prefix", prefix_len=args.shared_prefix)
    if args.groups is not None:
        prompts["groups"] = args.groups
    if args.input_len is not None:
        prompts["input_len"] = args.input_len
    if args.output_len is not None:
        prompts["output_len"] = args.output_len
    if args.token_ids:
        prompts["token_ids"] = True
    if args.vocab_size is not None:
        prompts["vocab_size"] = args.vocab_size
    w["prompts"] = prompts
    if args.slo:
        w["slo"] = _slo(args.slo) | ({"quantile": args.slo_quantile} if args.slo_quantile is not None else {})
    if args.price_per_gpu_hour is not None or args.prices:
        price: dict[str, Any] = {"gpus": args.gpus or 1}
        if args.prices:
            price.update(file=args.prices, name=args.price_name)
        else:
            price["usd_per_gpu_hour"] = args.price_per_gpu_hour
        w["price"] = price
    if args.target_interactivity:
        w["target_interactivity"] = _numbers(args.target_interactivity, "--target-interactivity", float)
    if args.metrics_url:
        w["metrics_url"] = args.metrics_url
    client: dict[str, Any] = {"usage": not args.no_usage, "logprobs": args.logprobs,
                              "follow_redirects": args.follow_redirects}
    if args.api_key_env is not None:
        client["api_key_env"] = args.api_key_env
    for key in ("read_timeout_s", "request_timeout_s", "connect_timeout_s", "processes"):
        if getattr(args, key) is not None:
            client[key] = getattr(args, key)
    w["client"] = client
    return w


def build_spec(args: argparse.Namespace) -> Any:
    from pydantic import ValidationError

    from perfkit.core.errors import SpecError
    from perfkit.pipeline.spec import RunSpec

    raw = {"name": args.name, "device": "cpu", "seed": args.seed,
           "profile": {"torch_profiler": False, "nvtx": False, "analyze": False}, "workloads": [workload(args)]}
    try:
        spec = RunSpec.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = [str(p) for p in err["loc"] if not str(p).isdigit() and p != "workloads"]
        where = next((OPTION_OF[".".join(loc[:i])] for i in range(len(loc), 0, -1) if ".".join(loc[:i]) in OPTION_OF),
                     "an option")
        message = str(err["msg"]).removeprefix("Value error, ")
        if message.startswith(("URL ", "the URL ")):
            where = "URL"
        elif message.startswith("plan: "):
            where, message = "plan", message.removeprefix("plan: ")
        raise SpecError(f"serve-bench {where}: {message[:300]}") from None
    return spec  # the files it names are read by the profile pipeline's preflight


def run(args: argparse.Namespace) -> int:
    from perfkit.core.terminal import terminal_safe
    from perfkit.pipeline.post_run import PostRunOptions
    from perfkit.pipeline.profile import ProfileHooks, profile
    from perfkit.pipeline.sweep import ProfileOptions
    from perfkit.workloads.serving.client.url import redact_urls

    if not args.no_store:  # a store that would lose the run is refused before anything else
        from perfkit.store.url import check_persistent

        check_persistent(args.db)
    spec = build_spec(args)
    show = not args.quiet and args.format == "text"
    options = ProfileOptions(out_dir=args.out, device="cpu", quick=False, repo=args.repo)
    post = PostRunOptions(analyze=False, store=not args.no_store, db_url=args.db)
    hooks = ProfileHooks(started=_started) if show else ProfileHooks()
    outcome = profile(spec, Path(f"serve-bench {redact_urls(args.url)}"), options, post, hooks)
    final = outcome.run
    if args.format == "json":
        from perfkit.reports.serving.as_json import stages_json

        print(stages_json(final, outcome.run_dir))
    elif not args.quiet:
        from perfkit.core.terminal import terminal_width
        from perfkit.reports.serving.text import serving_table

        print(serving_table(final, None if args.wide else terminal_width()))
        for message in outcome.messages:
            print(f"perfkit: {terminal_safe(message)}")
        print(outcome.run_dir)
    if outcome.stored is False:
        print(f"perfkit: {terminal_safe(outcome.messages[-1])}", file=sys.stderr)
    if final.status == "interrupted":
        print(f"perfkit: interrupted; {len(final.points)} of {outcome.n_points} stages recorded", file=sys.stderr)
        return outcome.signal_exit_code or EXIT_INTERRUPTED
    failed = final.counts.get("failed")
    if failed:
        first = next((p for p in final.points if p.status == "failed"), None)
        why = f": {first.error}" if first is not None and first.error else ""
        print(f"perfkit: {failed} of {outcome.n_points} stages failed{terminal_safe(why)}", file=sys.stderr)
        return EXIT_POINTS_FAILED
    if outcome.stored is False:
        return EXIT_BAD_INPUT
    return EXIT_OK


def _started(run: Any, run_dir: Path, n_points: int) -> None:
    print(f"perfkit: run {run.run_id}: {n_points} stages -> {run_dir}", file=sys.stderr)
