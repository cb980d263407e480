"""The slot decoder: requests of different prompt lengths joining a running batch at different
steps each generate exactly what the model generates for them alone (tiny presets, CPU, fp32)."""

from __future__ import annotations

import pytest
import torch

from perfkit.workloads.models.build import build_model
from perfkit.workloads.models.model import Transformer
from perfkit.workloads.models.presets import PRESETS
from perfkit.workloads.serving.server.slots import SlotDecoder

STEPS = 8  # output tokens per request
# (prompt length, the batch step at which the request joins)
REQUESTS = ((5, 0), (9, 2), (3, 4))


def alone(model: Transformer, prompt: list[int], n: int) -> tuple[list[int], list[torch.Tensor]]:
    """Greedy tokens and logits of the reference forward (input_pos None: full recompute)."""
    ids, logits = list(prompt), []
    with torch.no_grad():
        for _ in range(n):
            out = model(torch.tensor([ids]))[0]
            logits.append(out)
            ids.append(int(out.argmax()))
    return ids[len(prompt):], logits


def batched(decoder: SlotDecoder, prompts: list[list[int]], joins: list[int], n: int
            ) -> tuple[list[list[int]], list[list[torch.Tensor]]]:
    """Continuous batching by hand: request r is prefilled into slot r + 1 at step joins[r], then
    decoded with every active row until it has n tokens, then its row is freed."""
    b = decoder.max_batch
    out: list[list[int]] = [[] for _ in prompts]
    logits: list[list[torch.Tensor]] = [[] for _ in prompts]
    tokens = torch.zeros(b, dtype=torch.long)
    positions = torch.full((b,), 7, dtype=torch.long)  # stale positions in free rows: ignored
    active = torch.zeros(b, dtype=torch.bool)
    step = 0
    while step <= max(joins) or bool(active.any()):
        for r, prompt in enumerate(prompts):
            if joins[r] == step:
                slot = r + 1
                first = decoder.prefill_slot(slot, prompt)
                logits[r].append(first)
                out[r].append(int(first.argmax()))
                tokens[slot], positions[slot], active[slot] = out[r][-1], len(prompt), True
        if bool(active.any()):
            step_logits = decoder.decode_rows(tokens, positions, active)
            for r in range(len(prompts)):
                slot = r + 1
                if not active[slot]:
                    continue
                logits[r].append(step_logits[slot])
                out[r].append(int(step_logits[slot].argmax()))
                tokens[slot] = out[r][-1]
                positions[slot] += 1
                if len(out[r]) == n:
                    active[slot] = False
        step += 1
    return out, logits


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["tiny", "tiny-moe"])
def test_joining_requests_generate_what_they_generate_alone(preset: str) -> None:
    cfg = PRESETS[preset]
    model = build_model(cfg, "fp32", "cpu", seed=0)
    gen = torch.Generator().manual_seed(3)
    prompts = [torch.randint(cfg.vocab_size, (plen,), generator=gen).tolist() for plen, _ in REQUESTS]
    decoder = SlotDecoder(model, max_batch=5, cache_len=32)
    got, got_logits = batched(decoder, prompts, [join for _, join in REQUESTS], STEPS)
    for r, prompt in enumerate(prompts):
        want, want_logits = alone(model, prompt, STEPS)
        assert got[r] == want, f"request {r}"
        for a, b in zip(got_logits[r], want_logits, strict=True):
            assert float((a - b).norm() / b.norm()) < 1e-5


@pytest.mark.slow  # the first model build in a process takes ~1 s
def test_a_prompt_longer_than_the_cache_is_refused() -> None:
    model = build_model(PRESETS["tiny"], "fp32", "cpu", seed=0)
    decoder = SlotDecoder(model, max_batch=2, cache_len=8)
    with pytest.raises(ValueError, match=r"1\.\.8 tokens"):
        decoder.prefill_slot(0, list(range(9)))
    with pytest.raises(ValueError, match=r"slot 0\.\.1"):
        decoder.prefill_slot(2, [1, 2])
