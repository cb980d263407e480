"""What `perfkit serve` is configured with: the mode's options and the options every mode shares.

No torch and no aiohttp here: the command builds these before anything heavy is imported.
"""

from __future__ import annotations

from dataclasses import dataclass

from perfkit.core.errors import SpecError

SYNTHETIC_MODEL_NAME = "perfkit-synthetic"
# the delta field a reasoning model's thinking streams in: vLLM's older and SGLang's
# `reasoning_content`, vLLM's newer `reasoning`
REASONING_FIELDS = ("reasoning_content", "reasoning")


@dataclass(frozen=True)
class SpecDecodeOptions:
    accept_rate: float  # probability that each draft position is accepted (given all before were)
    k: int  # draft tokens per step


@dataclass(frozen=True)
class SyntheticOptions:
    ttft_s: float = 0.05  # from the request taking a slot to its first token
    itl_s: float = 0.01  # between consecutive tokens
    tokens_per_chunk: tuple[int, ...] = (1,)  # chunk sizes after the first token, cycled
    jitter_s: float = 0.0  # standard deviation of gaussian noise on each gap (clipped >= 0)
    max_concurrency: int = 0  # server-side slots (0: unlimited); more requests wait in a queue
    spec: SpecDecodeOptions | None = None
    # the text of each token, cycled (--tokenizer: single tokens of a real tokenizer, so the text
    # re-tokenizes to exactly the tokens sent); () : every token is " tok"
    token_texts: tuple[str, ...] = ()
    # the first reasoning_tokens output tokens of a request are reasoning (chat: streamed in
    # `delta.<reasoning_field>`, counted in usage.completion_tokens_details.reasoning_tokens)
    reasoning_tokens: int = 0
    reasoning_field: str = REASONING_FIELDS[0]
    # (adapter, seconds) added to every token gap of that LoRA adapter's requests (--lora-extra-ms)
    lora_extra_s: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class ModelOptions:
    preset: str = "tiny"
    dtype: str = "fp32"
    device: str = "cpu"
    max_batch: int = 8  # KV-cache rows: requests decoded together
    cache_len: int = 2048  # positions per row: prompt + output of one request
    extra_step_s: float = 0.0  # sleep added to every decode step (to slow the server on purpose)
    slow_op: tuple[tuple[str, int], ...] = ()  # (attention | mlp, K): that class run K times (tests)
    profile_dir: str = ""  # where POST /stop_profile writes its traces ("": a temp dir made at start)


@dataclass(frozen=True)
class FaultOptions:
    name: str  # one of faults.FAULTS
    every: int = 1  # applied to every Nth generation request (1: all)


@dataclass(frozen=True)
class ServeOptions:
    mode: SyntheticOptions | ModelOptions
    host: str = "127.0.0.1"
    port: int = 8000  # 0: a free port
    seed: int = 0
    output_tokens: int = 16  # output length of a request that gives no max_tokens
    max_tokens_cap: int | None = None  # no request gets more output tokens than this
    served_model_name: str | None = None  # the `model` /v1/models lists (default: mode's own)
    fault: FaultOptions | None = None
    usage: bool = True  # False (--no-usage): stream no usage whatever stream_options asks
    lora_modules: tuple[str, ...] = ()  # LoRA adapters served by name (server/lora.py)

    @property
    def model_name(self) -> str:
        if self.served_model_name:
            return self.served_model_name
        return self.mode.preset if isinstance(self.mode, ModelOptions) else SYNTHETIC_MODEL_NAME

    def describe_mode(self) -> str:
        """`synthetic` or `model PRESET` (as the listening line says)."""
        if isinstance(self.mode, ModelOptions):
            m = self.mode
            return f"model {m.preset} {m.dtype} {m.device}; profiler traces {m.profile_dir}"
        return "synthetic"


def slow_op(text: str) -> tuple[str, int]:
    """`--slow-op CLASS=K`: attention or mlp, K a whole number >= 1."""
    name, _, k = text.partition("=")
    if name not in ("attention", "mlp") or not k.isdigit() or int(k) < 1:
        raise SpecError(f"--slow-op {text!r}: write attention=K or mlp=K with K >= 1 (e.g. attention=3)")
    return name, int(k)


def chunk_sizes(text: str) -> tuple[int, ...]:
    """`--tokens-per-chunk`: one positive integer, or a comma list cycled ("1,4")."""
    try:
        sizes = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise SpecError(f"--tokens-per-chunk {text!r}: give a positive integer or a comma list "
                        "such as 1,4") from None
    if not sizes or min(sizes) < 1:
        raise SpecError(f"--tokens-per-chunk {text!r}: every size must be >= 1")
    return sizes
