"""Prometheus text from vLLM, SGLang and llama.cpp servers: parse, delta, derived numbers; and
hostile text that must never raise."""

from __future__ import annotations

import math

import pytest

from perfkit.workloads.serving.telemetry import prometheus
from perfkit.workloads.serving.telemetry.prometheus import cumulative, delta, derived, parse

M = 'model_name="meta-llama/Llama-3.1-8B-Instruct"'


def vllm_text(prompt: float, gen: float, hits: float, queries: float, drafts: float,
              draft_tokens: float, accepted: float, per_pos: tuple[float, ...], ttft_sum: float,
              ttft_count: float, running: float, kv: float) -> str:
    pos = "\n".join(f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",{M},'
                    f'position="{i}"}} {v}' for i, v in enumerate(per_pos))
    return f"""\
# HELP python_gc_objects_collected_total Objects collected during gc
# TYPE python_gc_objects_collected_total counter
python_gc_objects_collected_total{{generation="0"}} 12345.0
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{{engine="0",{M}}} {running}
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{{engine="0",{M}}} {kv}
# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{{engine="0",{M}}} {queries}
# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{{engine="0",{M}}} {hits}
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{{engine="0",{M}}} {prompt}
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{{engine="0",{M}}} {gen}
# HELP vllm:request_success_total Count of successfully processed requests.
# TYPE vllm:request_success_total counter
vllm:request_success_total{{engine="0",finished_reason="stop",{M}}} 10.0
vllm:request_success_total{{engine="0",finished_reason="length",{M}}} 5.0
# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_sum{{engine="0",{M}}} {ttft_sum}
vllm:time_to_first_token_seconds_bucket{{engine="0",le="0.001",{M}}} 0.0
vllm:time_to_first_token_seconds_bucket{{engine="0",le="0.1",{M}}} {ttft_count / 2}
vllm:time_to_first_token_seconds_bucket{{engine="0",le="+Inf",{M}}} {ttft_count}
vllm:time_to_first_token_seconds_count{{engine="0",{M}}} {ttft_count}
vllm:time_to_first_token_seconds_created{{engine="0",{M}}} 1.7e+09
# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{{engine="0",{M}}} {drafts}
# HELP vllm:spec_decode_num_draft_tokens_total Number of draft tokens.
# TYPE vllm:spec_decode_num_draft_tokens_total counter
vllm:spec_decode_num_draft_tokens_total{{engine="0",{M}}} {draft_tokens}
# HELP vllm:spec_decode_num_accepted_tokens_total Number of accepted tokens.
# TYPE vllm:spec_decode_num_accepted_tokens_total counter
vllm:spec_decode_num_accepted_tokens_total{{engine="0",{M}}} {accepted}
# HELP vllm:spec_decode_num_accepted_tokens_per_pos_total Accepted tokens per draft position.
# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter
{pos}
# HELP vllm:lora_requests_info Running stats on lora requests.
# TYPE vllm:lora_requests_info gauge
vllm:lora_requests_info{{max_lora="0",running_lora_adapters="",waiting_lora_adapters=""}} 1.7e+09
"""


BEFORE = vllm_text(1000, 500, 100, 1000, 40, 120, 60, (30, 20, 10), 1.5, 10, 0, 0.0)
AFTER = vllm_text(9000, 4500, 4100, 9000, 240, 720, 420, (190, 140, 90), 3.5, 30, 4, 0.25)


def test_parse_a_vllm_metrics_page() -> None:
    s = parse(AFTER)
    assert s.skipped == 0 and s.cut_off == 0
    labels = (("engine", "0"), ("model_name", "meta-llama/Llama-3.1-8B-Instruct"))
    assert s.values[("vllm:prompt_tokens_total", labels)] == 9000.0
    inf_bucket = ("vllm:time_to_first_token_seconds_bucket", tuple(sorted((*labels, ("le", "+Inf")))))
    assert s.values[inf_bucket] == 30.0
    assert s.kind("vllm:time_to_first_token_seconds_bucket") == "histogram"
    assert s.kind("vllm:prompt_tokens_total") == "counter"
    assert cumulative(s, "vllm:time_to_first_token_seconds_sum")
    assert not cumulative(s, "vllm:time_to_first_token_seconds_created")
    assert not cumulative(s, "vllm:kv_cache_usage_perc")


def test_delta_and_the_derived_vllm_numbers() -> None:
    d = delta(parse(BEFORE), parse(AFTER))
    labels = (("engine", "0"), ("model_name", "meta-llama/Llama-3.1-8B-Instruct"))
    assert d[("vllm:time_to_first_token_seconds_sum", labels)] == pytest.approx(2.0)
    assert d[("vllm:time_to_first_token_seconds_count", labels)] == 20.0
    assert d[("vllm:num_requests_running", labels)] == 4.0  # a gauge: the after value
    out = derived(d)
    assert out["server_prompt_tokens"] == 8000.0 and out["server_generation_tokens"] == 4000.0
    assert out["server_prefix_cache_hit_rate"] == pytest.approx(4000 / 8000)
    assert out["server_kv_cache_usage"] == 0.25
    assert out["server_spec_acceptance_rate"] == pytest.approx(360 / 600)  # accepted / draft tokens
    assert out["server_spec_mean_accepted_length"] == pytest.approx(1 + 360 / 200)  # 1 + acc / drafts
    assert [out[f"server_spec_acceptance_rate_pos_{i}"] for i in range(3)] == pytest.approx(
        [160 / 200, 120 / 200, 80 / 200])
    assert "server_preemptions" not in out  # not on the page


def test_perfkit_server_names_mirror_vllm() -> None:
    d = delta(parse(BEFORE.replace("vllm:", "perfkit:")), parse(AFTER.replace("vllm:", "perfkit:")))
    assert derived(d)["server_prefix_cache_hit_rate"] == pytest.approx(0.5)


def test_a_counter_reset_counts_from_zero_and_new_series_from_zero() -> None:
    before = parse("# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total 500\n")
    after = parse("# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total 120\n"
                  "vllm:num_preemptions_total 3\n")  # untyped, named like a counter
    d = delta(before, after)
    assert d[("vllm:prompt_tokens_total", ())] == 120.0  # the server restarted
    assert derived(d)["server_preemptions"] == 3.0


def test_older_vllm_names_gpu_prefix_cache_and_gpu_cache_usage() -> None:
    text = ("vllm:gpu_prefix_cache_queries_total 200\nvllm:gpu_prefix_cache_hits_total 50\n"
            "vllm:gpu_cache_usage_perc 0.5\n")
    out = derived(delta(parse(""), parse(text)))
    assert out["server_prefix_cache_hit_rate"] == 0.25 and out["server_kv_cache_usage"] == 0.5
    assert derived(delta(parse(""), parse("vllm:gpu_prefix_cache_hit_rate 0.3\n")))[
        "server_prefix_cache_hit_rate"] == 0.3


SGLANG = """\
# HELP sglang:prompt_tokens_total Number of prefill tokens processed.
# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total{model_name="m"} 8.0e+03
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{model_name="m"} 2.0e+03
# TYPE sglang:cached_tokens_total counter
sglang:cached_tokens_total{model_name="m"} 6.0e+03
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="m"} 0.28
# TYPE sglang:spec_accept_length gauge
sglang:spec_accept_length{model_name="m"} 2.8
# TYPE sglang:spec_accept_rate gauge
sglang:spec_accept_rate{model_name="m"} 0.6
"""

LLAMACPP = """\
# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 6886
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total 3469
# TYPE llamacpp:kv_cache_usage_ratio gauge
llamacpp:kv_cache_usage_ratio 0.125
"""


def test_sglang_and_llamacpp_numbers() -> None:
    sg = derived(delta(parse(""), parse(SGLANG)))
    assert sg == {"server_prompt_tokens": 8000.0, "server_generation_tokens": 2000.0,
                  "server_prefix_cache_hit_rate": 0.75, "server_kv_cache_usage": 0.28,
                  "server_spec_acceptance_rate": 0.6, "server_spec_mean_accepted_length": 2.8}
    ll = derived(delta(parse(""), parse(LLAMACPP)))
    assert ll == {"server_prompt_tokens": 6886.0, "server_generation_tokens": 3469.0,
                  "server_kv_cache_usage": 0.125}


def test_labels_with_escapes_nan_and_inf() -> None:
    text = ('m{path="C:\\\\dir",quote="say \\"hi\\"",nl="a\\nb",} NaN\n'
            'g{le="+Inf"} +Inf\nh -Inf 1700000000000\n  spaced  { a = "1" }   2.5e-3  \n')
    s = parse(text)
    assert s.skipped == 0, s
    key = ("m", (("nl", "a\nb"), ("path", "C:\\dir"), ("quote", 'say "hi"')))
    assert math.isnan(s.values[key])
    assert s.values[("g", (("le", "+Inf"),))] == math.inf and s.values[("h", ())] == -math.inf
    assert s.values[("spaced", (("a", "1"),))] == 0.0025


HOSTILE = [
    "\x00\x01\x02 binary junk",
    "name{unclosed=\"x} 1",
    'name{a="b"}1',
    'name{a=b} 1',
    "name one",
    "name 1 2 3",
    "name",
    "{a=\"b\"} 1",
    "9name 1",
    "name{a=\"b\" c=\"d\"} 1",
    "name 0x10",
    "name 1_000",
    "# TYPE name notatype",
    "name{" + "a=\"b\"," * 10 + " 1",
    "name 1" + "1" * 5000 + "x",
    "ÿ€ 1",
]


def test_hostile_text_never_raises_and_counts_what_it_skipped() -> None:
    s = parse("\n".join([*HOSTILE, "ok_total 5"]))
    assert s.values == {("ok_total", ()): 5.0}
    assert s.skipped == len(HOSTILE)
    assert parse(None).skipped == 1  # type: ignore[arg-type]
    assert derived(delta(parse("garbage"), parse("vllm:prompt_tokens_total abc"))) == {}


def test_input_is_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prometheus, "MAX_CHARS", 100)
    monkeypatch.setattr(prometheus, "MAX_LINE_CHARS", 40)
    monkeypatch.setattr(prometheus, "MAX_SERIES", 3)
    s = parse("x" * 41 + " 1\n" + "".join(f"a{i} {i}\n" for i in range(10)))
    assert s.skipped == 1 and len(s.values) == 3 and s.cut_off > 0
