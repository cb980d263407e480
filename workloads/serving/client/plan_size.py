"""A load plan's size and length, checked before anything starts: a stage that would run past
MAX_STAGE_S (`--rate 1e-300`), start more requests at once than MAX_AT_ONCE (`--rate inf
--requests 10^7`), send without end (`--rate inf --duration-s 5`), or hold more prompt or output
tokens than the client can keep (`--input-len 10^7 --requests 1000`) is refused with its numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from perfkit.workloads.serving.client.bounds import MAX_REQUEST_TOKENS

MAX_STAGE_S = 7 * 86400.0  # the longest a stage may take (duration_s has the same bound)
MAX_AT_ONCE = 100_000  # requests started at once (rate .inf)
MAX_PROMPT_TOKENS = 1 << 25  # prompt tokens a stage's prompts hold together (~200 MB of text)
MAX_OUTPUT_TOKENS = 1 << 28  # output tokens a stage may record (a float each)
DEFAULT_REQUESTS = 32
DURATION_PROMPTS = 4096  # prompts drawn for a stage bounded by time (cycled)


def _longest(length: Any, default: int) -> float:
    """The longest a length spec draws (a normal one: mean + 6 std)."""
    if length is None:
        return float(default)
    if length.dist == "fixed":
        return float(length.value)
    if length.dist == "uniform":
        return float(length.max)
    return float(length.mean + 6 * length.std)


def plan_problem(params: Mapping[str, Any], requests: int | None, duration_s: float | None,
                 input_len: Any, output_len: Any, shared_prefix: tuple[int, int] | None) -> str | None:
    """Why the stage `params` cannot be run, with its numbers; None when it fits the bounds."""
    label = ", ".join(f"{k}={v}" for k, v in params.items())
    rate = params.get("rate")
    if requests is None and duration_s is None:
        requests = DEFAULT_REQUESTS
    if isinstance(rate, (int, float)):
        if math.isinf(rate):
            if requests is None:
                return (f"stage {label}: rate inf with only a duration sends without end; "
                        f"give --requests (at most {MAX_AT_ONCE})")
            if requests > MAX_AT_ONCE:
                return (f"stage {label}: {requests} requests all at once, over {MAX_AT_ONCE}; "
                        f"lower --requests or give a finite --rate")
        elif duration_s is None and requests is not None and requests / rate > MAX_STAGE_S:
            return (f"stage {label}: {requests} requests at {rate:g}/s take {requests / rate:.3g} s, over "
                    f"{MAX_STAGE_S:.0f} s (7 days); raise --rate, or bound it with --duration-s")
    prompts = requests if requests is not None else DURATION_PROMPTS
    if isinstance(rate, (int, float)) and requests is None and duration_s is not None and math.isfinite(rate):
        prompts = min(math.ceil(float(rate) * duration_s * 1.5) + 16, 1_000_000)
    out_len = _longest(output_len, 128)
    if out_len > MAX_REQUEST_TOKENS:
        return f"output_len up to {out_len:.0f} tokens, over {MAX_REQUEST_TOKENS} per request; lower --output-len"
    prompt_tokens = prompts * _longest(input_len, 128)
    if shared_prefix is not None:
        prompt_tokens += shared_prefix[0] * shared_prefix[1]
    if prompt_tokens > MAX_PROMPT_TOKENS:
        return (f"stage {label}: {prompts} prompts of up to {_longest(input_len, 128):.0f} tokens hold "
                f"{prompt_tokens:.3g} tokens, over {MAX_PROMPT_TOKENS}; lower --input-len or --requests")
    if prompts * out_len > MAX_OUTPUT_TOKENS:
        return (f"stage {label}: {prompts} requests of up to {out_len:.0f} output tokens, over "
                f"{MAX_OUTPUT_TOKENS} tokens a stage records; lower --output-len or --requests")
    return None
