"""The per-request file of a serving stage: written and read back whole; a damaged one is one
located line (StoreError, exit 2), never a traceback or a memory blow-up."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from perfkit.core.errors import EXIT_BAD_INPUT, StoreError
from perfkit.workloads.serving.client.request_file import read_requests, write_requests
from perfkit.workloads.serving.records import TOKENS_FROM_USAGE, RequestRecord

RECORDS = [
    RequestRecord(index=0, scheduled_s=0.0, sent_s=0.001, token_times_s=(0.05, 0.06, 0.06), chunk_times_s=(0.05, 0.06),
                  chunk_tokens=(1, 2), chunk_rx_s=(0.0497, 0.0598), end_s=0.07, input_tokens=12, output_tokens=3,
                  token_source=TOKENS_FROM_USAGE, server={"timings": {"predicted_ms": 20.5}}),
    RequestRecord(index=1, scheduled_s=0.5, sent_s=None, error="unreachable: refused"),
]


def _written(tmp_path: Path) -> Path:
    path = tmp_path / "stage" / "requests.jsonl.gz"
    write_requests(path, RECORDS)
    return path


def test_round_trip(tmp_path: Path) -> None:
    assert read_requests(_written(tmp_path)) == RECORDS


def _lines(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(t) for t in gzip.decompress(_written(tmp_path).read_bytes()).decode().splitlines()]


def _refused(path: Path) -> str:
    with pytest.raises(StoreError) as err:
        read_requests(path)
    msg = str(err.value)
    assert err.value.exit_code == EXIT_BAD_INPUT and "\n" not in msg and msg.startswith(str(path)) and "; " in msg
    return msg


def _gz(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "damaged.jsonl.gz"
    path.write_bytes(gzip.compress(text.encode()))
    return path


def test_damaged_gzip_is_one_line(tmp_path: Path) -> None:
    whole = _written(tmp_path).read_bytes()
    cut = tmp_path / "cut.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    assert "not a readable gzip file" in _refused(cut)
    plain = tmp_path / "plain.gz"
    plain.write_text('{"index": 0}\n')
    assert "not a readable gzip file" in _refused(plain)
    garbage = tmp_path / "garbage.gz"
    garbage.write_bytes(b"\x1f\x8b\x08\x00" + bytes(range(256)))
    assert "not a readable gzip file" in _refused(garbage)


def test_not_json_or_not_utf8_names_the_line(tmp_path: Path) -> None:
    rows = _lines(tmp_path)
    text = json.dumps(rows[0]) + "\n{not json\n"
    assert _refused(_gz(tmp_path, text)).startswith(f"{tmp_path / 'damaged.jsonl.gz'}:2:2: not valid JSON")
    latin = tmp_path / "latin.gz"
    latin.write_bytes(gzip.compress(b'{"error": "caf\xe9"}\n'))
    assert "not UTF-8 at byte 14" in _refused(latin)
    deep = _gz(tmp_path, json.dumps(rows[0]) + "\n" + "[" * 100_000 + "]" * 100_000 + "\n")
    assert ":2: nested too deeply" in _refused(deep)


@pytest.mark.parametrize(("edit", "says"), [
    (lambda r: r.update(chunk_tokens=[1, float("inf")]), "chunk_tokens[1]: Infinity is not a whole number"),
    (lambda r: r.update(chunk_tokens=[1, 10**12]), "chunk_tokens[1]: 1000000000000 is not a whole number <= 1048576"),
    (lambda r: r.update(chunk_tokens=[1]), "2 chunk_times_s but 1 chunk_tokens"),
    (lambda r: r.update(chunk_tokens=[2**19, 2**19 + 1]), "chunk_tokens add up to over"),
    (lambda r: r.update(chunk_times_s="soon"), 'chunk_times_s: "soon" is not a list'),
    (lambda r: r.update(chunk_rx_s=[0.04]), "1 chunk_rx_s but 2 chunk_times_s"),
    (lambda r: r.update(chunk_rx_s=[0.04, float("nan")]), "chunk_rx_s[1]: NaN is not a finite number"),
    (lambda r: r.update(sent_s=float("nan")), "sent_s: NaN is not a finite number"),
    (lambda r: r.update(index=-1), "index: -1 is not a whole number >= 0"),
    (lambda r: r.update(server=[1]), "server: a list is not an object"),
    (lambda r: r.pop("scheduled_s"), "missing required field `scheduled_s`"),
])
def test_a_wrong_field_is_named_with_its_line(tmp_path: Path, edit: Any, says: str) -> None:
    rows = _lines(tmp_path)
    edit(rows[0])
    msg = _refused(_gz(tmp_path, "\n".join(json.dumps(r) for r in rows) + "\n"))
    assert msg.startswith(f"{tmp_path / 'damaged.jsonl.gz'}:1: ") and says in msg, msg


def test_session_and_cache_fields_round_trip_and_older_files_load(tmp_path: Path) -> None:
    import dataclasses

    turns = [dataclasses.replace(RECORDS[0], session_id=2, turn=1, cached_tokens=0),
             dataclasses.replace(RECORDS[0], index=5, session_id=0, turn=0)]
    path = tmp_path / "sessions.jsonl.gz"
    write_requests(path, turns)
    back = read_requests(path)
    assert back == turns and (back[0].cached_tokens, back[1].cached_tokens) == (0, None)  # 0 is said, None not
    # a plain stage's lines are as before (no new keys), and such a file reads with the defaults
    rows = _lines(tmp_path)
    assert not any(k in row for row in rows for k in ("session_id", "turn", "cached_tokens"))
    assert all(r.session_id is None and r.turn is None and r.cached_tokens is None
               for r in read_requests(_written(tmp_path)))


def test_the_adapter_round_trips_and_older_files_load(tmp_path: Path) -> None:
    import dataclasses

    named = [dataclasses.replace(RECORDS[0], adapter="sql"), dataclasses.replace(RECORDS[1], adapter="org/py-v2")]
    path = tmp_path / "lora.jsonl.gz"
    write_requests(path, named)
    assert read_requests(path) == named
    # a stage without adapters writes no key, and such (older) files read as the base model
    assert not any("adapter" in row for row in _lines(tmp_path))
    assert all(r.adapter is None for r in read_requests(_written(tmp_path)))
    assert "adapter" in _refused(_gz(tmp_path, json.dumps(_lines(tmp_path)[0] | {"adapter": ""})))
