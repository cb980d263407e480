"""Send one streamed request to an OpenAI-compatible server and time every token it returns.

One pooled keep-alive aiohttp session per stage (`open_session`); each request records when it
was sent, when every chunk that carried tokens arrived (monotonic clock, relative to the stage's
t0) and how many tokens each carried (perfkit.workloads.serving.client.chunks). A request never raises:
an unreachable server, an HTTP error, a stream closed early, malformed SSE, an oversized event or
a stream that never ends (timeouts) becomes the record's `error`, and the load test goes on.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from yarl import URL

from perfkit.core.terminal import terminal_safe
from perfkit.workloads.serving.client.bounds import (
    clean_stamps,
    final_count_problem,
    output_limit,
    over_limit,
    prompt_count,
)
from perfkit.workloads.serving.client.chunks import cached_tokens, chunk_kinds, read_chunk
from perfkit.workloads.serving.client.lora import wire_model
from perfkit.workloads.serving.client.rx_stamps import (
    PieceStamps,
    StampingConnector,
    connection_socket,
    keep_stamping_on,
    stamped_socket,
)
from perfkit.workloads.serving.client.sse import MAX_EVENT_BYTES, SseError, SseParser
from perfkit.workloads.serving.client.url import redact_urls, same_origin
from perfkit.workloads.serving.records import (
    REASONING_FROM_CHUNKS,
    REASONING_FROM_DETAILS,
    TOKEN_SOURCES,
    TOKENS_FROM_CHUNKS,
    TOKENS_FROM_USAGE,
    RequestRecord,
)

APIS = ("completions", "chat")
UNSENT_RETRIES = 3  # a request that never reached the server (a closed keep-alive connection)
MAX_REDIRECTS = 5
CLIENT_BUG = "client could not read the response"
REDIRECTS = frozenset({301, 302, 303, 307, 308})


@dataclass(frozen=True)
class ClientOptions:
    base_url: str  # http://host:port[/prefix] (the /v1/... path is added; client.url)
    model: str
    api: str = "completions"
    connect_timeout_s: float = 10.0  # establishing the connection
    read_timeout_s: float = 60.0  # the longest wait for the next piece of a stream
    request_timeout_s: float = 600.0  # a whole request, first byte to last
    ignore_eos: bool = True  # generate exactly max_tokens (vLLM, SGLang, llama.cpp honour it)
    usage: bool = True  # ask for stream_options include_usage + continuous_usage_stats
    logprobs: bool = False  # ask for one logprob per token (a token count where usage is absent)
    extra_body: dict[str, Any] = field(default_factory=dict)  # merged into every request body
    headers: dict[str, str] = field(default_factory=dict)  # e.g. Authorization
    max_event_bytes: int = MAX_EVENT_BYTES
    follow_redirects: bool = False  # follow a redirect to another origin (same origin: always)
    # count tokens from the text with this tokenizer when the server says nothing (client.tokenizer)
    tokenizer: str | None = None
    lora_format: str = "vllm"  # how a prompt's adapter is named in `model` (client/lora.py)

    @property
    def path(self) -> str:
        return "/v1/chat/completions" if self.api == "chat" else "/v1/completions"

    @property
    def url(self) -> str:
        return self.base_url + self.path


@dataclass(frozen=True)
class Prompt:
    text: str | list[int]  # a string, or token ids (completions only)
    input_tokens: int  # the client's count (the server's usage replaces it when given)
    output_tokens: int  # max_tokens asked for
    # a session's earlier turns, (role, content) in order, sent before `text` (client/sessions.py):
    # chat: as messages; completions: their contents and `text` joined by newlines
    history: tuple[tuple[str, str], ...] = ()
    adapter: str | None = None  # the LoRA adapter the request names (client/lora.py); None: the base model


def expected_output(body: dict[str, Any]) -> int | None:
    """The output length a request body demands: max_tokens with ignore_eos, else min_tokens when
    sent; None when the server may stop early."""
    for key, flag in (("max_tokens", body.get("ignore_eos") is True), ("min_tokens", True)):
        value = body.get(key)
        if flag and isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def request_body(opts: ClientOptions, prompt: Prompt) -> dict[str, Any]:
    body: dict[str, Any] = {"model": opts.model, "max_tokens": prompt.output_tokens, "stream": True}
    if opts.api == "chat":
        text = prompt.text if isinstance(prompt.text, str) else " ".join(map(str, prompt.text))
        body["messages"] = [*({"role": r, "content": c} for r, c in prompt.history),
                            {"role": "user", "content": text}]
        if opts.logprobs:
            body["logprobs"] = True
    else:
        body["prompt"] = prompt.text
        if prompt.history and isinstance(prompt.text, str):
            body["prompt"] = "\n".join([*(c for _, c in prompt.history), prompt.text])
        if opts.logprobs:
            body["logprobs"] = 1
    if opts.ignore_eos:
        body["ignore_eos"] = True
    if opts.usage:
        body["stream_options"] = {"include_usage": True, "continuous_usage_stats": True}
    if prompt.adapter is not None:
        body["model"] = wire_model(opts.model, prompt.adapter, opts.lora_format)
    body.update(opts.extra_body)
    return body


async def _headers_sent(session: aiohttp.ClientSession, ctx: Any, params: Any) -> None:
    """aiohttp's trace hook: the request's headers are on the socket (the body follows at once)."""
    rec = ctx.trace_request_ctx
    if isinstance(rec, _Recorder):
        rec.sent_s = time.monotonic() - rec.t0


def open_session(opts: ClientOptions, connections: int) -> aiohttp.ClientSession:
    """One keep-alive connection pool for a stage (`connections`: the most requests in flight).
    A request's send time is when aiohttp wrote its headers (its own overhead before is left out)."""
    connector = _stamping(limit=max(connections, 1), force_close=False, enable_cleanup_closed=True)
    timeout = aiohttp.ClientTimeout(total=opts.request_timeout_s, sock_connect=opts.connect_timeout_s,
                                    sock_read=opts.read_timeout_s)
    trace = aiohttp.TraceConfig()
    trace.on_request_headers_sent.append(_headers_sent)
    return aiohttp.ClientSession(connector=connector, timeout=timeout,
                                 headers=opts.headers, auto_decompress=False, trace_configs=[trace])


def _stamping(**kwargs: Any) -> aiohttp.TCPConnector:
    """A connector whose sockets keep the kernel's receive stamps (client/rx_stamps.py), where this
    aiohttp takes a socket factory (3.12 and later); a plain one elsewhere."""
    import inspect

    if "socket_factory" in inspect.signature(aiohttp.TCPConnector.__init__).parameters:
        keep_stamping_on()
        return StampingConnector(socket_factory=stamped_socket, **kwargs)
    return aiohttp.TCPConnector(**kwargs)


class _Recorder:
    """What a request has received so far; `record` turns it into a RequestRecord."""

    def __init__(self, index: int, scheduled_s: float, prompt: Prompt, t0: float,
                 expected: int | None = None, keep_text: bool = False) -> None:
        self.index, self.scheduled_s, self.prompt, self.t0 = index, scheduled_s, prompt, t0
        self.expected, self.keep_text = expected, keep_text
        self.texts: list[str] = []  # each chunk's text, for the tokenizer (keep_text)
        self.reasoning_chars: list[int] = []  # the leading reasoning characters of each of those texts
        self.sent_s: float | None = None
        self.end_s: float | None = None
        self.token_times: list[float] = []
        self.chunk_times: list[float] = []
        self.chunk_tokens: list[int] = []
        self.chunk_rx: list[float | None] = []  # the kernel's receive stamp of each (client/rx_stamps.py)
        self.sources: set[str] = set()
        self.completion: int | None = None
        self.prompt_tokens: int | None = None
        self.server: dict[str, Any] = {}
        self.done = False
        self.limit = output_limit(prompt.output_tokens)
        self.text_chunks = 0  # chunks that carried generated text
        self.dropped: list[str] = []  # server numbers left out, with the reason (client.bounds)
        self.cached: int | None = None  # usage.prompt_tokens_details.cached_tokens, when said
        self.answer: list[str] | None = None  # the generated text, collected when asked (sessions)
        self.first_answer: float | None = None  # the first chunk with answer text (reasoning models)
        self.reasoned = False  # some chunk carried reasoning text
        self.reasoning_counted = 0  # tokens of the chunks that carried reasoning text only
        self.reasoning_details: int | None = None  # the server's usage...reasoning_tokens

    def chunk(self, payload: Any, t: float, rx: float | None = None) -> str | None:
        """Apply one chunk; the request's failure when the chunk cannot be believed (client.bounds)."""
        if not isinstance(payload, dict):
            return "malformed SSE: a data line that is not a JSON object"
        # the cumulative count so far: the server's usage, else the tokens counted from other sources
        info = read_chunk(payload, self.completion if self.completion is not None else len(self.token_times))
        if info.completion_tokens is not None:
            problem = over_limit(info.completion_tokens, self.limit, "usage.completion_tokens claims")
            if problem:
                return problem
            self.completion = max(info.completion_tokens, self.completion or 0)
        if info.prompt_tokens is not None:
            kept, why = prompt_count(info.prompt_tokens)
            self.prompt_tokens = kept if kept is not None else self.prompt_tokens
            if why:
                self.dropped.append(why)
        cached = cached_tokens(payload)
        if cached is not None:
            self.cached = cached
        if self.answer is not None:
            self.answer.append(answer_text(payload))
        if info.stamps:
            kept_stamps, dropped = clean_stamps(info.stamps)
            self.dropped.extend(dropped)
            for key, value in kept_stamps.items():
                self.server.setdefault(key, []).append(value)
        if info.error:
            return f"server error in stream: {info.error}"
        self.text_chunks += info.text
        if info.tokens > 0:
            problem = over_limit(len(self.token_times) + info.tokens, self.limit, f"the chunks ({info.source}) claim")
            if problem:
                return problem
            self.sources.add(info.source)
            self.chunk_times.append(t)
            self.chunk_rx.append(rx)
            self.chunk_tokens.append(info.tokens)
            self.token_times.extend([t] * info.tokens)
            if self.keep_text:
                self.texts.append(info.content)
                self.reasoning_chars.append(info.reasoning_chars)
        self._kinds(payload, info.tokens, t)
        return None

    def _kinds(self, payload: dict[str, Any], tokens: int, t: float) -> None:
        """Answer or reasoning: the first answer's time, the reasoning tokens (client.chunks)."""
        kinds = chunk_kinds(payload)
        if kinds.reasoning_tokens is not None:
            self.reasoning_details = max(kinds.reasoning_tokens, self.reasoning_details or 0)
        if kinds.answer:  # a chunk with both (the thinking's end) is the answer's start
            self.first_answer = t if self.first_answer is None else self.first_answer
        elif kinds.reasoning:
            self.reasoning_counted += tokens
        self.reasoned = self.reasoned or kinds.reasoning

    def _reasoning(self, out_tokens: int) -> tuple[int, str | None]:
        """(reasoning tokens, their source): the server's usage details when they fit within the
        output tokens, else the per-chunk count when any chunk carried reasoning."""
        if self.reasoning_details is not None:
            if self.reasoning_details <= out_tokens:
                return self.reasoning_details, REASONING_FROM_DETAILS
            self.dropped.append("usage.completion_tokens_details.reasoning_tokens over completion_tokens")
        return self.reasoning_counted, REASONING_FROM_CHUNKS if self.reasoned else None

    def record(self, error: str | None) -> RequestRecord:
        if error is None and not self.token_times:
            error = "no output tokens: the stream ended before any token"
        if error is None and not self.done:
            error = "stream closed before [DONE]"
        if error is None:
            error = final_count_problem(self.completion, len(self.token_times), self.text_chunks,
                                        TOKENS_FROM_USAGE in self.sources)
        if error is not None:  # a server's text: no credentials, no terminal escapes, one line
            error = terminal_safe(redact_urls(" ".join(error.split())))[:400]
        source = next((s for s in reversed(TOKEN_SOURCES) if s in self.sources), TOKENS_FROM_CHUNKS)
        out_tokens = self.completion if self.completion is not None else len(self.token_times)
        # counted by chunks, texts kept: the tokenizer recounts them after the stage (token_count.py);
        # until then the source says whether the total is the server's (its final usage)
        texts = tuple(self.texts) if self.keep_text and self.sources == {TOKENS_FROM_CHUNKS} else ()
        if texts and self.completion is not None:
            source = TOKENS_FROM_USAGE
        cached = self._cached()
        reasoning, reasoning_source = self._reasoning(out_tokens)
        return RequestRecord(
            index=self.index, scheduled_s=self.scheduled_s, sent_s=self.sent_s,
            token_times_s=tuple(self.token_times), chunk_times_s=tuple(self.chunk_times),
            chunk_tokens=tuple(self.chunk_tokens), chunk_rx_s=self._rx(), end_s=self.end_s,
            input_tokens=self.prompt_tokens if self.prompt_tokens is not None else self.prompt.input_tokens,
            output_tokens=out_tokens, token_source=source, error=error, server=self.server,
            dropped=tuple(self.dropped), expected_output_tokens=self.expected, cached_tokens=cached,
            chunk_texts=texts, chunk_reasoning_chars=tuple(self.reasoning_chars) if texts else (),
            first_answer_s=self.first_answer, reasoning_tokens=reasoning,
            reasoning_source=reasoning_source, adapter=self.prompt.adapter)

    def _rx(self) -> tuple[float, ...]:
        """The chunks' receive stamps, () unless every chunk has one."""
        rx = tuple(t for t in self.chunk_rx if t is not None)
        return rx if len(rx) == len(self.chunk_times) else ()

    def _cached(self) -> int | None:
        """The server's cached prompt tokens, when said and not above its prompt count."""
        if self.cached is None or self.prompt_tokens is None or self.cached <= self.prompt_tokens:
            return self.cached
        self.dropped.append("usage.prompt_tokens_details.cached_tokens above usage.prompt_tokens")
        return None


def answer_text(payload: dict[str, Any]) -> str:
    """The answer text a chunk carried (completions: `text`; chat: `delta.content`)."""
    choices = payload.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    delta = choice.get("delta")
    text = delta.get("content") if isinstance(delta, dict) else choice.get("text")
    return text if isinstance(text, str) else ""


async def send(session: aiohttp.ClientSession, opts: ClientOptions, index: int, scheduled_s: float,
               prompt: Prompt, t0: float, answer: list[str] | None = None) -> RequestRecord:
    """Send one request; every failure is the record's error (the load test goes on).

    A pooled keep-alive connection the server closed meanwhile (llama.cpp's server closes them
    after its keep-alive timeout or request count) fails before the request reaches the server:
    such a request is sent again (at most UNSENT_RETRIES times: the next pooled connection may be
    closed too), timed from its last send. `answer`, when given, receives the generated text.
    """
    fields = request_body(opts, prompt)
    body = json.dumps(fields).encode()
    for attempt in range(UNSENT_RETRIES + 1):
        rec = _Recorder(index, scheduled_s, prompt, t0, expected_output(fields), opts.tokenizer is not None)
        if answer is not None:
            answer.clear()
            rec.answer = answer
        error, unsent = await _attempt(session, opts, rec, body, t0)
        if not unsent or attempt == UNSENT_RETRIES:
            break
    if rec.end_s is None:
        rec.end_s = time.monotonic() - t0
    return rec.record(error)


async def _attempt(session: aiohttp.ClientSession, opts: ClientOptions, rec: _Recorder, body: bytes,
                   t0: float) -> tuple[str | None, bool]:
    """(error or None, whether the request never reached the server on a reused connection)."""
    answered = False
    url = opts.url
    try:
        for _ in range(MAX_REDIRECTS + 1):
            rec.sent_s = time.monotonic() - t0  # replaced when the headers are written (_headers_sent)
            async with session.post(url, data=body, headers={"Content-Type": "application/json"},
                                    trace_request_ctx=rec, allow_redirects=False) as resp:
                answered = True
                if resp.status in REDIRECTS:
                    url = _redirect_target(resp, url, opts)
                    continue
                if resp.status != 200:
                    text = (await resp.content.read(300)).decode("utf-8", "replace").strip().splitlines()
                    raise _Failed(f"HTTP {resp.status}: {text[0][:200] if text else resp.reason}")
                await _read_stream(resp, rec, opts, t0)
                return None, False
        raise _Failed(f"more than {MAX_REDIRECTS} redirects")
    except _Failed as exc:
        return str(exc), False
    except asyncio.TimeoutError:
        return "timeout: no data within the read timeout, or the request took longer than its limit", False
    except aiohttp.ClientConnectorError as exc:
        return f"unreachable: {exc.os_error.strerror if exc.os_error else exc}", False
    except aiohttp.ClientPayloadError:
        return "stream closed mid-response", False
    except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
        return f"connection: {type(exc).__name__}: {str(exc)[:160]}", not answered
    except (aiohttp.ClientError, OSError, ValueError) as exc:
        return f"connection: {type(exc).__name__}: {str(exc)[:160]}", False
    except (ArithmeticError, LookupError, TypeError, RecursionError, MemoryError) as exc:
        # a response no rule above foresaw: this request fails, never the stage (serving_fuzz counts these)
        return f"{CLIENT_BUG}: {type(exc).__name__}: {str(exc)[:160]}", False


def _redirect_target(resp: aiohttp.ClientResponse, url: str, opts: ClientOptions) -> str:
    """Where a redirect points; one to another server (scheme, host or port) is refused unless
    the user asked to follow it: it would measure, and send the prompts to, another server."""
    location = resp.headers.get("Location")
    if not location:
        raise _Failed(f"HTTP {resp.status}: a redirect without a Location")
    try:
        target = str(resp.url.join(URL(location)))
    except ValueError:
        raise _Failed(f"HTTP {resp.status}: a redirect to a Location that is not a URL") from None
    if not same_origin(url, target) and not opts.follow_redirects:
        raise _Failed(f"HTTP {resp.status}: redirected to another server ({redact_urls(target)[:120]}); "
                      f"refused: pass --follow-redirects to measure that server")
    return target


class _Failed(Exception):
    pass


async def _read_stream(resp: aiohttp.ClientResponse, rec: _Recorder, opts: ClientOptions, t0: float) -> None:
    parser = SseParser(opts.max_event_bytes)
    sock = connection_socket()
    stamps = PieceStamps(sock, t0) if sock is not None else None
    try:
        async for piece in resp.content.iter_any():
            t = time.monotonic() - t0
            if _events(parser.feed(piece), rec, t, stamps.next_s() if stamps is not None else None):
                rec.end_s = t
                return
        _events(parser.close(), rec, time.monotonic() - t0, stamps.next_s() if stamps is not None else None)
    except SseError as exc:
        raise _Failed(f"malformed SSE: {exc}") from None
    if not rec.done:
        raise _Failed("stream closed before [DONE]")


def _events(payloads: list[str], rec: _Recorder, t: float, rx: float | None = None) -> bool:
    """Apply the events (read at t, received by the kernel at rx); True once [DONE] came."""
    for data in payloads:
        if data.strip() == "[DONE]":
            rec.done = True
            return True
        try:
            payload = json.loads(data, parse_constant=_no_constant)
        except ValueError:
            raise _Failed("malformed SSE: a data line that is not JSON") from None
        except RecursionError:
            raise _Failed("malformed SSE: a data line nested too deeply") from None
        problem = rec.chunk(payload, t, rx)
        if problem:
            raise _Failed(problem)
    return False


def _no_constant(name: str) -> None:
    """NaN, Infinity and -Infinity in a chunk read as absent (JSON has no such numbers)."""
    return None
