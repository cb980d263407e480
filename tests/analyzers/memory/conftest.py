"""A real memory profile, recorded once per session: the repo's tiny decode model on CPU under
torch.profiler(profile_memory=True, with_stack=True), exported as a Kineto trace and as torch's
own snapshot of it (`torch.cuda._memory_viz._profile_to_snapshot`, pickled)."""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class Recorded:
    trace: Path  # Kineto JSON
    snapshot: Path  # pickle of _profile_to_snapshot(prof)


def record_tiny_decode(out: Path) -> Recorded:
    import torch
    from torch.cuda._memory_viz import _profile_to_snapshot
    from torch.profiler import ProfilerActivity, profile, record_function

    from perfkit.workloads.models.build import build_model
    from perfkit.workloads.models.presets import PRESETS

    torch.set_num_threads(1)
    model = build_model(PRESETS["tiny"], "fp32", "cpu", seed=0)
    prompt = torch.randint(0, 512, (2, 8))
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, with_stack=True,
                 record_shapes=True) as prof, \
            torch.no_grad():
        with record_function("setup_caches"):
            model.setup_caches(batch=2, cache_len=32)
        with record_function("prefill"):
            logits = model(prompt, torch.arange(8), prefill=True)
        for step in range(2):
            with record_function("decode"):
                token = logits.argmax(-1, keepdim=True)
                logits = model(token, torch.tensor([8 + step]))
    trace = out / "tiny_decode.json"
    prof.export_chrome_trace(str(trace))
    snapshot = out / "tiny_decode.pickle"
    snapshot.write_bytes(pickle.dumps(_profile_to_snapshot(prof)))
    return Recorded(trace, snapshot)


@pytest.fixture(scope="session")
def tiny_decode_memory(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return record_tiny_decode(tmp_path_factory.mktemp("memory-profile"))
