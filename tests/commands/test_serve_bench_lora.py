"""`serve-bench --lora` end to end against `perfkit serve --synthetic --lora-modules a,b
--lora-extra-ms b=...`: each request names the adapter the seed assigns it (counts and order
equal the seeded assignment), adapter b's TPOT is higher by the configured time, the stage shows
one line per adapter; an adapter the server does not list is one line, exit 2, nothing sent;
the spec's `lora` block."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from perfkit.cli import build_parser, main
from perfkit.commands.serve_bench import build_spec
from perfkit.core.errors import SpecError
from perfkit.workloads.serving.client.lora import assign
from perfkit.workloads.serving.client.request_file import read_requests
from perfkit.workloads.serving.spec import ServingSpec
from tests.helpers.serving_server import get_text, metric, running_server

ITL_MS, EXTRA_MS = 3.0, 6.0
TPOT_TOL_S = 1e-3  # as the client's exactness tests (token ITL within 0.5-2 ms of the server's)
REQUESTS, SEED = 24, 5


@pytest.fixture(scope="module")
def synthetic() -> Iterator[str]:
    with running_server("--synthetic", "--ttft-ms", "10", "--itl-ms", str(ITL_MS), "--lora-modules", "a,b",
                        "--lora-extra-ms", f"b={EXTRA_MS}") as url:
        yield url


def _bench(url: str, tmp_path: Path, *extra: str) -> int:
    return main(["serve-bench", url, "--out", str(tmp_path / "runs"), "--no-store", "--warmup", "0", *extra])


@pytest.mark.slow
def test_each_request_names_its_seeded_adapter_and_b_is_slower(synthetic: str, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    code = _bench(synthetic, tmp_path, "--lora", "a,b", "--seed", str(SEED), "--requests", str(REQUESTS),
                  "--concurrency", "2", "--output-len", "12", "--format", "json")
    out = capsys.readouterr().out
    assert code == 0, out
    doc = json.loads(out)
    m = doc["stages"][0]["metrics"]
    assigned = assign(["a", "b"], None, SEED, REQUESTS)
    counts = Counter(assigned)
    t = m["adapter_table"]
    assert t["adapter"] == ["a", "b"] and t["requests"] == [counts["a"], counts["b"]] == t["requests_ok"]
    assert 0 < counts["a"] < REQUESTS  # both adapters drawn: the comparison below means something
    records = read_requests(Path(doc["run_dir"]) / m["requests_file"])
    assert [r.adapter for r in sorted(records, key=lambda r: r.index)] == list(assigned)
    a_tpot, b_tpot = t["tpot_p50_s"]
    assert a_tpot == pytest.approx(ITL_MS * 1e-3, abs=TPOT_TOL_S)
    assert b_tpot - a_tpot == pytest.approx(EXTRA_MS * 1e-3, abs=TPOT_TOL_S)


@pytest.mark.slow
def test_weights_sglang_form_and_the_stage_lines(synthetic: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    code = _bench(synthetic, tmp_path, "--lora", "a:3,b:1", "--lora-format", "sglang", "--requests", "8",
                  "--output-len", "4")
    out = capsys.readouterr().out
    assert code == 0, out
    counts = Counter(assign(["a", "b"], [3, 1], 0, 8))
    lines = [line for line in out.splitlines() if ": adapter " in line]
    assert len(lines) == len(counts)
    for line, name in zip(lines, sorted(counts), strict=True):
        assert line.startswith("perfkit: serving/serve-bench/concurrency=1: adapter ")
        assert f"adapter {name}: {counts[name]} requests ({counts[name]} ok), TTFT p50 " in line
    # a plain stage looks as before: no adapter lines
    assert _bench(synthetic, tmp_path, "--requests", "2", "--output-len", "2") == 0
    assert ": adapter " not in capsys.readouterr().out


@pytest.mark.slow
def test_an_adapter_the_server_does_not_list_is_refused_before_sending(synthetic: str, tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    before = metric(get_text(synthetic, "/metrics"), "request_success_total")
    code = _bench(synthetic, tmp_path, "--lora", "a,nope", "--requests", "2")
    err = capsys.readouterr().err
    assert code == 2
    line, = err.strip().splitlines()
    assert line.startswith("perfkit: error: --lora nope: ") and "a, b" in line and "--lora-modules" in line
    assert metric(get_text(synthetic, "/metrics"), "request_success_total") == before


def _spec(*words: str) -> ServingSpec:
    spec = build_spec(build_parser("serve-bench").parse_args(["serve-bench", "http://127.0.0.1:9", *words]))
    return spec.workloads[0]  # type: ignore[no-any-return]


def test_the_options_are_the_specs_lora_block() -> None:
    spec = _spec("--lora", "sql:3,python:1", "--lora-format", "vllm")
    assert spec.lora is not None
    assert (spec.lora.adapters, spec.lora.weights, spec.lora.format) == (("sql", "python"), (3.0, 1.0), "vllm")
    assert _spec("--lora", "a,b").lora == ServingSpec.model_validate(
        {"kind": "serving", "name": "x", "lora": ["a", "b"]}).lora
    assert ServingSpec.model_validate({"kind": "serving", "name": "x", "lora": {"sql": 3, "py": 1}}).lora.weights == (
        3.0, 1.0)
    assert _spec().lora is None


@pytest.mark.parametrize(("words", "says"), [
    (["--lora", "a:0"], "--lora 'a:0': write NAME or NAME:WEIGHT"),
    (["--lora", "a,a"], "serve-bench --lora: an adapter is named twice"),
    (["--lora", "a b"], "serve-bench --lora: adapter 'a b': a name of letters"),
    (["--lora-format", "vllm"], "serve-bench --lora: no adapters"),
])  # fmt: skip
def test_bad_lora_options_name_the_option(words: list[str], says: str) -> None:
    with pytest.raises(SpecError) as err:
        _spec(*words)
    assert str(err.value).startswith(says) and "\n" not in str(err.value)
