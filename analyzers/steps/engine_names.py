"""The range names inference servers give one engine step (one forward), and what they carry.

Each engine opens one range per step; its text says the step's composition where the engine
writes it (checked on real traces and the engines' sources):

- perfkit serve:  `perfkit_step#<n> <prefill|decode|mixed> bs=<B> tokens=<T>`
- vLLM (ROCm / AITER annotation, tests/data/traces/tracelens/vllm_*):
  `execute_<T>_context_<C>(...)_generation_<G>(...)`: T tokens, C prefill (context) requests,
  G decode (generation) requests
- SGLang (tests/data/traces/tracelens/sglang_*): `step[<MODE> bs=<B>]`, MODE DECODE / EXTEND /
  PREFILL / MIXED / IDLE ...
- TensorRT-LLM (PyExecutor's NVTX range): `[Executor] _forward_step <n>: <C> ctx reqs, <G> gen reqs`
  (older releases without `[Executor] ` and without the iteration number)

On a tie between families the earlier in PATTERNS wins. A step's kind: prefill (prompts only), decode (no prompt), mixed (both), unknown (the name does
not say). Batch size and token count stay None where the name does not carry them: never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

PREFILL, DECODE, MIXED, UNKNOWN = "prefill", "decode", "mixed", "unknown"
KINDS = (PREFILL, DECODE, MIXED, UNKNOWN)


@dataclass(frozen=True)
class StepName:
    engine: str  # perfkit serve | vLLM | SGLang | TensorRT-LLM
    kind: str  # KINDS
    batch: int | None  # requests in the step
    tokens: int | None  # tokens the step computes


def _kind(prefills: int, decodes: int) -> str:
    if prefills and decodes:
        return MIXED
    return PREFILL if prefills else DECODE if decodes else UNKNOWN


def _perfkit(m: re.Match[str]) -> StepName:
    return StepName("perfkit serve", m.group(2), int(m.group(3)), int(m.group(4)))


def _vllm(m: re.Match[str]) -> StepName:
    t, c, g = int(m.group(1)), int(m.group(2)), int(m.group(3))
    return StepName("vLLM", _kind(c, g), c + g, t)


_SGLANG_KINDS = {"DECODE": DECODE, "EXTEND": PREFILL, "PREFILL": PREFILL, "MIXED": MIXED, "TARGET_VERIFY": DECODE}


def _sglang(m: re.Match[str]) -> StepName:
    return StepName("SGLang", _SGLANG_KINDS.get(m.group(1).upper(), UNKNOWN), int(m.group(2)), None)


def _trtllm(m: re.Match[str]) -> StepName:
    c, g = int(m.group(1)), int(m.group(2))
    return StepName("TensorRT-LLM", _kind(c, g), c + g, None)


PATTERNS: tuple[tuple[str, re.Pattern[str], Callable[[re.Match[str]], StepName]], ...] = (
    ("perfkit serve", re.compile(r"^perfkit_step#(\d+) (prefill|decode|mixed) bs=(\d+) tokens=(\d+)$"), _perfkit),
    ("SGLang", re.compile(r"^step\[([A-Za-z_]+) bs=(\d+)\]$"), _sglang),
    ("TensorRT-LLM", re.compile(r"^(?:\[Executor\] )?_forward_step(?: \d+)?: (\d+) ctx reqs, (\d+) gen reqs$"), _trtllm),
    # last: also opened under SGLang's own step range by the ROCm attention backend
    ("vLLM", re.compile(r"^execute_(\d+)_context_(\d+)\(.*?\)_generation_(\d+)(?:\(|$)"), _vllm),
)
ENGINES = tuple(p[0] for p in PATTERNS)


def parse_step_name(name: str) -> StepName | None:
    """The step a range name describes, or None when no engine's step range is spelled so."""
    for _, rx, parse in PATTERNS:
        m = rx.match(name)
        if m:
            return parse(m)
    return None
