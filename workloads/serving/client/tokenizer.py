"""The model's tokenizer, for counting output tokens when the server does not say (`--tokenizer`).

`load_tokenizer(NAME)` finds it on this machine only, never over the network:
- a folder holding `tokenizer.json` (a Hugging Face model folder), or that file itself;
- the name of a model already in the local Hugging Face cache (`org/name`: its snapshot's
  `tokenizer.json`, found under $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub);
- else, when `transformers` is installed, its AutoTokenizer with `local_files_only=True` and
  HF_HUB_OFFLINE=1 (a folder or cached model with only a slow tokenizer's files).
The `tokenizers` library reads `tokenizer.json` (fast, light); both libraries are imported here,
lazily, so the command line starts without them. Not found: a SpecError naming --tokenizer.

`TokenCounter.split(texts)` gives the output tokens each streamed chunk carried: the whole answer
is tokenized once and each token counts in the chunk where its last character arrived, so a
token whose characters span two chunks counts once, in the later one. The counts add up to the
tokenizer's count of the whole answer (as `tokens(text so far) - tokens(text before)` do) and
are never negative. A slow tokenizer (no offsets) counts prefixes: tokens(text so far), made
non-decreasing from the end, minus the count before.
"""

from __future__ import annotations

import functools
import os
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfkit.core.errors import SpecError

FILE = "tokenizer.json"
OPTION = "--tokenizer"


@dataclass(frozen=True)
class TokenCounter:
    name: str  # how token_source names it: tokenizer:NAME (a folder's name or the model's)
    encode: Callable[[str], Sequence[tuple[int, int]]] | None  # text -> each token's (start, end) chars
    count: Callable[[str], int]  # text -> its token count
    backend: Any = None  # the tokenizers.Tokenizer (None for a slow transformers tokenizer)

    @property
    def source(self) -> str:
        return f"tokenizer:{self.name}"

    def split(self, texts: Sequence[str]) -> list[int]:
        """Output tokens of each chunk of `texts` (the chunks of one answer, in order)."""
        if self.encode is None:
            return _prefix_split(self.count, texts)
        ends, at = [], 0
        for text in texts:
            at += len(text)
            ends.append(at)
        counts = [0] * len(texts)
        if not texts:
            return counts
        for _, end in self.encode("".join(texts)):
            counts[min(bisect_left(ends, max(end, 1)), len(texts) - 1)] += 1
        return counts


def _prefix_split(count: Callable[[str], int], texts: Sequence[str]) -> list[int]:
    so_far, totals = "", []
    for text in texts:
        so_far += text
        totals.append(count(so_far))
    for i in range(len(totals) - 2, -1, -1):  # a prefix that tokenizes longer than a later one
        totals[i] = min(totals[i], totals[i + 1])
    return [t - (totals[i - 1] if i else 0) for i, t in enumerate(totals)]


def hub_cache() -> Path:
    """Where Hugging Face keeps downloaded models on this machine."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]) / "hub"
    return Path.home() / ".cache" / "huggingface" / "hub"


def cached_file(name: str, cache: Path) -> Path | None:
    """`tokenizer.json` of model `name` (org/name) in the local cache: the snapshot refs/main
    names, else the newest snapshot that has one."""
    folder = cache / ("models--" + name.replace("/", "--"))
    ref = folder / "refs" / "main"
    if ref.is_file():
        path = folder / "snapshots" / ref.read_text().strip() / FILE
        if path.is_file():
            return path
    found = sorted((folder / "snapshots").glob(f"*/{FILE}"), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def _file_of(name: str) -> tuple[Path | None, str]:
    """(tokenizer.json to read or None, the counter's name)."""
    path = Path(name).expanduser()
    if path.is_file():
        return path, path.parent.name or path.stem
    if path.is_dir():
        return (path / FILE if (path / FILE).is_file() else None), path.resolve().name
    return cached_file(name, hub_cache()), name


def _not_found(name: str, why: str) -> SpecError:
    return SpecError(f"{OPTION} {name[:200]}: {why}; perfkit never downloads at run time: give a folder "
                     f"holding {FILE}, or fetch it once (huggingface-cli download MODEL {FILE})")


@functools.lru_cache(maxsize=8)
def load_tokenizer(name: str) -> TokenCounter:
    """The tokenizer `name` names (see the module's docstring); SpecError when not on this machine."""
    file, label = _file_of(name)
    if file is not None:
        return _from_file(name, file, label)
    try:
        import transformers  # noqa: F401
    except ImportError:
        where = "no such folder" if not Path(name).expanduser().is_dir() else f"no {FILE} in that folder"
        raise _not_found(name, f"{where}, and not in the local Hugging Face cache ({hub_cache()})") from None
    return _from_transformers(name, label)


def tokenizer_for(name: str | None) -> TokenCounter | None:
    """The counter of the option's value (loaded once per process), or None when none was given."""
    return load_tokenizer(name) if name else None


def _from_file(name: str, file: Path, label: str) -> TokenCounter:
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise SpecError(f"{OPTION} {name[:200]}: reading {FILE} needs the tokenizers library; "
                        "pip install 'perfkit[tokenizers]'") from None
    try:
        tok = Tokenizer.from_file(str(file))
    except Exception as exc:  # the library's own error for a file it cannot read (a Rust panic too)
        raise SpecError(f"{file}: not a tokenizer the tokenizers library reads ({str(exc)[:160]}); "
                        f"give {OPTION} a model folder with a valid {FILE}") from None
    return _fast(tok, label)


def _fast(tok: Any, label: str) -> TokenCounter:
    def offsets(text: str) -> Sequence[tuple[int, int]]:
        return tok.encode(text, add_special_tokens=False).offsets  # type: ignore[no-any-return]

    def count(text: str) -> int:
        return len(tok.encode(text, add_special_tokens=False).ids)

    return TokenCounter(label, offsets, count, tok)


def _from_transformers(name: str, label: str) -> TokenCounter:
    os.environ["HF_HUB_OFFLINE"] = "1"  # whatever the library tries, no network
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(name, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise _not_found(name, f"not found on this machine ({' '.join(str(exc).split())[:160]})") from None
    backend = getattr(tok, "backend_tokenizer", None)
    if backend is not None:
        return _fast(backend, label)

    def count(text: str) -> int:
        return len(tok.encode(text, add_special_tokens=False))

    return TokenCounter(label, None, count)
