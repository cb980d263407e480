"""`perfkit serve --synthetic --tokenizer PATH`: the synthetic answer made of a real tokenizer's tokens.

The words are the tokenizer's vocabulary entries that stand alone: decoded, stripped of spaces and
written as " word", each encodes to exactly one token. Joined in any order they re-encode to one
token per word as long as the tokenizer splits at spaces first (a whitespace or byte-level
pre-tokenizer, as GPT-2-style BPE and WordLevel tokenizers do); a sample is checked at load time.
So a client that tokenizes the streamed text with the same tokenizer must find exactly the tokens
the server sent: the truth of a token-counting test.
"""

from __future__ import annotations

from perfkit.core.errors import SpecError
from perfkit.workloads.serving.client.tokenizer import load_tokenizer

MAX_WORDS = 4096  # words kept (the first in id order): enough variety, a fast start for big vocabularies
CHECK = 256  # words joined in the load-time check


def token_texts(name: str) -> tuple[str, ...]:
    """The single-token words of tokenizer `name` (a folder or tokenizer.json; client.tokenizer)."""
    counter = load_tokenizer(name)
    tok = counter.backend
    if tok is None:
        raise SpecError(f"--tokenizer {name[:200]}: needs a fast tokenizer (tokenizer.json), not a slow one")
    words: dict[str, None] = {}
    for token_id in sorted(tok.get_vocab().values()):
        word = tok.decode([token_id]).strip()
        if not word or any(c.isspace() for c in word) or "\ufffd" in word:
            continue
        text = " " + word
        if text not in words and len(tok.encode(text, add_special_tokens=False).ids) == 1:
            words[text] = None
            if len(words) >= MAX_WORDS:
                break
    found = tuple(words)
    sample = [found[(i * 7) % len(found)] for i in range(CHECK)] if found else []
    if not found or counter.count("".join(sample)) != len(sample):
        raise SpecError(f"--tokenizer {name[:200]}: its tokens do not re-encode one by one when joined "
                        "(no single-token words, or a pre-tokenizer that does not split at spaces); use a "
                        "tokenizer with a whitespace or byte-level pre-tokenizer")
    return found
