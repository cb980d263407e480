"""The prompts of a load test: synthetic lengths, a ShareGPT-format file, or shared prefixes.

Synthetic prompts are common English words (one token each in the BPE vocabularies of Llama, GPT
and Qwen when written with a leading space) or, with `token_ids`, random token ids (exact input
length on servers that take token-id prompts: vLLM, SGLang, llama.cpp, perfkit serve). Lengths
are drawn per request from a distribution: a fixed number, `{dist: uniform, min, max}` or
`{dist: normal, mean, std}` (clipped to >= 1). The server's `usage` replaces the client's token
counts when it reports them. ShareGPT files (JSON array or JSON lines of `{"conversations":
[{"from": "human", "value": ...}, {"from": "gpt", "value": ...}]}`) give the first human turn as
the prompt and, unless an output length is set, about 4/3 tokens per word of the answer.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from perfkit.core.errors import SpecError
from perfkit.workloads.serving.client.send import Prompt

_WORDS_TEXT = (
    "the of and to in is it you that he was for on are as with his they at be this have from or one had by "
    "word but not what all were we when your can said there use an each which she do how their if will up "
    "other about out many then them these so some her would make like him into time has look two more write "
    "go see number no way could people my than first water been call who oil its now find long down day did "
    "get come made may part over new sound take only little work know place year live me back give most very "
    "after thing our just name good sentence man think say great where help through much before line right "
    "too mean old any same tell boy follow came want show also around form three small set put end does "
    "another well large must big even such because turn here why ask went men read need land different home "
    "us move try kind hand picture again change off play spell air away animal house point page letter mother"
)
WORDS = tuple(_WORDS_TEXT.split())
MAX_FILE_BYTES = 1024 * 1024 * 1024


@dataclass(frozen=True)
class Lengths:
    dist: str = "fixed"  # fixed | uniform | normal
    value: int = 128  # fixed
    low: int = 1  # uniform
    high: int = 1
    mean: float = 0.0  # normal
    std: float = 0.0

    def draw(self, rng: np.random.Generator, n: int) -> list[int]:
        if self.dist == "uniform":
            return rng.integers(self.low, self.high + 1, size=n).tolist()  # type: ignore[no-any-return]
        if self.dist == "normal":
            return [max(1, round(v)) for v in rng.normal(self.mean, self.std, size=n)]
        return [self.value] * n


def synthetic(n: int, inputs: Lengths, outputs: Lengths, seed: int, token_ids: bool = False,
              vocab_size: int = 32000) -> list[Prompt]:
    rng = np.random.default_rng(seed)
    ins, outs = inputs.draw(rng, n), outputs.draw(rng, n)
    return [_prompt(rng, i, o, token_ids, vocab_size) for i, o in zip(ins, outs, strict=True)]


def _prompt(rng: np.random.Generator, n_in: int, n_out: int, token_ids: bool, vocab_size: int) -> Prompt:
    if token_ids:
        return Prompt(rng.integers(1, vocab_size, size=n_in).tolist(), n_in, n_out)
    words = rng.choice(len(WORDS), size=n_in)
    return Prompt(" ".join(WORDS[w] for w in words), n_in, n_out)


def shared_prefix(n: int, groups: int, prefix_len: int, suffix: Lengths, outputs: Lengths, seed: int,
                  token_ids: bool = False, vocab_size: int = 32000) -> list[Prompt]:
    """Request i shares the prefix of group i % groups (prefix-cache workloads), then a unique suffix."""
    rng = np.random.default_rng(seed)
    prefixes = [_prompt(rng, prefix_len, 1, token_ids, vocab_size) for _ in range(max(groups, 1))]
    out = []
    for i, (s, o) in enumerate(zip(suffix.draw(rng, n), outputs.draw(rng, n), strict=True)):
        head, tail = prefixes[i % len(prefixes)], _prompt(rng, s, o, token_ids, vocab_size)
        if isinstance(head.text, list) and isinstance(tail.text, list):
            text: str | list[int] = head.text + tail.text
        else:
            text = f"{head.text} {tail.text}"
        out.append(Prompt(text, prefix_len + s, o))
    return out


def _estimate_tokens(text: str) -> int:
    return max(1, math.ceil(len(text.split()) * 4 / 3))


def read_sharegpt(path: str | Path, n: int, seed: int, output_len: int | None = None,
                  max_input_tokens: int = 1_000_000) -> list[Prompt]:
    """`n` prompts from a ShareGPT-format file (sampled with the seed, repeated when it has fewer)."""
    p = Path(path)
    try:
        if p.stat().st_size > MAX_FILE_BYTES:
            raise SpecError(f"{p}: dataset over 1 GiB; pass a smaller file")
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{p}: cannot read the dataset ({getattr(exc, 'strerror', None) or exc}); "
                        "pass a readable ShareGPT JSON or JSON-lines file") from None
    entries = _entries(p, text)
    pairs: list[tuple[str, int]] = []
    for entry in entries:
        turns = entry.get("conversations") if isinstance(entry, dict) else None
        if not isinstance(turns, list) or not turns:
            continue
        human = next((t.get("value") for t in turns if isinstance(t, dict) and t.get("from") in ("human", "user")), None)
        answer = next((t.get("value") for t in turns if isinstance(t, dict) and t.get("from") in ("gpt", "assistant")), None)
        if not isinstance(human, str) or not human.strip():
            continue
        if _estimate_tokens(human) > max_input_tokens:
            continue
        out_len = output_len or (_estimate_tokens(answer) if isinstance(answer, str) and answer.strip() else None)
        if out_len:
            pairs.append((human, out_len))
    if not pairs:
        raise SpecError(f"{p}: no usable conversations (a human turn and, without output_len, an answer); "
                        "pass a ShareGPT-format file")
    rng = np.random.default_rng(seed)
    picks = rng.choice(len(pairs), size=n, replace=len(pairs) < n)
    return [Prompt(pairs[i][0], _estimate_tokens(pairs[i][0]), pairs[i][1]) for i in picks]


def _entries(p: Path, text: str) -> Sequence[object]:
    stripped = text.lstrip()
    try:
        if stripped.startswith("["):
            data = json.loads(stripped)
            if isinstance(data, list):
                return data
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    except (ValueError, RecursionError):
        raise SpecError(f"{p}: not JSON or JSON lines; pass a ShareGPT-format file") from None
