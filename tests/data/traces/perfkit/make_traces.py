"""Kineto traces of perfkit's own tiny decoder, with `perfkit serve`'s step ranges.

Each engine step runs under `perfkit_step#<n> <prefill|decode> bs=<B> tokens=<T>` (the range
`perfkit serve` opens, perfkit.analyzers.steps.engine_names), each layer's attention and MLP under
`perfkit_attention` / `perfkit_mlp` (forward hooks). `slow` runs one class K times (as
`perfkit serve --slow-op CLASS=K`). Compiled runs use torch.compile (Inductor, CPU) with
`cpp.enable_kernel_profile` so its generated kernels are in the trace; the hooks are not (Dynamo
drops record_function ranges inside compiled code), so only the step ranges remain there.

    python tests/data/traces/perfkit/make_traces.py   # writes tiny_eager / tiny_compile / tiny_moe_eager .json.gz here
"""

from __future__ import annotations

import gzip
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _ranges(model: Any, slow: dict[str, int]) -> None:
    import torch

    def wrap(mod: Any, name: str, repeat: int) -> None:
        inner = mod.forward

        def forward(*a: Any, **k: Any) -> Any:
            with torch.profiler.record_function(name):
                out = inner(*a, **k)
                for _ in range(repeat - 1):
                    out = inner(*a, **k)
            return out

        mod.forward = forward

    for layer in model.layers:
        wrap(layer.attention, "perfkit_attention", slow.get("attention", 1))
        wrap(layer.feed_forward, "perfkit_mlp", slow.get("mlp", 1))


def profile_decoder(out: Path, steps: int = 8, compiled: bool = False, slow: dict[str, int] | None = None,
                    batch: int = 4, prompt: int = 16, seed: int = 0, preset: str = "tiny") -> Path:
    """Write a trace of one prefill step and `steps` decode steps of the `preset` model to `out` (.json.gz)."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    from perfkit.workloads.models.build import build_model
    from perfkit.workloads.models.presets import PRESETS

    torch.set_grad_enabled(False)
    model = build_model(PRESETS[preset], "fp32", "cpu", seed)
    model.setup_caches(batch, 256)
    if compiled:
        import torch._inductor.config as inductor_config

        inductor_config.cpp.enable_kernel_profile = True
        fn: Any = torch.compile(model)
    else:
        _ranges(model, slow or {})
        fn = model
    tok = torch.zeros(batch, 1, dtype=torch.long)
    for i in range(3):  # warm-up (and compile)
        fn(tok, torch.tensor([prompt + i]))
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        with record_function(f"perfkit_step#0 prefill bs={batch} tokens={batch * prompt}"):
            model(torch.zeros(batch, prompt, dtype=torch.long), torch.arange(prompt), prefill=True)
        for n in range(1, steps + 1):
            with record_function(f"perfkit_step#{n} decode bs={batch} tokens={batch}"):
                fn(tok, torch.tensor([prompt + n]))
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(raw))
        with raw.open("rb") as src, gzip.open(out, "wb") as dst:
            shutil.copyfileobj(src, dst)
    return out


if __name__ == "__main__":
    d = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE
    profile_decoder(d / "tiny_eager.json.gz")
    profile_decoder(d / "tiny_compile.json.gz", compiled=True)
    profile_decoder(d / "tiny_moe_eager.json.gz", preset="tiny-moe")
