"""`perfkit serve --synthetic --tokenizer PATH --no-usage`: the answer is made of a real tokenizer's
single-token words (so re-tokenizing the streamed text gives back exactly the tokens sent), and no
usage is streamed whatever stream_options asks."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest

from perfkit.core.errors import SpecError
from perfkit.workloads.serving.client.tokenizer import load_tokenizer
from perfkit.workloads.serving.server.options import ServeOptions, SyntheticOptions
from perfkit.workloads.serving.server.token_texts import token_texts
from tests.helpers.serving_server import post, served
from tests.helpers.tiny_tokenizer import tiny_tokenizer

pytest.importorskip("tokenizers")


def test_words_are_single_tokens_that_join_without_merging(tmp_path: Path) -> None:
    folder = tiny_tokenizer(tmp_path / "tk")
    words = token_texts(str(folder))
    tok = load_tokenizer(str(folder))
    assert len(words) >= 20 and all(w.startswith(" ") and tok.count(w) == 1 for w in words)
    assert tok.count("".join(words)) == len(words) and tok.count("".join(reversed(words))) == len(words)


def test_a_tokenizer_that_merges_across_spaces_is_refused(tmp_path: Path) -> None:
    folder = tiny_tokenizer(tmp_path / "merging", split_at_spaces=False)
    with pytest.raises(SpecError, match="do not re-encode one by one"):
        token_texts(str(folder))


@pytest.mark.slow
def test_the_stream_carries_those_words_k_per_chunk_and_no_usage(tmp_path: Path) -> None:
    folder = tiny_tokenizer(tmp_path / "tk")
    words = token_texts(str(folder))
    mode = SyntheticOptions(ttft_s=0.001, itl_s=0.001, tokens_per_chunk=(4,), token_texts=words)
    body = {"model": "m", "prompt": "hi", "max_tokens": 13, "stream": True, "ignore_eos": True,
            "stream_options": {"include_usage": True, "continuous_usage_stats": True}}

    async def scenario(options: ServeOptions) -> list[dict[str, object]]:
        async with served(options) as url:
            return (await post(url, "/v1/completions", body)).chunks()

    quiet = asyncio.run(scenario(ServeOptions(mode=mode, usage=False)))
    texts = [c["choices"][0]["text"] for c in quiet]  # type: ignore[index]
    assert all("usage" not in c for c in quiet) and len(texts) == 4  # 1 + 4 + 4 + 4 tokens
    assert [load_tokenizer(str(folder)).count(t) for t in texts] == [1, 4, 4, 4]
    assert all(w in words for t in texts for w in (" " + x for x in t.split()))
    told = asyncio.run(scenario(ServeOptions(mode=replace(mode), usage=True)))
    assert told[-1]["usage"]["completion_tokens"] == 13  # type: ignore[index]
