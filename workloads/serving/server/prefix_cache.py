"""The synthetic server's prefix cache: how many leading tokens of a prompt an earlier prompt had.

Keyed by token ids (a text prompt's ids from the server's tokenizer): every prefix of every prompt
admitted is remembered by a chained hash (the hash of prefix i+1 is the hash of (prefix i's hash,
token i+1)), so a prompt's cached tokens are the longest prefix any earlier prompt shared, found
in one pass. Token granularity (vLLM and SGLang cache whole blocks, so they report a multiple of
their block size); a prompt is remembered whole, and the cache forgets everything once it holds
`max_entries` prefixes (no partial chains). The number is what the server reports as
`usage.prompt_tokens_details.cached_tokens`; nothing is faster for a hit (timing is the engine's).
"""

from __future__ import annotations

from collections.abc import Sequence

MAX_ENTRIES = 1_000_000  # prefixes remembered (about 70 MB at most) before the cache is emptied


class PrefixCache:
    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._seen: set[int] = set()

    def admit(self, ids: Sequence[int]) -> int:
        """The tokens of `ids` an earlier prompt began with; then `ids` is remembered."""
        chain: list[int] = []
        h = 0
        cached = 0
        for token in ids:
            h = hash((h, token))
            chain.append(h)
            if cached == len(chain) - 1 and h in self._seen:
                cached += 1
        if len(self._seen) + len(chain) - cached > self.max_entries:
            self._seen.clear()
        self._seen.update(chain[cached:] if len(self._seen) else chain)
        return cached
