"""A session file: multi-turn sessions replayed as given (JSON lines, one session per line).

    {"turns": [{"prompt": "Name three rivers.", "output_tokens": 64},
               {"input_tokens": 40, "output_tokens": 32, "think_time_s": 2.5}]}

Each turn gives its new user prompt as text (`prompt`) or as a length (`input_tokens`: that many
synthetic words), optionally `output_tokens` (max_tokens; default: the spec's output length) and
`think_time_s` (the pause after the previous answer ended before the turn is sent; on the first
turn, after the session started; default: the spec's think time). Blank lines and lines starting
with `#` are skipped. A line that breaks a rule is one error, `FILE:LINE: what; fix`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from perfkit.core.errors import SpecError
from perfkit.workloads.serving.client.prompts import Lengths, synthetic
from perfkit.workloads.serving.client.sessions import Session, ThinkTime, Turn

MAX_FILE_BYTES = 256 * 1024 * 1024
MAX_TURNS = 10_000  # turns of one session
MAX_TOKENS = 10_000_000  # input_tokens / output_tokens of one turn
MAX_THINK_S = 86_400.0
TURN_KEYS = ("prompt", "input_tokens", "output_tokens", "think_time_s")
EXAMPLE = '{"turns": [{"prompt": "...", "output_tokens": 64}, {"input_tokens": 40, "think_time_s": 2}]}'


def read_sessions(path: str | Path, outputs: Lengths, think: ThinkTime, seed: int) -> list[Session]:
    """The sessions of a session file, in order (SpecError, one located line, when it is bad)."""
    p = Path(path)
    try:
        if p.stat().st_size > MAX_FILE_BYTES:
            raise SpecError(f"{p}: session file over {MAX_FILE_BYTES >> 20} MiB; pass a shorter one")
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{p}: cannot read the session file ({getattr(exc, 'strerror', None) or exc}); "
                        "pass a readable JSON-lines file, one session per line") from None
    rng = np.random.default_rng([seed, 2])
    out: list[Session] = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip() and not line.lstrip().startswith("#"):
            out.append(_session(f"{p}:{n}", line, outputs, think, rng))
    if not out:
        raise SpecError(f"{p}: no sessions; write one JSON object per line, e.g. {EXAMPLE}")
    return out


def _session(where: str, line: str, outputs: Lengths, think: ThinkTime, rng: np.random.Generator) -> Session:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        raise SpecError(f"{where}:{exc.colno}: not valid JSON ({exc.msg}); write one session per line, "
                        f"e.g. {EXAMPLE}") from None
    except (ValueError, RecursionError):
        raise SpecError(f"{where}: not valid JSON; write one session per line, e.g. {EXAMPLE}") from None
    if not isinstance(value, dict) or set(value) != {"turns"}:
        raise SpecError(f"{where}: a session is an object with one key, turns; e.g. {EXAMPLE}")
    turns = value["turns"]
    if not isinstance(turns, list) or not 0 < len(turns) <= MAX_TURNS:
        raise SpecError(f"{where}: turns must be a list of 1 to {MAX_TURNS} turns; e.g. {EXAMPLE}")
    return Session(tuple(_turn(f"{where}: turn {k}", t, outputs, think, rng) for k, t in enumerate(turns)))


def _turn(where: str, turn: Any, outputs: Lengths, think: ThinkTime, rng: np.random.Generator) -> Turn:
    if not isinstance(turn, dict):
        raise SpecError(f"{where}: a turn is an object with prompt or input_tokens; e.g. {EXAMPLE}")
    unknown = sorted(set(turn) - set(TURN_KEYS))
    if unknown:
        raise SpecError(f"{where}: unknown key '{str(unknown[0])[:40]}'; a turn has {', '.join(TURN_KEYS)}")
    if ("prompt" in turn) == ("input_tokens" in turn):
        raise SpecError(f"{where}: give exactly one of prompt (text) or input_tokens (a length)")
    output = _tokens(where, turn, "output_tokens")
    pause = turn.get("think_time_s")
    if pause is not None and (isinstance(pause, bool) or not isinstance(pause, (int, float))
                              or not math.isfinite(pause) or not 0 <= pause <= MAX_THINK_S):
        raise SpecError(f"{where}: think_time_s must be seconds from 0 to {MAX_THINK_S:.0f}; fix the turn")
    out_tokens = output if output is not None else outputs.draw(rng, 1)[0]
    think_s = float(pause) if pause is not None else think.draw(rng, 1)[0]
    if "prompt" in turn:
        text = turn["prompt"]
        if not isinstance(text, str) or not text.strip():
            raise SpecError(f"{where}: prompt must be non-empty text; fix the turn")
        return Turn(text, max(1, math.ceil(len(text.split()) * 4 / 3)), out_tokens, think_s)
    n_in = _tokens(where, turn, "input_tokens")
    assert n_in is not None
    words = synthetic(1, Lengths(value=n_in), Lengths(value=out_tokens), int(rng.integers(1 << 31)))[0]
    return Turn(str(words.text), n_in, out_tokens, think_s)


def _tokens(where: str, turn: dict[str, Any], key: str) -> int | None:
    value = turn.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_TOKENS:
        raise SpecError(f"{where}: {key} must be a whole number of tokens from 1 to {MAX_TOKENS}; fix the turn")
    return value
