"""`serve-bench --replay` of a Mooncake trace end to end against `perfkit serve --synthetic`: the
prefix reuse the trace asks for equals the hand count, and the server's prefix cache (token
granularity, exact) reports the same share; each request's prompt length, output length and cached
tokens are the file's. A bad trace is one line FILE:LINE, exit 2."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from perfkit.cli import main
from perfkit.workloads.serving.client.request_file import read_requests
from tests.helpers.serving_server import running_server

BLOCK = 16
# (timestamp ms, input_length, output_length, hash_ids) with 16-token blocks
TRACE = [
    (0, 40, 3, [1, 2, 3]),  # blocks of 16, 16, 8 tokens
    (10, 48, 2, [1, 2, 4]),  # shares blocks 1, 2 with request 0: 32 tokens
    (20, 20, 4, [1, 5]),  # shares block 1: 16
    (30, 40, 2, [1, 2, 3]),  # request 0 again: all 40
    (40, 16, 3, [6]),  # nothing
    (50, 35, 2, [6, 7, 8]),  # shares block 6 with request 4: 16
]
CACHED = [0, 32, 16, 40, 0, 16]  # by hand, from the comments above
INPUT = sum(t[1] for t in TRACE)  # 199


@pytest.fixture(scope="module")
def synthetic() -> Iterator[str]:
    with running_server("--synthetic", "--ttft-ms", "5", "--itl-ms", "1") as url:
        yield url


def _trace(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "trace.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _line(t: float, n_in: object, n_out: object, ids: object) -> str:
    return json.dumps({"timestamp": t, "input_length": n_in, "output_length": n_out, "hash_ids": ids})


def _bench(url: str, tmp_path: Path, *extra: str) -> int:
    return main(["serve-bench", url, "--out", str(tmp_path / "runs"), "--no-store", *extra])


@pytest.mark.slow
def test_a_mooncake_trace_gets_the_reuse_it_asks_for(synthetic: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    path = _trace(tmp_path, [_line(*t) for t in TRACE])
    code = _bench(synthetic, tmp_path, "--replay", str(path), "--replay-block-size", str(BLOCK), "--token-ids",
                  "--format", "json")  # the default warm-up request too: it must leave no block cached
    out = capsys.readouterr().out
    assert code == 0, out
    doc = json.loads(out)
    m = doc["stages"][0]["metrics"]
    assert (m["requests_ok"], m["requests_failed"]) == (6, 0)
    assert m["replay_prefix_reuse_asked"] == pytest.approx(sum(CACHED) / INPUT)
    assert m["prompt_cache_share"] == pytest.approx(sum(CACHED) / INPUT)
    assert m["prompt_cache_reported"] == 6 and m["prompt_cached_tokens"] == sum(CACHED)
    note = next(n for n in m["serving_notes"] if n.startswith("prefix reuse:"))
    assert "asked 52.3%" in note and "achieved 52.3%" in note and "16-token blocks" in note, note
    records = sorted(read_requests(Path(doc["run_dir"]) / m["requests_file"]), key=lambda r: r.index)
    assert [r.cached_tokens for r in records] == CACHED
    assert [r.input_tokens for r in records] == [t[1] for t in TRACE]
    assert [r.output_tokens for r in records] == [t[2] for t in TRACE]
    # open loop at the trace's times (ms), never before them
    assert all((r.sent_s or 0.0) >= t[0] / 1000 for r, t in zip(records, TRACE, strict=True))


@pytest.mark.slow
def test_replay_speed_scales_the_arrivals(synthetic: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # ids no other test sends: the module's server remembers every earlier prompt
    path = _trace(tmp_path, [_line(0, 16, 1, [100]), _line(400, 16, 1, [100])])
    code = _bench(synthetic, tmp_path, "--replay", str(path), "--replay-block-size", str(BLOCK), "--token-ids",
                  "--replay-speed", "4", "--warmup", "0", "--format", "json")
    out = capsys.readouterr().out
    assert code == 0, out
    m = json.loads(out)["stages"][0]["metrics"]
    records = sorted(read_requests(Path(json.loads(out)["run_dir"]) / m["requests_file"]), key=lambda r: r.index)
    gap = (records[1].sent_s or 0.0) - (records[0].sent_s or 0.0)
    assert 0.09 <= gap < 0.3, gap  # 400 ms / 4
    assert m["replay_prefix_reuse_asked"] == pytest.approx(0.5) and m["prompt_cache_share"] == pytest.approx(0.5)


BAD = [
    ([_line(0, 40, 3, [1, 2, 3]), "{oops"], 2, "not a number or a JSON object"),
    ([_line(0, 0, 3, [])], 1, "'input_length' must be"),
    ([_line(0, 40, 0, [1, 2, 3])], 1, "'output_length' must be"),
    ([_line(0, 3_000_000, 3, [1])], 1, "'input_length' must be"),
    ([_line(0, 40, 3, [1, 2])], 1, "2 hash_ids for input_length 40"),
    ([_line(0, 40, 3, [1, 2, 3, 4])], 1, "4 hash_ids for input_length 40"),
    ([_line(0, 40, 3, [1, -2, 3])], 1, "'hash_ids' must be a list"),
    ([_line(0, 40, 3, "1,2,3")], 1, "'hash_ids' must be a list"),
    ([_line(-5, 40, 3, [1, 2, 3])], 1, "'timestamp' must be"),
    ([_line(0, 40, 3, [1, 2, 3]), json.dumps({"timestamp": 5})], 2, "no hash_ids on this line"),
    ([json.dumps({"timestamp": 5}), _line(0, 40, 3, [1, 2, 3])], 2, "hash_ids on this line only"),
]


@pytest.mark.parametrize(("lines", "line", "needle"), BAD)
def test_a_bad_trace_is_one_line_exit_2(lines: list[str], line: int, needle: str, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = _trace(tmp_path, lines)
    code = _bench("http://127.0.0.1:9", tmp_path, "--model", "m", "--replay", str(path),
                  "--replay-block-size", str(BLOCK))
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert f"{path}:{line}:" in err and needle in err and "Traceback" not in err, err
