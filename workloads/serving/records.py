"""What one load-test request recorded, and how its output tokens were counted.

Times are seconds on the client's monotonic clock, relative to the start of the stage (the
first scheduled arrival is at or after 0). Each output token has its own arrival time: a chunk
that carries k tokens gives k equal times (so a gap is shared by the k tokens, never counted
once per chunk). Role-only and empty chunks add no token and no time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Where a request's per-chunk token counts came from, best first.
TOKENS_FROM_USAGE = "usage"  # stream_options.continuous_usage_stats: completion_tokens per chunk
TOKENS_FROM_LOGPROBS = "logprobs"  # one logprob entry per token
TOKENS_FROM_IDS = "token_ids"  # the server's token ids per chunk
TOKENS_FROM_TOKENIZER = "tokenizer:"  # + its name: the client tokenized the streamed text (--tokenizer)
TOKENS_FROM_CHUNKS = "chunks"  # nothing said: one token per content chunk (gaps are chunk gaps)
TOKEN_SOURCES = (TOKENS_FROM_USAGE, TOKENS_FROM_LOGPROBS, TOKENS_FROM_IDS, TOKENS_FROM_CHUNKS)

# Where a request's reasoning token count came from: the server's
# usage.completion_tokens_details.reasoning_tokens, else the per-chunk counts (of `token_source`)
# of the chunks that carried reasoning text only
REASONING_FROM_DETAILS = "completion_tokens_details"
REASONING_FROM_CHUNKS = "per_chunk"


@dataclass(frozen=True)
class RequestRecord:
    index: int  # order of scheduling within the stage
    scheduled_s: float  # when the load plan wanted it sent (arrival time)
    sent_s: float | None = None  # when the request left the client (None: never sent)
    token_times_s: tuple[float, ...] = ()  # arrival of every output token (see above)
    chunk_times_s: tuple[float, ...] = ()  # arrival of every chunk that carried tokens
    chunk_tokens: tuple[int, ...] = ()  # tokens in each of those chunks
    # when the kernel received the read that carried each of those chunks (client/rx_stamps.py;
    # same clock and origin); () where the reads were not stamped
    chunk_rx_s: tuple[float, ...] = ()
    end_s: float | None = None  # the stream's end ([DONE] or close) as received
    input_tokens: int = 0  # prompt tokens (the server's usage when given, else the client's count)
    output_tokens: int = 0  # generated tokens (usage when given, else the count of token_times_s)
    token_source: str = TOKENS_FROM_CHUNKS
    error: str | None = None  # why the request failed (None: it succeeded)
    # server-side stamps or timings a server attached (perfkit serve: "sent_s" per chunk;
    # llama.cpp: its `timings` block), kept as given
    server: dict[str, object] = field(default_factory=dict)
    dropped: tuple[str, ...] = ()  # server numbers left out, one reason each (client.bounds); not in the file
    # in flight while the server's profiler ran (serve-bench --profile): measured, kept in the
    # per-request file, left out of the stage's latency numbers
    in_profile_window: bool = False
    # the output length the request demanded: max_tokens when it sent ignore_eos, else min_tokens
    # when it sent one; None when the server may stop early (measurements/validity.py checks it)
    expected_output_tokens: int | None = None
    # multi-turn sessions (client/sessions.py): the session and the turn (0 first) of the request;
    # None for a request of a plain stage
    session_id: int | None = None
    turn: int | None = None
    # prompt tokens the server said it served from its cache (usage.prompt_tokens_details
    # .cached_tokens); None when it did not say (never 0 for "not said")
    cached_tokens: int | None = None
    # the generated text of each chunk in chunk_times_s, kept only while its tokens wait to be
    # counted by the tokenizer after the stage (client/token_count.py); () once counted, never stored
    chunk_texts: tuple[str, ...] = ()
    # of each of those texts, how many leading characters are reasoning text (delta.reasoning_content /
    # delta.reasoning), so the tokenizer counts the reasoning tokens too; () with chunk_texts
    chunk_reasoning_chars: tuple[int, ...] = ()
    # reasoning models (client/chunks.py): arrival of the first chunk with answer text (chat
    # `delta.content`, completions `text`, tool calls; not `delta.reasoning_content` /
    # `delta.reasoning`); the reasoning tokens among output_tokens, and where that count came from
    # (REASONING_FROM_*; None: the stream said nothing of reasoning)
    first_answer_s: float | None = None
    reasoning_tokens: int = 0
    reasoning_source: str | None = None
    # the LoRA adapter the request named (serve-bench --lora; client/lora.py); None: the base model
    adapter: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.sent_s is not None and bool(self.token_times_s)

    @property
    def ttft_s(self) -> float | None:
        """First output token minus send (vLLM's TTFT)."""
        if not self.ok or self.sent_s is None:
            return None
        return self.token_times_s[0] - self.sent_s

    @property
    def e2e_s(self) -> float | None:
        """Last output token minus send."""
        if not self.ok or self.sent_s is None:
            return None
        return self.token_times_s[-1] - self.sent_s

    @property
    def ttfa_s(self) -> float | None:
        """First answer token minus send (time to first answer token; TTFT when nothing reasoned);
        None when the request failed or no answer came (the reasoning took every token)."""
        if not self.ok or self.sent_s is None or self.first_answer_s is None:
            return None
        return self.first_answer_s - self.sent_s

    @property
    def answer_tokens(self) -> int:
        """Output tokens that are not reasoning tokens."""
        return max(self.output_tokens - self.reasoning_tokens, 0)
