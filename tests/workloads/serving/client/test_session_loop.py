"""Sessions against `perfkit serve --synthetic` in this process (client/session_loop.py): the
completions API sends the history newline-joined; a failed turn ends its session; sessions run
`width` at once."""

from __future__ import annotations

import asyncio
import itertools
import time

from perfkit.workloads.serving.client.send import ClientOptions, Prompt, open_session, request_body
from perfkit.workloads.serving.client.session_loop import run_sessions
from perfkit.workloads.serving.client.sessions import Session, Turn
from perfkit.workloads.serving.records import RequestRecord
from perfkit.workloads.serving.server.options import FaultOptions, ServeOptions, SyntheticOptions
from tests.helpers.serving_server import served

SESSIONS = [Session((Turn("How are you", 3, 2), Turn("and you", 2, 2, 0.05))),
            Session((Turn("What is it", 3, 3), Turn("say more", 2, 1, 0.0), Turn("ok", 1, 1, 0.0))),
            Session((Turn("Tell me", 2, 1),))]


def _run(options: ServeOptions, api: str, width: int) -> list[RequestRecord]:
    async def go() -> list[RequestRecord]:
        async with served(options) as url:
            opts = ClientOptions(base_url=url, model="m", api=api)
            async with open_session(opts, 4) as session:
                return await run_sessions(session, opts, SESSIONS, width, time.monotonic())

    return asyncio.run(go())


def test_the_completions_api_sends_the_history_newline_joined() -> None:
    body = request_body(ClientOptions("http://h", "m"), Prompt("and you", 2, 2, (("user", "How"), ("assistant", " tok"))))
    assert body["prompt"] == "How\n tok\nand you"
    chat = request_body(ClientOptions("http://h", "m", api="chat"), Prompt("and you", 2, 2, (("user", "How"),)))
    assert chat["messages"] == [{"role": "user", "content": "How"}, {"role": "user", "content": "and you"}]
    records = _run(ServeOptions(SyntheticOptions(ttft_s=0.005, itl_s=0.001)), "completions", width=3)
    got = {(r.session_id, r.turn): (r.input_tokens, r.cached_tokens) for r in records}
    assert got == {(0, 0): (3, 0), (0, 1): (3 + 2 + 2, 3), (1, 0): (3, 0), (1, 1): (3 + 3 + 2, 3),
                   (1, 2): (8 + 1 + 1, 8), (2, 0): (2, 0)}
    assert sorted(r.index for r in records) == list(range(6))  # the order of sending


def test_a_failed_turn_ends_its_session_and_width_bounds_the_sessions_at_once() -> None:
    # every 2nd request fails: with one session at a time, requests go 0 ok, 1 fails (session 0
    # ends), 2 ok (session 1 turn 0), 3 fails (session 1 ends), 4 ok (session 2)
    options = ServeOptions(SyntheticOptions(ttft_s=0.005, itl_s=0.001), fault=FaultOptions("http-500", every=2))
    records = _run(options, "chat", width=1)
    assert [(r.session_id, r.turn, r.ok) for r in sorted(records, key=lambda r: r.index)] == [
        (0, 0, True), (0, 1, False), (1, 0, True), (1, 1, False), (2, 0, True)]
    spans = sorted((r.sent_s or 0, r.end_s or 0) for r in records)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))  # one at a time
