"""The per-request file keeps the reasoning fields (first answer time, reasoning tokens and their
source); a file written before they existed reads as no reasoning; a count over the output is refused."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from perfkit.core.errors import StoreError
from perfkit.workloads.serving.client.request_file import read_requests, write_requests
from perfkit.workloads.serving.records import (
    REASONING_FROM_DETAILS,
    TOKENS_FROM_USAGE,
    RequestRecord,
)

REASONED = RequestRecord(index=0, scheduled_s=0.0, sent_s=0.001, token_times_s=(0.05, 0.06, 0.07),
                         chunk_times_s=(0.05, 0.06, 0.07), chunk_tokens=(1, 1, 1), end_s=0.08, input_tokens=4,
                         output_tokens=3, token_source=TOKENS_FROM_USAGE, first_answer_s=0.07, reasoning_tokens=2,
                         reasoning_source=REASONING_FROM_DETAILS)
PLAIN = RequestRecord(index=1, scheduled_s=0.1, sent_s=0.101, token_times_s=(0.15,), chunk_times_s=(0.15,),
                      chunk_tokens=(1,), end_s=0.16, input_tokens=4, output_tokens=1, first_answer_s=0.15)
FAILED = RequestRecord(index=2, scheduled_s=0.2, sent_s=None, error="unreachable: refused")


def test_reasoning_fields_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "requests.jsonl.gz"
    write_requests(path, [REASONED, PLAIN, FAILED])
    back = read_requests(path)
    assert back == [REASONED, PLAIN, FAILED]
    assert back[0].ttfa_s == pytest.approx(0.069) and back[0].answer_tokens == 1
    lines = [json.loads(t) for t in gzip.decompress(path.read_bytes()).decode().splitlines()]
    # a request without reasoning writes no reasoning keys; a failed one not even the answer time
    assert "reasoning_tokens" not in lines[1] and "reasoning_source" not in lines[1]
    assert not {"first_answer_s", "reasoning_tokens", "reasoning_source"} & lines[2].keys()


def test_an_older_file_reads_as_no_reasoning(tmp_path: Path) -> None:
    old = {"index": 0, "scheduled_s": 0.0, "sent_s": 0.001, "end_s": 0.07, "chunk_times_s": [0.05, 0.06],
           "chunk_tokens": [1, 2], "input_tokens": 12, "output_tokens": 3, "token_source": "usage",
           "error": None, "server": {}}
    path = tmp_path / "old.jsonl.gz"
    path.write_bytes(gzip.compress((json.dumps(old) + "\n").encode()))
    [r] = read_requests(path)
    assert (r.first_answer_s, r.reasoning_tokens, r.reasoning_source, r.ttfa_s) == (None, 0, None, None)
    assert r.answer_tokens == 3 and r.ttft_s == pytest.approx(0.049)


@pytest.mark.parametrize(("key", "value", "said"), [
    ("reasoning_tokens", 4, "reasoning_tokens 4 over output_tokens 3"),
    ("reasoning_tokens", -1, "reasoning_tokens"),
    ("first_answer_s", "soon", "first_answer_s"),
])
def test_a_damaged_reasoning_field_is_one_located_line(tmp_path: Path, key: str, value: object, said: str) -> None:
    path = tmp_path / "requests.jsonl.gz"
    write_requests(path, [REASONED])
    line = json.loads(gzip.decompress(path.read_bytes()))
    line[key] = value
    path.write_bytes(gzip.compress((json.dumps(line) + "\n").encode()))
    with pytest.raises(StoreError) as err:
        read_requests(path)
    assert str(err.value).startswith(f"{path}:1") and said in str(err.value) and "\n" not in str(err.value)
