"""read_serving_results: the format from the content, one located line for every bad file."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from perfkit.core.errors import EXIT_BAD_INPUT, PerfkitError
from perfkit.ingest.serving.boundary import MAX_FILE_BYTES, ServingResultsError
from perfkit.ingest.serving.dispatch import read_serving_results

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


def test_a_gzip_result_is_refused_in_one_line(tmp_path: Path) -> None:
    import gzip

    packed = tmp_path / "results.json.gz"
    packed.write_bytes(gzip.compress((DATA / "vllm/vllm-0.11-detailed.json").read_bytes()))
    assert "not UTF-8 text (byte 1)" in refused(packed)
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(packed.read_bytes()[:40])
    assert "not UTF-8" in refused(cut)


def test_jsonl_with_lines_that_are_not_json_counts_them(tmp_path: Path) -> None:
    source = DATA / "aiperf/aiperf-0.2/profile_export.jsonl"
    good = source.read_text().splitlines()
    path = tmp_path / "profile_export.jsonl"
    path.write_text("\n".join([good[0], "{broken", "[" * 5000 + "]" * 5000, *good[1:]]) + "\n")
    (clean,) = read_serving_results(source)
    (stage,) = read_serving_results(path)
    assert stage.requests == clean.requests
    notes = "\n".join(stage.notes)
    assert "dropped 1 request: a line that is not JSON (Expecting property name enclosed in double quotes) " \
           "(first: line 2)" in notes
    assert "dropped 1 request: a line that is nested too deeply (first: line 3)" in notes
    only_bad = tmp_path / "bad.jsonl"
    only_bad.write_text("{broken\nnot json either\n")
    assert refused(only_bad).startswith(f"{only_bad}:1:2: not valid JSON")


def test_an_absurd_token_count_drops_the_request_not_the_memory(tmp_path: Path) -> None:
    import json

    data = json.loads((DATA / "guidellm/benchmarks-0.3.json").read_text())
    # GuideLLM keeps no per-token times: rebuilt evenly, this would be 10**12 token times
    data["benchmarks"][0]["requests"]["successful"][0]["output_tokens"] = 10**12
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(data))
    (stage,) = read_serving_results(path)
    assert any("dropped 1 request: output token count is over 1048576" in n for n in stage.notes), stage.notes


WRONG = ["x", [], {}, None, True, -1, 1e400, float("nan"), 10**30, [[1.0]], [{"a": 1}]]


@pytest.mark.slow
@pytest.mark.parametrize(("rel", "under"), [
    ("vllm/vllm-0.11-detailed.json", ()),
    ("guidellm/benchmarks-0.3.json", ("benchmarks", 0, "requests", "successful", 0)),
])
def test_a_value_of_any_wrong_type_anywhere_is_read_or_refused(tmp_path: Path, rel: str,
                                                               under: tuple[object, ...]) -> None:
    """Every key (of the first request, for GuideLLM's large report), each given every wrong type:
    the file is read (the request dropped and counted) or refused in one line; never another
    exception, never a blow-up."""
    import json

    original = json.loads((DATA / rel).read_text())
    start: object = original
    for step in under:
        start = start[step]  # type: ignore[index]

    def places(obj: object, at: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        out = [at]
        if isinstance(obj, dict):
            out += [p for k, v in obj.items() for p in places(v, (*at, k))]
        elif isinstance(obj, list) and obj:
            out += places(obj[0], (*at, 0))
        return out

    path = tmp_path / "mutated.json"
    for at in [(*under, *p) for p in places(start)][1:]:
        for wrong in WRONG:
            data = json.loads(json.dumps(original))
            holder = data
            for step in at[:-1]:
                holder = holder[step]
            holder[at[-1]] = wrong
            path.write_text(json.dumps(data))
            try:
                read_serving_results(path)
            except ServingResultsError as exc:
                assert "\n" not in str(exc)
