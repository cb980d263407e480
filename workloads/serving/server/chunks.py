"""OpenAI response bodies: stream chunks of completions and chat completions, whole responses,
usage, errors, and the Server-Sent Events framing (`data: {json}\\n\\n`, ending `data: [DONE]`).

As OpenAI and vLLM: a chat stream begins with a role-only chunk (delta {"role": "assistant"});
the last content chunk has finish_reason "length" (output is always max_tokens long);
stream_options.include_usage adds a final chunk with empty choices and the usage;
continuous_usage_stats puts the cumulative usage on every chunk.
A chat response of a reasoning server (`reasoning_field` set: `perfkit serve --synthetic
--reasoning-tokens N`) streams reasoning tokens in `delta.<reasoning_field>` (`reasoning_content`
as SGLang and older vLLM, or `reasoning` as newer vLLM) and the answer in `delta.content`; its
usage adds `completion_tokens_details.reasoning_tokens` (included in completion_tokens).
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

from perfkit.workloads.serving.server.engine import Token
from perfkit.workloads.serving.server.protocol import CHAT

DONE = b"data: [DONE]\n\n"
FINISH_REASON = "length"


def sse(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


def usage(prompt_tokens: int, completion_tokens: int, cached_tokens: int | None = None,
          reasoning_tokens: int | None = None) -> dict[str, Any]:
    """OpenAI's usage object; `cached_tokens` given: with prompt_tokens_details; `reasoning_tokens`
    given: with completion_tokens_details."""
    out: dict[str, Any] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                           "total_tokens": prompt_tokens + completion_tokens}
    if cached_tokens is not None:  # as vLLM, SGLang and OpenAI say it
        out["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    if reasoning_tokens is not None:
        out["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
    return out


def error_body(message: str, status: int, param: str | None = None) -> dict[str, Any]:
    kind = "NotFoundError" if status == 404 else "invalid_request_error" if status < 500 else "server_error"
    return {"error": {"message": message, "type": kind, "param": param, "code": status}}


@dataclass(frozen=True)
class Response:
    """One response's identity: what every chunk of it repeats."""

    kind: str
    model: str
    logprobs: int | None
    id: str
    created: int
    reasoning_field: str | None = None  # chat of a reasoning server: the delta field of its thinking

    @classmethod
    def new(cls, kind: str, model: str, logprobs: int | None, reasoning_field: str | None = None) -> Response:
        prefix = "chatcmpl" if kind == CHAT else "cmpl"
        field = reasoning_field if kind == CHAT else None  # a completions stream has no such field
        return cls(kind, model, logprobs, f"{prefix}-{uuid.uuid4().hex}", int(time.time()), field)

    def usage(self, prompt_tokens: int, completion_tokens: int, reasoning_tokens: int,
              cached_tokens: int | None = None) -> dict[str, Any]:
        """The usage object (with the reasoning tokens when this is a reasoning response)."""
        return usage(prompt_tokens, completion_tokens, cached_tokens,
                     reasoning_tokens if self.reasoning_field else None)

    def _message(self, tokens: list[Token]) -> dict[str, str]:
        """A chat delta's (or message's) text: the reasoning in its field, the answer in `content`."""
        if not self.reasoning_field:
            return {"content": "".join(t.text for t in tokens)}
        thought = "".join(t.text for t in tokens if t.reasoning)
        answer = "".join(t.text for t in tokens if not t.reasoning)
        return {**({self.reasoning_field: thought} if thought else {}),
                **({"content": answer} if answer or not thought else {})}

    def head(self, whole: bool) -> dict[str, Any]:
        if self.kind == CHAT:
            obj = "chat.completion" if whole else "chat.completion.chunk"
        else:
            obj = "text_completion"
        return {"id": self.id, "object": obj, "created": self.created, "model": self.model}

    def role_chunk(self) -> dict[str, Any]:
        choice = {"index": 0, "delta": {"role": "assistant"}, "logprobs": None, "finish_reason": None}
        return {**self.head(False), "choices": [choice]}

    def chunk(self, tokens: list[Token], last: bool, text_offset: int = 0) -> dict[str, Any]:
        text = "".join(t.text for t in tokens)
        choice: dict[str, Any] = {"index": 0}
        if self.kind == CHAT:
            choice["delta"] = self._message(tokens)
        else:
            choice["text"] = text
        choice["logprobs"] = self._logprobs(tokens, text_offset)
        choice["finish_reason"] = FINISH_REASON if last else None
        return {**self.head(False), "choices": [choice]}

    def usage_chunk(self, prompt_tokens: int, completion_tokens: int, cached: int | None = None,
                    reasoning_tokens: int = 0) -> dict[str, Any]:
        return {**self.head(False), "choices": [],
                "usage": self.usage(prompt_tokens, completion_tokens, reasoning_tokens, cached)}

    def whole(self, tokens: list[Token], prompt_tokens: int, cached: int | None = None) -> dict[str, Any]:
        text = "".join(t.text for t in tokens)
        choice: dict[str, Any] = {"index": 0}
        if self.kind == CHAT:
            choice["message"] = {"role": "assistant", **self._message(tokens)}
        else:
            choice["text"] = text
        choice["logprobs"] = self._logprobs(tokens, 0)
        choice["finish_reason"] = FINISH_REASON
        reasoning = sum(t.reasoning for t in tokens)
        return {**self.head(True), "choices": [choice],
                "usage": self.usage(prompt_tokens, len(tokens), reasoning, cached)}

    def _logprobs(self, tokens: list[Token], text_offset: int) -> dict[str, Any] | None:
        if self.logprobs is None:
            return None
        if self.kind == CHAT:
            return {"content": [{"token": t.text, "logprob": t.logprob, "bytes": list(t.text.encode()),
                                 "top_logprobs": []} for t in tokens]}
        offsets = []
        for t in tokens:
            offsets.append(text_offset)
            text_offset += len(t.text)
        top = [{t.text: t.logprob} for t in tokens] if self.logprobs > 0 else None
        return {"tokens": [t.text for t in tokens], "token_logprobs": [t.logprob for t in tokens],
                "top_logprobs": top, "text_offset": offsets}
