"""The model engine: perfkit's decoder (seeded random weights) behind the continuous batcher.

String prompts become token ids with the server's tokenizer (CRC-32 of each piece modulo the
vocabulary); token-id prompts are used as given (each id must be below the vocabulary size).
A request needs prompt + max_tokens <= the cache length (400 otherwise). Tokens are greedy; the
text of token i is " t<i>". Tokens the batcher produced while the stream was busy writing go out
together in the next chunk (as a serving engine's output queue does).
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncGenerator
from pathlib import Path

import torch

from perfkit.core.errors import DeviceError
from perfkit.workloads.models.build import build_model
from perfkit.workloads.models.presets import PRESETS
from perfkit.workloads.serving.server.batcher import ContinuousBatcher, Delivery, Job
from perfkit.workloads.serving.server.engine import Admitted, EngineLoad, Token
from perfkit.workloads.serving.server.options import ModelOptions
from perfkit.workloads.serving.server.protocol import GenRequest, RequestError
from perfkit.workloads.serving.server.slots import SlotDecoder
from perfkit.workloads.serving.server.step_profiler import StepProfiler
from perfkit.workloads.serving.server.tokenizer import token_ids


def token_text(token_id: int) -> str:
    return f" t{token_id}"


class ModelEngine:
    def __init__(self, options: ModelOptions, seed: int) -> None:
        if options.device.startswith("cuda") and not torch.cuda.is_available():
            raise DeviceError(f"--device {options.device}: no CUDA device here; use --device cpu")
        cfg = PRESETS[options.preset]
        self.vocab_size = cfg.vocab_size
        model = build_model(cfg, options.dtype, options.device, seed)
        trace_dir = options.profile_dir or tempfile.mkdtemp(prefix="perfkit-serve-traces-")
        try:
            Path(trace_dir).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DeviceError(f"--profile-dir {trace_dir}: cannot create it ({exc.strerror or exc}); "
                              "name a writable directory") from None
        self.profiler = StepProfiler(Path(trace_dir), options.device)
        self.decoder = SlotDecoder(model, options.max_batch, options.cache_len, dict(options.slow_op),
                                   self.profiler)
        self.batcher = ContinuousBatcher(self.decoder, options.extra_step_s, self.profiler)

    def admit(self, request: GenRequest, output_tokens: int) -> Admitted:
        if request.prompt_ids is not None:
            ids = request.prompt_ids
            if any(i >= self.vocab_size for i in ids):
                raise RequestError(f"token ids must be below the vocabulary size {self.vocab_size}",
                                   "prompt")
        else:
            ids = tuple(token_ids(request.prompt_text or "", self.vocab_size))
        if not ids:
            raise RequestError("the prompt is empty; give at least one token", "prompt")
        cache_len = self.decoder.cache_len
        if len(ids) + output_tokens > cache_len:
            raise RequestError(f"prompt ({len(ids)} tokens) + max_tokens ({output_tokens}) = "
                               f"{len(ids) + output_tokens} exceeds the model's cache length "
                               f"{cache_len}; ask for fewer tokens", "max_tokens")
        return Admitted(request, len(ids), output_tokens, ids)

    def load(self) -> EngineLoad:
        core = self.batcher.core
        return EngineLoad(core.running, self.batcher.waiting,
                          core.used_tokens() / self.batcher.capacity_tokens)

    async def start(self) -> None:
        self.batcher.start()

    async def stop(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.batcher.stop)

    async def generate(self, admitted: Admitted) -> AsyncGenerator[list[Token], None]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Delivery] = asyncio.Queue()

        def deliver(item: Delivery) -> None:  # in the batcher thread
            try:
                loop.call_soon_threadsafe(queue.put_nowait, item)
            except RuntimeError:  # the event loop is closed: nobody is listening
                pass

        job = Job(admitted.prompt_ids, admitted.output_tokens, deliver)
        self.batcher.submit(job)
        try:
            done = False
            while not done:
                items = [await queue.get()]
                while not queue.empty():
                    items.append(queue.get_nowait())
                tokens = []
                for item in items:
                    if item is None:
                        done = True
                    elif isinstance(item, BaseException):
                        raise RuntimeError(f"the model failed: {item}") from item
                    else:
                        tokens.append(Token(token_text(item[0]), item[0], item[1]))
                if tokens:
                    yield tokens
        finally:
            self.batcher.cancel(job)
