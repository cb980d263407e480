"""A profiling window through the server's own API: vLLM, SGLang and `perfkit serve`.

- vLLM (started with VLLM_TORCH_PROFILER_DIR, or --profiler-config): POST /start_profile and
  POST /stop_profile, no body; 200 with an empty body; /stop_profile answers once the traces are
  flushed to that directory as `<worker>.<time>.pt.trace.json.gz`. A server started without a
  profiler directory has no such routes (404). The window is S seconds (no step count).
- SGLang: POST /start_profile with a JSON body (num_steps, activities), answered 200
  "Start profiling.\\n"; with num_steps the server stops itself after that many steps; POST
  /stop_profile answers "Stop profiling. This will take some time.\\n" before the trace
  `<profile id>-TP-<rank>.trace.json.gz` is in SGLANG_TORCH_PROFILER_DIR.
- perfkit serve: vLLM's routes, plus SGLang's {"num_steps": N} and GET /profile_info (its
  trace directory).
The traces are read from a directory this client can see (the server's own when it runs here,
or a shared mount the user names): the files that appear there during the window. The client
copies files; it never parses a trace.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from perfkit.workloads.serving.client.url import redact_urls

SERVERS = ("perfkit", "vllm", "sglang")
TRACE_PATTERNS = ("*.pt.trace.json.gz", "*.trace.json.gz", "*.pt.trace.json", "*.trace.json")
REQUEST_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 600.0  # vLLM flushes traces before answering /stop_profile: minutes on a big model
TRACE_WAIT_S = 120.0  # after the window: how long to wait for its trace files to appear
POLL_S = 0.05
SGLANG_ACTIVITIES = ("CPU", "GPU")


class WindowError(Exception):
    """The server refused or could not open / close a window (one line, with the fix)."""


@dataclass(frozen=True)
class WindowPlan:
    server: str = "auto"  # auto | perfkit | vllm | sglang
    steps: int | None = None  # engine steps (perfkit, SGLang)
    seconds: float | None = None  # or seconds: the client calls /stop_profile
    trace_dir: str | None = None  # where this client reads the traces (None: perfkit's own, if here)


@dataclass
class WindowResult:
    server: str
    start_s: float | None = None  # /start_profile answered, stage clock
    end_s: float | None = None  # /stop_profile answered, or the trace appeared (steps)
    files: list[Path] = field(default_factory=list)
    trace_dir: str | None = None
    notes: list[str] = field(default_factory=list)


async def _post(session: aiohttp.ClientSession, url: str, body: dict[str, object] | None,
                timeout_s: float = REQUEST_TIMEOUT_S) -> tuple[int, str]:
    async with session.post(url, json=body, timeout=aiohttp.ClientTimeout(total=timeout_s)) as resp:
        return resp.status, (await resp.text())[:300]


async def _get(session: aiohttp.ClientSession, url: str) -> tuple[int, object]:
    async with session.get(url, timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S)) as resp:
        if resp.status != 200:
            return resp.status, None
        try:
            return 200, await resp.json(content_type=None)
        except ValueError:
            return 200, None


async def detect_server(session: aiohttp.ClientSession, base_url: str) -> tuple[str, str | None]:
    """(server kind, perfkit's trace directory or None): GET /profile_info answers on perfkit
    serve, /get_server_info on SGLang, /version on vLLM."""
    try:
        status, info = await _get(session, f"{base_url}/profile_info")
        if status == 200 and isinstance(info, dict) and info.get("server") == "perfkit":
            trace_dir = info.get("trace_dir")
            return "perfkit", trace_dir if isinstance(trace_dir, str) else None
        status, _ = await _get(session, f"{base_url}/get_server_info")
        if status == 200:
            return "sglang", None
        status, _ = await _get(session, f"{base_url}/version")
        if status == 200:
            return "vllm", None
    except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as exc:
        raise WindowError(f"{redact_urls(base_url)}: cannot reach the server to find its profiler "
                          f"({type(exc).__name__}); name it with server: perfkit|vllm|sglang") from None
    raise WindowError(f"{redact_urls(base_url)}: neither perfkit serve, SGLang nor vLLM answered "
                      "(/profile_info, /get_server_info, /version); name the server with "
                      "server: perfkit|vllm|sglang")


def start_body(server: str, steps: int | None) -> dict[str, object] | None:
    """The body of POST /start_profile: none for vLLM; num_steps (and SGLang's activities)."""
    if server == "vllm":
        return None
    body: dict[str, object] = {}
    if steps is not None:
        body["num_steps"] = steps
    if server == "sglang":
        body["activities"] = list(SGLANG_ACTIVITIES)
    return body or None


def _refused(server: str, url: str, status: int, text: str) -> WindowError:
    hint = "check the server's log"
    if status == 404 and server == "vllm":
        hint = "start vLLM with VLLM_TORCH_PROFILER_DIR=DIR (or --profiler-config) to enable it"
    elif status == 404:
        hint = "this server has no profiler endpoint (perfkit serve: --model mode only)"
    return WindowError(f"{url}: HTTP {status} {text.strip()[:120]!r}; {hint}")


async def start_window(session: aiohttp.ClientSession, base_url: str, server: str,
                       steps: int | None) -> None:
    if server == "vllm" and steps is not None:
        raise WindowError("vLLM's /start_profile takes no step count; give seconds (--profile 2s)")
    url = f"{base_url}/start_profile"
    status, text = await _post(session, url, start_body(server, steps))
    if status != 200:
        raise _refused(server, url, status, text)


async def stop_window(session: aiohttp.ClientSession, base_url: str, server: str) -> None:
    url = f"{base_url}/stop_profile"
    status, text = await _post(session, url, None, STOP_TIMEOUT_S)
    if status != 200:
        raise _refused(server, url, status, text)


def trace_files(directory: Path) -> dict[Path, tuple[float, int]]:
    """Trace files in `directory` (not recursive) with their (mtime, size)."""
    out: dict[Path, tuple[float, int]] = {}
    for pattern in TRACE_PATTERNS:
        for path in directory.glob(pattern):
            try:
                st = path.stat()
            except OSError:
                continue
            out[path] = (st.st_mtime, st.st_size)
    return out


def new_files(directory: Path, before: dict[Path, tuple[float, int]]) -> dict[Path, tuple[float, int]]:
    return {p: s for p, s in trace_files(directory).items() if before.get(p) != s}


async def wait_for_traces(directory: Path, before: dict[Path, tuple[float, int]], timeout_s: float,
                          stop: asyncio.Event | None = None) -> list[Path]:
    """The trace files that appear in `directory` after `before`, once none grows between two
    polls; [] after `timeout_s` (or when `stop` is set first)."""
    deadline = time.monotonic() + timeout_s
    seen: dict[Path, tuple[float, int]] = {}
    while time.monotonic() < deadline and not (stop is not None and stop.is_set()):
        now = new_files(directory, before)
        if now and now == seen:
            return sorted(now)
        seen = now
        await asyncio.sleep(POLL_S)
    return []


async def run_window(session: aiohttp.ClientSession, base_url: str, plan: WindowPlan, t0: float,
                     ready: Awaitable[object], stage_done: asyncio.Event) -> WindowResult:
    """Wait for `ready` (the stage's steady part), open a window, close it after its steps or
    seconds (or when the stage ends first), and collect the trace files it wrote."""
    server, perfkit_dir = plan.server, None
    result = WindowResult(server=server)
    try:
        if server == "auto" or (server == "perfkit" and plan.trace_dir is None):
            found, perfkit_dir = await detect_server(session, base_url)
            server = found if server == "auto" else server
        result.server = server
        trace_dir = plan.trace_dir or (perfkit_dir if perfkit_dir and Path(perfkit_dir).is_dir() else None)
        result.trace_dir = trace_dir
        directory = Path(trace_dir) if trace_dir else None
        before = trace_files(directory) if directory else {}
        await ready
        if stage_done.is_set():
            result.notes.append("the stage ended before the window could open; give more requests")
            return result
        await start_window(session, base_url, server, plan.steps)
        result.start_s = time.monotonic() - t0
        if plan.steps is not None and directory is not None:
            files = await wait_for_traces(directory, before, 1e9, stage_done)
            if not files:  # the stage ended first: close what the steps left open
                await _stop_quietly(session, base_url, server)
                files = await wait_for_traces(directory, before, TRACE_WAIT_S)
                result.notes.append(f"the stage ended before {plan.steps} steps; the window holds fewer")
            result.end_s = time.monotonic() - t0
            result.files = files
            return result
        if plan.seconds is not None:
            await _sleep_unless(stage_done, plan.seconds)
            await stop_window(session, base_url, server)
        else:  # steps, and no directory to see the trace appear: the window ends by itself
            await stage_done.wait()
            await _stop_quietly(session, base_url, server)
        result.end_s = time.monotonic() - t0
        if directory is not None:
            result.files = await wait_for_traces(directory, before, TRACE_WAIT_S)
            if not result.files:
                result.notes.append(f"{directory}: no trace file appeared within {TRACE_WAIT_S:.0f} s")
        else:
            result.notes.append("the traces stay on the server (no trace directory here): hand them "
                                "over with `perfkit serve-bench attach RUN_DIR TRACE...`")
    except WindowError as exc:
        result.notes.append(str(exc))
    except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as exc:
        result.notes.append(f"{base_url}: profiling window failed ({type(exc).__name__}: {exc})"[:300])
    return result


async def _sleep_unless(event: asyncio.Event, seconds: float) -> None:
    try:
        await asyncio.wait_for(event.wait(), seconds)
    except asyncio.TimeoutError:
        pass


async def _stop_quietly(session: aiohttp.ClientSession, base_url: str, server: str) -> None:
    try:
        await stop_window(session, base_url, server)
    except WindowError:
        pass  # it closed itself meanwhile
