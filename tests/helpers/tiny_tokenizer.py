"""A real tokenizer made in a test: byte-level BPE trained on a fixed text (the `tokenizers`
library; tests that use it skip without it), saved as tokenizer.json into a folder."""

from __future__ import annotations

from pathlib import Path

TEXT = ("the quick brown fox jumps over the lazy dog while a small cat naps on the warm mat near "
        "the window and the old clock ticks softly in the quiet hallway ") * 20


def tiny_tokenizer(folder: Path, *, split_at_spaces: bool = True) -> Path:
    """Train on TEXT and save `folder/tokenizer.json`; `split_at_spaces=False`: no pre-tokenizer,
    so merges cross spaces (a tokenizer whose tokens do not re-encode one by one)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    if split_at_spaces:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["[UNK]"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet() if split_at_spaces else [])
    tok.train_from_iterator([TEXT], trainer)
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    return folder
