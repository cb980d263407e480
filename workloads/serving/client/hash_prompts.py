"""Prompts that reproduce a Mooncake trace's prefix reuse, and the reuse the trace asks for.

Each hash id stands for one fixed block of `block_size` tokens, drawn from the id and the run's
seed alone; a request's prompt is its blocks' tokens, concatenated and cut to its input length.
Two requests whose leading hash ids agree therefore begin with exactly those blocks' tokens, and
their prompts part at the first id that differs: a block's first token is (id + a seed offset)
modulo the vocabulary, so two ids closer than the vocabulary size never start alike. As token
ids (`prompts.token_ids`, vocabulary 1 .. vocab_size - 1) or as text, one common word per token
(client/prompts.py's words).

Asked reuse: request i can be served from a prefix cache for the longest prefix any earlier
request (in arrival order) shares with it: k leading hash ids in common give min(k * block_size,
both input lengths) tokens. Its share of the prompt tokens is what the trace asks of the cache.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from perfkit.workloads.serving.client.arrivals import Arrival
from perfkit.workloads.serving.client.prompts import WORDS
from perfkit.workloads.serving.client.send import Prompt

_MASK = np.uint64(0xFFFFFFFFFFFFFFFF)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, element-wise on uint64 (wraps as it should)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return (x ^ (x >> np.uint64(31))) & _MASK


def block_tokens(hash_ids: Sequence[int], n_tokens: int, block_size: int, seed: int, vocab: int) -> np.ndarray:
    """The first `n_tokens` token values (0 .. vocab - 1) of the blocks of `hash_ids`."""
    pos = np.arange(n_tokens, dtype=np.uint64)
    ids = np.asarray(hash_ids, dtype=np.uint64)[(pos // np.uint64(block_size)).astype(np.int64)]
    offset = np.array([seed & 0xFFFFFFFF], dtype=np.uint64)  # arrays wrap silently, scalars warn
    key = _mix(ids * np.uint64(0x9E3779B97F4A7C15) + _mix(offset + np.uint64(1)))
    values = _mix(key ^ (pos % np.uint64(block_size)) * np.uint64(0xD1B54A32D192ED03)) % np.uint64(vocab)
    starts = pos % np.uint64(block_size) == 0  # a block's first token: distinct ids, distinct tokens
    values[starts] = (ids[starts] + offset) % np.uint64(vocab)
    return values


def hash_prompt(a: Arrival, block_size: int, seed: int, token_ids: bool, vocab_size: int) -> Prompt:
    """The prompt of one trace request (its hash ids' blocks, cut to its input length)."""
    assert a.hash_ids is not None and a.input_tokens is not None and a.output_tokens is not None
    if token_ids:
        values = block_tokens(a.hash_ids, a.input_tokens, block_size, seed, vocab_size - 1) + np.uint64(1)
        return Prompt(values.tolist(), a.input_tokens, a.output_tokens)
    values = block_tokens(a.hash_ids, a.input_tokens, block_size, seed, len(WORDS))
    return Prompt(" ".join(WORDS[int(v)] for v in values), a.input_tokens, a.output_tokens)


def warmup_prompt(n_tokens: int, token_ids: bool) -> Prompt:
    """A warm-up prompt no trace prompt begins like (token id 0 / a word outside the blocks' list),
    so warming up puts nothing the trace asks for in the server's cache."""
    return Prompt([0] * n_tokens, n_tokens, 1) if token_ids else Prompt(" ".join(["warm"] * n_tokens), n_tokens, 1)


class _Node:
    """A prefix of hash ids some request had: its next ids, and the longest input that had it."""

    __slots__ = ("children", "longest")

    def __init__(self, longest: int) -> None:
        self.children: dict[int, _Node] = {}
        self.longest = longest


def asked_reuse_tokens(arrivals: Sequence[Arrival], block_size: int) -> list[int]:
    """Per request (in order): the prompt tokens an earlier request shares with it (see above)."""
    root = _Node(0)
    out = []
    for a in arrivals:
        assert a.hash_ids is not None and a.input_tokens is not None
        node, shared = root, 0
        for k, h in enumerate(a.hash_ids, 1):
            child = node.children.get(h)
            if child is None:
                child = node.children[h] = _Node(a.input_tokens)
            else:
                shared = min(k * block_size, a.input_tokens, child.longest)
                child.longest = max(child.longest, a.input_tokens)
            node = child
        out.append(shared)
    return out
