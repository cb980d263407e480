"""One streamed chunk of an OpenAI-compatible server -> how many output tokens it carried.

Best source first (perfkit.workloads.serving.records): the cumulative `usage.completion_tokens`
of `stream_options.continuous_usage_stats` (its increase is the chunk's token count); else one
entry per token in `logprobs` (completions: `logprobs.tokens`; chat: `logprobs.content`); else
the server's token ids (`token_ids`, llama.cpp's `tokens`); else one token for a chunk with any
generated text (content, reasoning or tool-call arguments), labelled as a chunk count, with that
text (`content`: with --tokenizer the stage counts its tokens afterwards, client/token_count.py). A chunk
with no generated text and no token increase (a role-only opening chunk, an empty delta, the
final usage-only chunk) carries no token.

Reasoning models (`chunk_kinds`): a chunk's text is answer text (chat `delta.content`,
completions `text`, `delta.tool_calls`) or reasoning text (`delta.reasoning_content`: SGLang,
older vLLM; `delta.reasoning`: newer vLLM); a chunk may carry both (vLLM's chunk where the
thinking ends). `usage.completion_tokens_details.reasoning_tokens` (OpenAI's spelling) is the
server's count of the reasoning tokens among completion_tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from perfkit.workloads.serving.records import (
    TOKENS_FROM_CHUNKS,
    TOKENS_FROM_IDS,
    TOKENS_FROM_LOGPROBS,
    TOKENS_FROM_USAGE,
)

REASONING_KEYS = ("reasoning_content", "reasoning")  # the delta fields a model's thinking streams in


@dataclass(frozen=True)
class ChunkInfo:
    tokens: int  # output tokens this chunk carried
    source: str  # where the count came from
    completion_tokens: int | None  # the cumulative count the chunk's usage gave (None: no usage)
    prompt_tokens: int | None
    error: str | None = None  # an error object the server streamed
    stamps: dict[str, Any] | None = None  # perfkit serve's "perfkit" stamps; llama.cpp `timings`
    text: bool = False  # the chunk carried generated text (so at least one token)
    content: str = ""  # that text (answer, reasoning, tool-call arguments): a tokenizer counts it
    reasoning_chars: int = 0  # the leading characters of `content` that are reasoning text


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _has_text(choice: dict[str, Any]) -> bool:
    if isinstance(choice.get("text"), str) and choice["text"]:
        return True
    delta = choice.get("delta")
    if not isinstance(delta, dict):
        return False
    for key in ("content", "reasoning_content", "reasoning"):
        if isinstance(delta.get(key), str) and delta[key]:
            return True
    return bool(delta.get("tool_calls"))


def chunk_text(choice: dict[str, Any]) -> str:
    """The generated text of a chunk's choice: what a tokenizer counts when the server says nothing."""
    if isinstance(choice.get("text"), str):
        return str(choice["text"])
    delta = choice.get("delta")
    if not isinstance(delta, dict):
        return ""
    parts = [delta[key] for key in ("reasoning_content", "reasoning", "content") if isinstance(delta.get(key), str)]
    calls = delta.get("tool_calls")
    for call in calls if isinstance(calls, list) else ():
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("arguments"), str):
            parts.append(fn["arguments"])
    return "".join(parts)


def reasoning_chars(choice: dict[str, Any]) -> int:
    """How many leading characters of chunk_text(choice) are reasoning (delta.reasoning_content,
    delta.reasoning: chunk_text puts them first)."""
    delta = choice.get("delta")
    if isinstance(choice.get("text"), str) or not isinstance(delta, dict):
        return 0
    return sum(len(delta[key]) for key in REASONING_KEYS if isinstance(delta.get(key), str))


def _logprob_count(choice: dict[str, Any]) -> int | None:
    lp = choice.get("logprobs")
    if not isinstance(lp, dict):
        return None
    for key in ("content", "tokens"):
        if isinstance(lp.get(key), list):
            return len(lp[key])
    return None


def _id_count(payload: dict[str, Any], choice: dict[str, Any]) -> int | None:
    for holder in (choice, payload):
        for key in ("token_ids", "tokens"):
            value = holder.get(key)
            if isinstance(value, list) and all(isinstance(t, int) for t in value):
                return len(value)
    return None


def read_chunk(payload: dict[str, Any], previous_completion: int | None) -> ChunkInfo:
    """The token count of one parsed chunk; `previous_completion`: the cumulative count so far."""
    usage = payload.get("usage") if isinstance(payload.get("usage"), dict) else None
    completion = _int(usage.get("completion_tokens")) if usage else None
    prompt = _int(usage.get("prompt_tokens")) if usage else None
    err = payload.get("error")
    error = None
    if err is not None:
        error = str(err.get("message") if isinstance(err, dict) else err)[:200] or "error"
    stamps = payload.get("perfkit") if isinstance(payload.get("perfkit"), dict) else None
    if stamps is None and isinstance(payload.get("timings"), dict):
        stamps = {"timings": payload["timings"]}
    choices = payload.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    text = bool(choice) and _has_text(choice)
    if completion is not None and choice:
        before = previous_completion or 0
        return ChunkInfo(max(completion - before, 0), TOKENS_FROM_USAGE, completion, prompt, error, stamps, text)
    if choice:
        n = _logprob_count(choice)
        if n is not None:
            return ChunkInfo(n, TOKENS_FROM_LOGPROBS, completion, prompt, error, stamps, text)
        n = _id_count(payload, choice)
        if n is not None:
            return ChunkInfo(n, TOKENS_FROM_IDS, completion, prompt, error, stamps, text)
        if text:
            return ChunkInfo(1, TOKENS_FROM_CHUNKS, completion, prompt, error, stamps, text, chunk_text(choice),
                             reasoning_chars(choice))
    return ChunkInfo(0, TOKENS_FROM_CHUNKS, completion, prompt, error, stamps, text)


def cached_tokens(payload: dict[str, Any]) -> int | None:
    """`usage.prompt_tokens_details.cached_tokens` of a chunk (vLLM, SGLang, OpenAI); None when
    the chunk does not say."""
    usage = payload.get("usage")
    details = usage.get("prompt_tokens_details") if isinstance(usage, dict) else None
    return _int(details.get("cached_tokens")) if isinstance(details, dict) else None


@dataclass(frozen=True)
class ChunkKinds:
    answer: bool  # the chunk carried answer text (content, completions text, tool calls)
    reasoning: bool  # ... reasoning text (delta.reasoning_content or delta.reasoning)
    reasoning_tokens: int | None  # usage.completion_tokens_details.reasoning_tokens (cumulative)


def _filled(holder: dict[str, Any], key: str) -> bool:
    return isinstance(holder.get(key), str) and bool(holder[key])


def chunk_kinds(payload: dict[str, Any]) -> ChunkKinds:
    """What kind of text one parsed chunk carried, and the server's reasoning count if it gave one."""
    usage = payload.get("usage")
    details = usage.get("completion_tokens_details") if isinstance(usage, dict) else None
    count = _int(details.get("reasoning_tokens")) if isinstance(details, dict) else None
    choices = payload.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    delta = choice.get("delta")
    if not isinstance(delta, dict):
        return ChunkKinds(_filled(choice, "text"), False, count)
    answer = _filled(choice, "text") or _filled(delta, "content") or bool(delta.get("tool_calls"))
    return ChunkKinds(answer, any(_filled(delta, key) for key in REASONING_KEYS), count)
