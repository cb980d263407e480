"""An OpenAI request body (completions or chat completions) -> a typed GenRequest, or a RequestError.

Fields honoured: model, prompt (a string, a list of token ids, or a one-element list of either)
or messages (content a string or a list of {"type": "text", "text": ...} parts), max_tokens
(chat: max_completion_tokens first), stream, stream_options {include_usage,
continuous_usage_stats}, logprobs (completions: an integer; chat: true / false, with
top_logprobs ignored), ignore_eos (accepted; output is always max_tokens long), n (1 only).
A chat prompt is the messages' text joined by newlines, counted with the server's tokenizer.
Bounds, answered 400: max_tokens over MAX_OUTPUT_TOKENS, a prompt over MAX_PROMPT_CHARS
characters or MAX_PROMPT_TOKENS token ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from perfkit.workloads.serving.server.tokenizer import count_tokens

COMPLETION = "completion"
CHAT = "chat"
MAX_OUTPUT_TOKENS = 1 << 20  # max_tokens of one request (a larger one is answered 400)
MAX_PROMPT_TOKENS = 1 << 20  # token ids of one prompt
MAX_PROMPT_CHARS = 4 << 20  # characters of one text prompt (about 1M tokens)


class RequestError(Exception):
    """A request the server refuses: HTTP `status` with an OpenAI-style error body."""

    def __init__(self, message: str, param: str | None = None, status: int = 400) -> None:
        super().__init__(message)
        self.message, self.param, self.status = message, param, status


@dataclass(frozen=True)
class GenRequest:
    kind: str  # COMPLETION or CHAT
    model: str | None
    prompt_text: str | None  # the prompt as text (None when given as token ids)
    prompt_ids: tuple[int, ...] | None  # the prompt as token ids (None when given as text)
    max_tokens: int | None  # as asked (None: the server's default)
    stream: bool = False
    include_usage: bool = False
    continuous_usage: bool = False
    logprobs: int | None = None  # completions: how many; chat: 1 when true; None: not asked

    @property
    def prompt_tokens(self) -> int:
        if self.prompt_ids is not None:
            return len(self.prompt_ids)
        return count_tokens(self.prompt_text or "")


def parse_request(kind: str, body: Any) -> GenRequest:
    if not isinstance(body, dict):
        raise RequestError("the request body must be a JSON object")
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise RequestError("'model' must be a string", "model")
    n = body.get("n", 1)
    if n not in (1, None):
        raise RequestError("only n=1 is supported", "n")
    text, ids = _chat_prompt(body) if kind == CHAT else _completion_prompt(body)
    include, continuous = _stream_options(body)
    return GenRequest(
        kind=kind, model=model, prompt_text=text, prompt_ids=ids, max_tokens=_max_tokens(kind, body),
        stream=_flag(body, "stream"), include_usage=include, continuous_usage=continuous,
        logprobs=_logprobs(kind, body),
    )


def _flag(body: dict[str, Any], key: str) -> bool:
    value = body.get(key, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise RequestError(f"'{key}' must be true or false", key)
    return value


def _completion_prompt(body: dict[str, Any]) -> tuple[str | None, tuple[int, ...] | None]:
    if "prompt" not in body:
        raise RequestError("'prompt' is required", "prompt")
    prompt = body["prompt"]
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str | list):
        prompt = prompt[0]  # a batch of one
    if isinstance(prompt, str):
        return _bounded(prompt), None
    if isinstance(prompt, list) and len(prompt) > MAX_PROMPT_TOKENS:
        raise RequestError(f"'prompt' has over {MAX_PROMPT_TOKENS} token ids", "prompt")
    if isinstance(prompt, list) and all(isinstance(t, int) and not isinstance(t, bool) and t >= 0
                                        for t in prompt):
        return None, tuple(prompt)
    raise RequestError("'prompt' must be a string or a list of token ids (batches of more than "
                       "one prompt are not supported)", "prompt")


def _bounded(text: str, param: str = "prompt") -> str:
    if len(text) > MAX_PROMPT_CHARS:
        raise RequestError(f"'{param}' is over {MAX_PROMPT_CHARS} characters", param)
    return text


def _chat_prompt(body: dict[str, Any]) -> tuple[str, None]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError("'messages' is required: a non-empty list of {role, content}", "messages")
    texts = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise RequestError(f"messages[{i}] must be an object with a 'role'", "messages")
        texts.append(_content_text(message.get("content"), i))
    return _bounded("\n".join(texts), "messages"), None


def _content_text(content: Any, i: int) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        if all(isinstance(p, str) for p in parts):
            return "".join(p for p in parts if isinstance(p, str))
    raise RequestError(f"messages[{i}].content must be a string or a list of text parts", "messages")


def _max_tokens(kind: str, body: dict[str, Any]) -> int | None:
    keys = ("max_completion_tokens", "max_tokens") if kind == CHAT else ("max_tokens",)
    for key in keys:
        value = body.get(key)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise RequestError(f"'{key}' must be an integer >= 1", key)
        if value > MAX_OUTPUT_TOKENS:
            raise RequestError(f"'{key}' is over {MAX_OUTPUT_TOKENS}, the most this server generates for "
                               f"one request", key)
        return value
    return None


def _stream_options(body: dict[str, Any]) -> tuple[bool, bool]:
    options = body.get("stream_options")
    if options is None:
        return False, False
    if not isinstance(options, dict):
        raise RequestError("'stream_options' must be an object", "stream_options")
    if not _flag(body, "stream"):
        raise RequestError("'stream_options' is allowed only with stream: true", "stream_options")
    return _flag(options, "include_usage"), _flag(options, "continuous_usage_stats")


def _logprobs(kind: str, body: dict[str, Any]) -> int | None:
    value = body.get("logprobs")
    if value is None or value is False:
        return None
    if kind == CHAT:
        if value is not True:
            raise RequestError("'logprobs' must be true or false", "logprobs")
        return 1
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise RequestError("'logprobs' must be an integer >= 0", "logprobs")
    return value
