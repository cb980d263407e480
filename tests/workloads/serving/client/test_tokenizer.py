"""The client's tokenizer (--tokenizer): found on this machine only (a folder, its tokenizer.json,
a model in a local Hugging Face cache laid out as huggingface_hub writes it), a one-line error
naming the option otherwise, and each chunk's token count from a real trained BPE tokenizer."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from perfkit.core.errors import SpecError
from perfkit.workloads.serving.client.tokenizer import TokenCounter, load_tokenizer, tokenizer_for
from tests.helpers.tiny_tokenizer import tiny_tokenizer

pytest.importorskip("tokenizers")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return tiny_tokenizer(tmp_path / "tiny-bpe")


def test_folder_file_and_cached_name_give_the_same_counts(folder: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot = tmp_path / "hub" / "models--acme--tiny" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "tokenizer.json").write_bytes((folder / "tokenizer.json").read_bytes())
    (tmp_path / "hub" / "models--acme--tiny" / "refs").mkdir()
    (tmp_path / "hub" / "models--acme--tiny" / "refs" / "main").write_text("abc123\n")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    text = " the quick brown fox jumps"
    by_folder, by_file, by_name = (load_tokenizer(n) for n in (str(folder), str(folder / "tokenizer.json"),
                                                               "acme/tiny"))
    assert by_folder.source == by_file.source == "tokenizer:tiny-bpe" and by_name.source == "tokenizer:acme/tiny"
    assert by_folder.count(text) == by_file.count(text) == by_name.count(text) == 5
    assert tokenizer_for(None) is None


def test_not_on_this_machine_is_one_line_naming_the_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    for name in ("acme/not-downloaded", str(tmp_path)):
        with pytest.raises(SpecError) as err:
            load_tokenizer(name)
        message = str(err.value)
        assert message.startswith(f"--tokenizer {name}: ") and "never downloads" in message, message
        assert "\n" not in message
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "tokenizer.json").write_text("{not a tokenizer")
    with pytest.raises(SpecError, match="not a tokenizer the tokenizers library reads"):
        load_tokenizer(str(bad))


def test_a_token_split_over_two_chunks_counts_once_in_the_later(folder: Path) -> None:
    tok = load_tokenizer(str(folder))
    chunks = [" the qu", "ick brown f", "ox jumps", " over"]
    # tokens: " the", " quick" (ends in chunk 1), " brown", " fox" (ends in chunk 2), " jumps", " over"
    assert tok.split(chunks) == [1, 2, 2, 1]
    assert sum(tok.split(chunks)) == tok.count("".join(chunks)) == 6
    # the same rule as tokens(text so far) - tokens(text before) wherever that never decreases
    whole_words = [" the quick", " brown", " fox jumps over", " the lazy dog"]
    so_far = [tok.count("".join(whole_words[:i + 1])) for i in range(len(whole_words))]
    assert tok.split(whole_words) == [so_far[0]] + [b - a for a, b in itertools.pairwise(so_far)]
    assert tok.split([]) == [] and tok.split(["", " the", ""]) == [0, 1, 0]


def test_counting_prefixes_without_offsets_adds_up_and_is_never_negative(folder: Path) -> None:
    fast = load_tokenizer(str(folder))
    slow = TokenCounter("slow", None, fast.count)  # a tokenizer without offsets: prefix counts
    chunks = [" the qu", "ick brown f", "ox jumps", " o", "ver the la", "zy dog"]
    counts = slow.split(chunks)
    assert min(counts) >= 0 and sum(counts) == fast.count("".join(chunks)) == sum(fast.split(chunks))
