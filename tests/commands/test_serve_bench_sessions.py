"""`serve-bench` multi-turn sessions end to end against `perfkit serve --synthetic`: a scripted
3-session file's numbers equal hand counts (turns, requests, prompt tokens growing with the
history, cached tokens from the server's prefix cache, think times kept); synthetic sessions from
the options; a bad session file or a session option that does not fit is one line, exit 2."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from perfkit.cli import main
from perfkit.core.record import load_run
from perfkit.workloads.serving.client.request_file import read_requests
from tests.helpers.serving_server import running_server

# Words of at most 4 letters: one token each for perfkit serve's tokenizer (4 characters a piece).
# The answer of n tokens is " tok" n times, so its n tokens join the history as they are.
SESSIONS = [
    [{"prompt": "How are you", "output_tokens": 4},
     {"prompt": "and you", "output_tokens": 3, "think_time_s": 0.3},
     {"prompt": "why not", "output_tokens": 2, "think_time_s": 0.2}],
    [{"prompt": "What is it", "output_tokens": 2},
     {"prompt": "say more", "output_tokens": 2, "think_time_s": 0.1}],
    [{"prompt": "Tell me a joke", "output_tokens": 5}],
]
# by hand: a turn's prompt is the history (prompts and answers) and its own prompt, newline-joined
PROMPT_TOKENS = {(0, 0): 3, (0, 1): 3 + 4 + 2, (0, 2): 9 + 3 + 2, (1, 0): 3, (1, 1): 3 + 2 + 2, (2, 0): 4}
# the longest prefix an earlier prompt had: the session's previous turn, whole
CACHED = {(0, 0): 0, (0, 1): 3, (0, 2): 9, (1, 0): 0, (1, 1): 3, (2, 0): 0}
THINK_BOUND_S = 0.25  # a loaded machine's lateness allowed on top of a think time


@pytest.fixture(scope="module")
def synthetic() -> Iterator[str]:
    with running_server("--synthetic", "--ttft-ms", "10", "--itl-ms", "2") as url:
        yield url


def _file(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "sessions.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _bench(url: str, tmp_path: Path, *extra: str) -> int:
    return main(["serve-bench", url, "--out", str(tmp_path / "runs"), "--no-store", "--warmup", "0", *extra])


@pytest.mark.slow
def test_a_scripted_session_file_gives_the_hand_counts(synthetic: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    path = _file(tmp_path, ["# three sessions", *(json.dumps({"turns": s}) for s in SESSIONS)])
    code = _bench(synthetic, tmp_path, "--api", "chat", "--session-file", str(path), "--concurrency", "2",
                  "--format", "json")
    out = capsys.readouterr().out
    assert code == 0, out
    doc = json.loads(out)
    m = doc["stages"][0]["metrics"]
    assert (m["requests_ok"], m["requests_failed"], m["requests_planned"]) == (6, 0, 6)
    assert m["sessions"] == 3 and m["session_turns_mean"] == 2.0
    t = m["turn_table"]
    assert t["turn"] == [0, 1, 2] and t["requests"] == [3, 2, 1] and t["requests_ok"] == [3, 2, 1]
    assert t["input_tokens_mean"] == pytest.approx([10 / 3, 8.0, 14.0])
    assert t["cached_tokens_mean"] == pytest.approx([0.0, 3.0, 9.0])
    assert all(v > 0 for v in t["ttft_p50_s"])
    assert m["session_table"]["turns_ok"] == [3, 2, 1]
    assert m["prompt_cache_reported"] == 6 and m["prompt_cached_tokens"] == 15
    assert m["prompt_cache_share"] == pytest.approx(15 / 40)
    # the server's own counters say the same share
    assert m["server_metrics"]["server_prefix_cache_hit_rate"] == pytest.approx(15 / 40)
    records = read_requests(Path(doc["run_dir"]) / m["requests_file"])
    by_turn = {(r.session_id, r.turn): r for r in records}
    assert {k: r.input_tokens for k, r in by_turn.items()} == PROMPT_TOKENS
    assert {k: r.cached_tokens for k, r in by_turn.items()} == CACHED
    assert [by_turn[s, k].output_tokens for s, k in sorted(by_turn)] == [4, 3, 2, 2, 2, 5]
    for (s, k), r in by_turn.items():  # each turn sent its think time after the previous answer
        if k:
            before = by_turn[s, k - 1]
            assert before.end_s is not None and r.sent_s is not None
            pause = SESSIONS[s][k]["think_time_s"]
            assert pause <= r.sent_s - before.end_s < pause + THINK_BOUND_S
    durations = m["session_table"]["duration_s"]
    assert durations[0] >= 0.5 and durations[1] >= 0.1
    assert m["session_duration_p50_s"] == pytest.approx(sorted(durations)[1])
    # two sessions at once: the third starts once one of the first two ended
    assert max(r.sent_s or 0 for r in records if r.session_id == 2) >= min(
        by_turn[0, 2].end_s or 0, by_turn[1, 1].end_s or 0)


@pytest.mark.slow
def test_synthetic_sessions_from_the_options(synthetic: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    code = _bench(synthetic, tmp_path, "--sessions", "4", "--turns", "3", "--think-time-s", "exp:0.02",
                  "--concurrency", "2", "--input-len", "8", "--output-len", "4")
    out = capsys.readouterr().out
    assert code == 0, out
    assert "4 sessions, 3 turns completed per session" in out and "prompt cache:" in out
    run = load_run(Path(out.strip().splitlines()[-1]) / "run.json")
    t = run.points[0].metrics["turn_table"]
    assert t["requests"] == [4, 4, 4]
    prompts = t["input_tokens_mean"]
    assert prompts[0] < prompts[1] < prompts[2]  # the history grows turn by turn


BAD = [
    (['{"turns": [{"prompt": "hi"}]}', "{not json"], 2, "not valid JSON"),
    (['{"turns": []}'], 1, "turns must be a list"),
    (['{"turns": [{"prompt": "hi", "input_tokens": 3}]}'], 1, "exactly one of prompt"),
    (['{"turns": [{"prompt": "hi", "thinktime": 3}]}'], 1, "unknown key 'thinktime'"),
    (['', '{"turns": [{"input_tokens": 0}]}'], 2, "input_tokens must be"),
    (['{"turns": [{"prompt": "hi", "think_time_s": -1}]}'], 1, "think_time_s must be"),
    (['[1, 2]'], 1, "a session is an object"),
]


@pytest.mark.parametrize(("lines", "line", "needle"), BAD)
def test_a_bad_session_file_is_one_line_exit_2(lines: list[str], line: int, needle: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = _file(tmp_path, lines)
    code = _bench("http://127.0.0.1:9", tmp_path, "--model", "m", "--api", "chat", "--session-file", str(path))
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert f"{path}:{line}" in err and needle in err and "Traceback" not in err


@pytest.mark.parametrize(("args", "needle"), [
    (["--sessions", "2", "--rate", "4"], "closed loop"),
    (["--sessions", "2", "--requests", "8"], "drop --requests"),
    (["--sessions", "2", "--token-ids"], "text prompts"),
    (["--turns", "3"], "count"),
    (["--sessions", "2", "--think-time-s", "soon"], "--think-time-s"),
    (["--sessions", "2", "--think-time-s", "uniform:3:1"], "swap them"),
])
def test_session_options_that_do_not_fit_are_one_line_exit_2(args: list[str], needle: str, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    code = _bench("http://127.0.0.1:9", tmp_path, "--model", "m", *args)
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert needle in err and "Traceback" not in err
