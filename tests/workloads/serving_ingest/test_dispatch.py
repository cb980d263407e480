"""read_serving_results: the format from the content, one located line for every bad file."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from perfkit.core.errors import EXIT_BAD_INPUT, PerfkitError
from perfkit.workloads.serving.ingest.boundary import MAX_FILE_BYTES, ServingResultsError
from perfkit.workloads.serving.ingest.dispatch import read_serving_results

DATA = Path(__file__).resolve().parents[2] / "data" / "serving"


@pytest.mark.parametrize("rel, source, stages", [
    ("vllm/vllm-0.11-detailed.json", "vllm", 1),
    ("vllm/vllm-append.jsonl", "vllm", 2),
    ("aiperf/aiperf-0.2/profile_export.jsonl", "aiperf", 1),
    ("aiperf/aiperf-0.10/profile_export_aiperf.json", "aiperf", 1),
    ("guidellm/benchmarks-0.7.json", "guidellm", 2),
    ("guidellm/benchmarks-0.3.json", "guidellm", 1),
])
def test_detected_from_content_not_name(tmp_path: Path, rel: str, source: str, stages: int) -> None:
    renamed = tmp_path / "results.txt"  # no tool's file name, no telling extension
    shutil.copy(DATA / rel, renamed)
    got = read_serving_results(renamed)
    assert [s.source for s in got] == [source] * stages
    assert all(s.path == str(renamed) for s in got)


def refused(path: Path, **kw: int) -> str:
    with pytest.raises(ServingResultsError) as exc:
        read_serving_results(path, **kw)
    assert isinstance(exc.value, PerfkitError) and exc.value.exit_code == EXIT_BAD_INPUT
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(str(path)) and "; " in msg  # FILE: what; what to do
    return msg


def test_missing_directory_empty(tmp_path: Path) -> None:
    assert "no such file" in refused(tmp_path / "nope.json")
    assert "is a directory" in refused(tmp_path)
    (tmp_path / "empty.json").write_text("")
    assert "the file is empty" in refused(tmp_path / "empty.json")


def test_size_limit_is_checked_before_reading(tmp_path: Path) -> None:
    assert MAX_FILE_BYTES == 1 << 30
    big = tmp_path / "big.json"
    with big.open("wb") as fh:  # sparse: nothing is written or read
        fh.truncate(MAX_FILE_BYTES + 1)
    assert "over the 1.00 GiB perfkit reads" in refused(big)
    small = tmp_path / "small.json"
    shutil.copy(DATA / "vllm/vllm-0.11-detailed.json", small)
    assert "GiB perfkit reads" in refused(small, max_bytes=100)
    os.truncate(big, 0)


def test_not_text_not_json_not_a_result(tmp_path: Path) -> None:
    binary = tmp_path / "model.bin"
    binary.write_bytes(b"GGUF\x03\x00\xff\xfe")
    assert "not UTF-8" in refused(binary)
    cut = tmp_path / "cut.json"
    cut.write_text((DATA / "vllm/vllm-0.11-detailed.json").read_text()[:500])
    assert refused(cut).startswith(f"{cut}:1:") and "not valid JSON" in refused(cut)
    prose = tmp_path / "notes.txt"
    prose.write_text("key: [unclosed\n  - nope: {\n")
    assert "neither JSON, JSON Lines nor YAML" in refused(prose)
    other = tmp_path / "other.json"
    other.write_text('{"name": "resnet", "images_per_s": 2900}')
    msg = refused(other)
    assert "not a result of vllm bench serve, AIPerf or GuideLLM" in msg
    assert "keys name, images_per_s" in msg
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2, 3]")
    assert "(a list)" in refused(listed)
    scalar = tmp_path / "plain.yaml"
    scalar.write_text("just words\n")
    assert "(a str)" in refused(scalar)


def test_csv_exports_are_named(tmp_path: Path) -> None:
    csv = tmp_path / "profile_export_aiperf.csv"
    csv.write_text("Metric,avg,min,max\nTime to First Token (ms),12.1,9.8,20.3\n")
    assert "a CSV export carries no per-request data" in refused(csv)


def test_deep_nesting_is_refused(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    assert "nested too deeply" in refused(deep)


def test_jsonl_of_unknown_objects_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text('\n{"event": "start"}\n{"event": "stop"}\n')
    assert refused(path).startswith(f"{path}:2: not a result")


def test_two_guidellm_reports_in_one_file_are_refused(tmp_path: Path) -> None:
    text = (DATA / "guidellm/benchmarks-0.3.json").read_text().strip()
    path = tmp_path / "two.jsonl"
    path.write_text(text + "\n" + text + "\n")
    assert "several GuideLLM reports" in refused(path)
