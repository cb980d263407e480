"""One greedy decode step on static buffers, run eagerly, through torch.compile, or as a CUDA graph.

Buffers: `tokens` [B, 1] (the token fed to the step; the step writes the next greedy token back
into it) and `pos` [1] (its position). `run()` returns float32 logits [B, V], valid until the
next run (graph / compiled outputs are reused; clone to keep them).
Modes:
- eager:      the model's forward, one kernel launch per op (launch-bound on a GPU).
- compile:    torch.compile(fullgraph=True), mode "reduce-overhead" on CUDA (Inductor kernels
              replayed as CUDA graphs, gpt-fast's setup), "default" on CPU.
- cuda_graph: the eager step captured once with torch.cuda.graph after a warmup on a side
              stream, then replayed: one launch per step.
Only decode steps go through the mode; prefill is always eager.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from perfkit.workloads.decode.spec import MODES
from perfkit.workloads.models.model import Transformer


def compile_mode(device: str) -> str:
    return "reduce-overhead" if device.startswith("cuda") else "default"


def mode_problem(mode: str, device: str) -> str | None:
    """Why `mode` cannot run on `device`, or None."""
    if mode == "cuda_graph" and not device.startswith("cuda"):
        return "mode cuda_graph needs a CUDA device; use eager or compile on cpu"
    return None


def greedy_step(model: Transformer, tokens: Tensor, pos: Tensor) -> tuple[Tensor, Tensor]:
    logits = model(tokens, pos)  # [B, V]
    return logits, logits.argmax(dim=-1, keepdim=True)  # next token [B, 1]


class Stepper:
    def __init__(self, model: Transformer, batch: int, device: str, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown decode mode {mode!r}; use one of {', '.join(MODES)}")
        self.model, self.mode, self.device = model, mode, device
        self.tokens = torch.zeros(batch, 1, dtype=torch.long, device=device)
        self.pos = torch.zeros(1, dtype=torch.long, device=device)
        self._run: Callable[[], Tensor] = self._build()

    def set_pos(self, position: int) -> None:
        self.pos.fill_(position)

    def set_tokens(self, tokens: Tensor) -> None:
        self.tokens.copy_(tokens.view_as(self.tokens))

    def run(self) -> Tensor:
        return self._run()

    def _build(self) -> Callable[[], Tensor]:
        if self.mode == "eager":
            return self._eager
        if self.mode == "compile":
            return self._compiled()
        return self._graph()

    @torch.no_grad()
    def _eager(self) -> Tensor:
        logits, nxt = greedy_step(self.model, self.tokens, self.pos)
        self.tokens.copy_(nxt)
        return logits

    def _compiled(self) -> Callable[[], Tensor]:
        # One compiled cache per point: Dynamo caches by code object, so points compiling the same
        # function would pile up guards (and hit the recompile limit, falling back to eager).
        torch._dynamo.reset()
        step = torch.compile(greedy_step, mode=compile_mode(self.device), fullgraph=True)

        @torch.no_grad()
        def run() -> Tensor:
            logits, nxt = step(self.model, self.tokens, self.pos)
            self.tokens.copy_(nxt)
            return logits  # type: ignore[no-any-return]

        return run

    @torch.no_grad()
    def _graph(self) -> Callable[[], Tensor]:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):  # warm up (allocator, cuBLAS handles, SDPA selection) off the graph
                self._eager()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            logits = self._eager()  # static output: rewritten by every replay
        torch.cuda.synchronize()
        self.graph = graph

        def run() -> Tensor:
            graph.replay()
            return logits

        return run
