"""`perfkit serve (--synthetic | --model PRESET)`: an OpenAI-compatible streaming server to
load-test against (POST /v1/completions, /v1/chat/completions; GET /v1/models, /metrics, /health).

--synthetic: no model; tokens come at the configured TTFT and ITL (absolute deadlines, optional
gaussian jitter), k tokens per chunk, at most --max-concurrency requests at once (the rest wait
in a server queue, and their TTFT includes the wait); optional simulated speculative decoding,
reasoning tokens streamed before the answer (chat) and injected faults. --model: perfkit's own decoder with seeded random weights, continuous
batching over --max-batch KV-cache rows, greedy tokens.
Every streamed chunk carries "perfkit": {"sent_s": time.monotonic() at the write, "tokens": k}
(the first also "received_s"). When listening, one line goes to stdout:
`perfkit serve: listening on http://HOST:PORT (mode ...)`. SIGINT / SIGTERM stop the server;
a requested stop exits 0. See docs/serving-server.md.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from perfkit.commands._types import at_most, finite_at_least, non_negative_int, positive_int, seed
from perfkit.workloads.serving.server.faults import FAULTS
from perfkit.workloads.serving.server.options import REASONING_FIELDS

if TYPE_CHECKING:
    from perfkit.workloads.serving.server.options import (
        ModelOptions,
        ServeOptions,
        SyntheticOptions,
    )

DEFAULT_PORT = 8000
SYNTHETIC_ONLY = ("ttft_ms", "itl_ms", "tokens_per_chunk", "jitter_ms", "max_concurrency",
                  "spec_accept_rate", "spec_k", "tokenizer", "reasoning_tokens", "reasoning_field", "lora_extra_ms")
MODEL_ONLY = ("dtype", "device", "max_batch", "cache_len", "extra_step_ms", "profile_dir", "slow_op")


# --model on a CPU: each decode step sleeps this long unless --extra-step-ms says otherwise, so a
# bench's ITL (>= 60 ms) stays above 10x a loaded 2-core client's event-loop lag p99 (3-5 ms
# measured while 8 test suites shared the cores): the gate does not refuse the stages as client-bound
CPU_EXTRA_STEP_MS = 60.0


def extra_step_ms(given: float | None, device: str) -> float:
    """--extra-step-ms, or its default for the device (CPU_EXTRA_STEP_MS on cpu, 0 on cuda)."""
    if given is not None:
        return float(given)
    return CPU_EXTRA_STEP_MS if device == "cpu" else 0.0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "serve", help="run an OpenAI-compatible streaming server (synthetic timings or a model)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--synthetic", action="store_true", help="no model: tokens at configured times")
    mode.add_argument("--model", metavar="PRESET", help="perfkit's decoder of this preset (e.g. tiny)")
    p.add_argument("--host", type=_host, default="127.0.0.1",
                   help="address to bind (default 127.0.0.1; another says so on stderr: anyone who reaches "
                        "it can use the server)")
    p.add_argument("--port", type=_port, default=DEFAULT_PORT,
                   help=f"port (default {DEFAULT_PORT}; 0: a free port, named in the listening line)")
    p.add_argument("--seed", type=seed, default=0, help="seed of weights, jitter and acceptance (default 0)")
    p.add_argument("--output-tokens", type=positive_int, default=16, metavar="N",
                   help="output length of a request without max_tokens (default 16)")
    p.add_argument("--max-tokens-cap", type=positive_int, default=None, metavar="N",
                   help="no request gets more output tokens than N (default: no cap)")
    p.add_argument("--served-model-name", default=None, metavar="NAME",
                   help="the model id /v1/models lists (default perfkit-synthetic or the preset)")
    p.add_argument("--fault", choices=FAULTS, default=None, help="inject this fault (for client tests)")
    p.add_argument("--fault-every", type=positive_int, default=1, metavar="N",
                   help="the fault hits every Nth generation request (default 1: all)")
    p.add_argument("--no-usage", action="store_true",
                   help="stream no usage whatever stream_options asks (as servers that ignore it; tests "
                        "a client's own token counting)")
    p.add_argument("--lora-modules", nargs="+", default=None, metavar="NAME[,NAME...]",
                   help="serve these LoRA adapters by name as vLLM does (listed in /v1/models with parent = the "
                        "base model; a request's model: NAME or BASE:NAME); then an unknown model is answered 404")
    s = p.add_argument_group("synthetic mode")
    s.add_argument("--ttft-ms", type=at_most(finite_at_least(0), MAX_MS), default=None, help="time to first token (default 50)")
    s.add_argument("--itl-ms", type=at_most(finite_at_least(0), MAX_MS), default=None, help="inter-token latency (default 10)")
    s.add_argument("--tokens-per-chunk", default=None, metavar="K[,K...]",
                   help="tokens per chunk after the first token; a comma list is cycled (default 1)")
    s.add_argument("--jitter-ms", type=at_most(finite_at_least(0), MAX_MS), default=None,
                   help="std dev of gaussian noise on every gap, clipped >= 0 (default 0)")
    s.add_argument("--max-concurrency", type=at_most(non_negative_int, MAX_SLOTS), default=None, metavar="K",
                   help="server-side slots; more requests wait in a queue (default 0: unlimited)")
    s.add_argument("--spec-accept-rate", type=finite_at_least(0), default=None, metavar="P",
                   help="simulate speculative decoding: each draft position accepted with P (0..1)")
    s.add_argument("--spec-k", type=at_most(positive_int, MAX_SPEC_K), default=None, metavar="K",
                   help=f"draft tokens per step (at most {MAX_SPEC_K})")
    s.add_argument("--tokenizer", default=None, metavar="PATH",
                   help="tokens are this tokenizer's single-token words (a folder with tokenizer.json, or the "
                        "file): the text re-tokenizes to exactly the tokens sent (default: every token ' tok')")
    s.add_argument("--reasoning-tokens", type=at_most(non_negative_int, MAX_REASONING_TOKENS), default=None,
                   metavar="N", help="chat: the first N output tokens of each request are reasoning, streamed in "
                   "delta.reasoning_content (see --reasoning-field) and counted in usage."
                   "completion_tokens_details.reasoning_tokens; the answer follows (default 0)")
    s.add_argument("--reasoning-field", choices=REASONING_FIELDS, default=None,
                   help="the delta field reasoning streams in: reasoning_content (SGLang, older vLLM; the "
                        "default) or reasoning (newer vLLM)")
    s.add_argument("--lora-extra-ms", action="append", default=None, metavar="NAME=MS",
                   help="requests naming adapter NAME (--lora-modules) get MS more on every token gap (repeatable)")
    m = p.add_argument_group("model mode")
    m.add_argument("--dtype", default=None, help="weights' dtype (default fp32)")
    m.add_argument("--device", default=None, help="cpu or cuda[:N] (default cpu)")
    m.add_argument("--max-batch", type=_max_batch, default=None,
                   help=f"KV-cache rows: requests batched (default 8, at most {MAX_BATCH})")
    m.add_argument("--cache-len", type=positive_int, default=None,
                   help="positions per row, prompt + output (default 2048, at most the model's max_seq_len)")
    m.add_argument("--extra-step-ms", type=finite_at_least(0), default=None,
                   help=f"sleep added to every decode step (default {CPU_EXTRA_STEP_MS:g} on cpu: a tiny model's "
                        "step is shorter than a busy 2-core client's event-loop lag, and a bench of it would be "
                        "client-bound; 0 on cuda)")
    m.add_argument("--profile-dir", default=None, metavar="DIR",
                   help="where POST /stop_profile writes torch.profiler traces (default: a new temp "
                        "dir, named in the listening line)")
    m.add_argument("--slow-op", action="append", default=None, metavar="CLASS=K",
                   help="for tests: attention or mlp of every layer run K times (K x slower)")
    return p


MAX_MS = 3_600_000.0  # a synthetic TTFT, ITL or jitter of more than an hour is a typo
MAX_SLOTS = 1_000_000  # server-side slots
MAX_REASONING_TOKENS = 1 << 20  # the client's bound on one request's output tokens
MAX_SPEC_K = 1024  # draft positions (/metrics counts acceptances per position)
MAX_BATCH = 4096  # KV-cache rows (each holds --cache-len positions of every layer)
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _host(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty host would listen on every interface; give an address "
                                         "(127.0.0.1, or 0.0.0.0 for every interface)")
    return text


def _max_batch(text: str) -> int:
    value = positive_int(text)
    if value > MAX_BATCH:
        raise argparse.ArgumentTypeError(f"{value} is above {MAX_BATCH} KV-cache rows")
    return value


def _port(text: str) -> int:
    value = non_negative_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"{value} is above 65535; give a TCP port 0-65535 (0: a free one)")
    return value


def run(args: argparse.Namespace) -> int:
    import asyncio

    from perfkit.core.errors import EXIT_OK
    from perfkit.workloads.serving.server.runner import serve

    options = serve_options(args)
    if options.host not in LOOPBACK and not options.host.startswith("127."):
        print(f"perfkit serve: warning: listening on {options.host}, not loopback: anyone who reaches "
              f"this address can send requests", file=sys.stderr, flush=True)
    asyncio.run(serve(options, lambda line: print(line, flush=True)))
    return EXIT_OK


def serve_options(args: argparse.Namespace) -> ServeOptions:
    """The command line -> ServeOptions (SpecError for options that do not go together)."""
    from perfkit.core.errors import SpecError
    from perfkit.workloads.serving.server.options import FaultOptions, ServeOptions

    wrong = MODEL_ONLY if args.synthetic else SYNTHETIC_ONLY
    given = [f"--{name.replace('_', '-')}" for name in wrong if getattr(args, name) is not None]
    if given:
        raise SpecError(f"{', '.join(given)}: not an option of {'--synthetic' if args.synthetic else '--model'}; "
                        "drop it or switch mode")
    from perfkit.workloads.serving.server.lora import lora_modules

    mode = _synthetic(args) if args.synthetic else _model(args)
    fault = FaultOptions(args.fault, args.fault_every) if args.fault else None
    return ServeOptions(mode=mode, host=args.host, port=args.port, seed=args.seed,
                        output_tokens=args.output_tokens, max_tokens_cap=args.max_tokens_cap,
                        served_model_name=args.served_model_name, fault=fault, usage=not args.no_usage,
                        lora_modules=lora_modules(args.lora_modules))


def _synthetic(args: argparse.Namespace) -> SyntheticOptions:
    from perfkit.core.errors import SpecError
    from perfkit.workloads.serving.server.lora import lora_extra, lora_modules
    from perfkit.workloads.serving.server.options import (
        SpecDecodeOptions,
        SyntheticOptions,
        chunk_sizes,
    )
    from perfkit.workloads.serving.server.token_texts import token_texts

    spec = None
    if (args.spec_accept_rate is None) != (args.spec_k is None):
        raise SpecError("--spec-accept-rate and --spec-k go together; give both or neither")
    if args.spec_k is not None:
        if args.spec_accept_rate > 1:
            raise SpecError(f"--spec-accept-rate {args.spec_accept_rate}: give a probability 0..1")
        if args.tokens_per_chunk is not None:
            raise SpecError("--tokens-per-chunk: with speculative decoding a chunk is one step's "
                            "accepted tokens + 1; drop --tokens-per-chunk")
        spec = SpecDecodeOptions(args.spec_accept_rate, args.spec_k)
    ms = 1e-3
    return SyntheticOptions(
        ttft_s=(50.0 if args.ttft_ms is None else args.ttft_ms) * ms,
        itl_s=(10.0 if args.itl_ms is None else args.itl_ms) * ms,
        tokens_per_chunk=chunk_sizes(args.tokens_per_chunk or "1"),
        jitter_s=(args.jitter_ms or 0.0) * ms,
        max_concurrency=args.max_concurrency or 0,
        spec=spec,
        token_texts=token_texts(args.tokenizer) if args.tokenizer is not None else (),
        reasoning_tokens=args.reasoning_tokens or 0,
        reasoning_field=args.reasoning_field or REASONING_FIELDS[0],
        lora_extra_s=lora_extra(args.lora_extra_ms, lora_modules(args.lora_modules)),
    )


def _model(args: argparse.Namespace) -> ModelOptions:
    import tempfile
    from pathlib import Path

    from perfkit.core.errors import SpecError
    from perfkit.workloads.dtypes import canonical
    from perfkit.workloads.models.presets import PRESETS
    from perfkit.workloads.models.spec import MODEL_DTYPES
    from perfkit.workloads.serving.server.options import ModelOptions, slow_op

    if args.model not in PRESETS:
        raise SpecError(f"--model {args.model!r}: no such preset; choose from {', '.join(PRESETS)}")
    try:
        dtype = canonical(args.dtype or "fp32")
    except ValueError:
        dtype = ""
    if dtype not in MODEL_DTYPES:
        raise SpecError(f"--dtype {args.dtype!r}: choose from {', '.join(MODEL_DTYPES)}")
    device = args.device or "cpu"
    if device != "cpu" and not device.startswith("cuda"):
        raise SpecError(f"--device {device!r}: give cpu or cuda[:N]")
    max_seq = PRESETS[args.model].max_seq_len
    cache_len = args.cache_len or min(2048, max_seq)
    if cache_len > max_seq:
        raise SpecError(f"--cache-len {cache_len}: above {args.model}'s max_seq_len {max_seq}")
    slow = dict(slow_op(text) for text in args.slow_op or ())
    profile_dir = args.profile_dir or tempfile.mkdtemp(prefix="perfkit-serve-traces-")
    return ModelOptions(preset=args.model, dtype=dtype, device=device, max_batch=args.max_batch or 8,
                        cache_len=cache_len, extra_step_s=extra_step_ms(args.extra_step_ms, device) * 1e-3,
                        slow_op=tuple(sorted(slow.items())), profile_dir=str(Path(profile_dir).resolve()))
