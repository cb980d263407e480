"""Run a stage's sessions: a closed loop of `width` sessions at once, each turn after the last.

A session takes a place among the `width` concurrent ones, runs its turns in order (turn k is
scheduled `think_s` after turn k-1's answer ended, and sent with the whole history before it:
client/sessions.py) and gives its place to the next session when its last turn ended. A turn
that fails ends its session (the next turn would lack the answer it builds on); the session's
later turns are not sent. With `duration_s`, no turn is sent after it. Each record carries its
session id (the session's order in the plan) and its turn (0 first); its index is the order in
which requests were sent.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import time
from collections.abc import Callable, Sequence

import aiohttp

from perfkit.workloads.serving.client.send import ClientOptions, Prompt, send
from perfkit.workloads.serving.client.sessions import Session
from perfkit.workloads.serving.records import RequestRecord


async def run_sessions(session: aiohttp.ClientSession, opts: ClientOptions, sessions: Sequence[Session],
                       width: int, t0: float, duration_s: float | None = None,
                       on_send: Callable[[], None] | None = None) -> list[RequestRecord]:
    queue = iter(range(len(sessions)))
    order = itertools.count()
    out: list[RequestRecord] = []

    async def one(sid: int) -> None:
        history: tuple[tuple[str, str], ...] = ()
        due = time.monotonic() - t0
        for k, turn in enumerate(sessions[sid].turns):
            due += turn.think_s
            wait = t0 + due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            if duration_s is not None and time.monotonic() - t0 >= duration_s:
                return
            if on_send is not None:
                on_send()
            answer: list[str] = []
            prompt = Prompt(turn.text, turn.input_tokens, turn.output_tokens, history, sessions[sid].adapter)
            rec = await send(session, opts, next(order), due, prompt, t0, answer)
            out.append(dataclasses.replace(rec, session_id=sid, turn=k))
            if not rec.ok:
                return
            history = (*history, ("user", turn.text), ("assistant", "".join(answer)))
            due = rec.end_s if rec.end_s is not None else time.monotonic() - t0

    async def worker() -> None:
        for sid in queue:
            await one(sid)
            if duration_s is not None and time.monotonic() - t0 >= duration_s:
                return

    await asyncio.gather(*(worker() for _ in range(max(width, 1))))
    return out
