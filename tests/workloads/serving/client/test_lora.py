"""Which adapter each request names (seeded, weighted) and how it is named on the wire."""

from __future__ import annotations

from collections import Counter

from perfkit.workloads.serving.client.lora import (
    Assigner,
    assign,
    choose_format,
    listed_adapters,
    sglang_adapters,
    wire_model,
)
from perfkit.workloads.serving.client.send import ClientOptions, Prompt, request_body


def test_the_same_seed_gives_the_same_assignment_and_another_seed_another() -> None:
    one = assign(["a", "b", "c"], None, 7, 300)
    assert one == assign(["a", "b", "c"], None, 7, 300)
    assert one != assign(["a", "b", "c"], None, 8, 300)
    assert set(one) == {"a", "b", "c"}
    # any request index, in any order (a duration stage, client processes): the same as the list
    pick = Assigner(["a", "b", "c"], None, 7)
    assert [pick(i) for i in reversed(range(300))] == list(reversed(one))
    assert assign(["a", "b", "c"], None, 7, 10) == one[:10]


def test_uniform_and_weighted_odds() -> None:
    n = 20_000
    uniform = Counter(assign(["a", "b"], None, 1, n))
    assert abs(uniform["a"] / n - 0.5) < 0.02
    weighted = Counter(assign(["sql", "python"], [3, 1], 1, n))
    assert abs(weighted["sql"] / n - 0.75) < 0.02
    assert Counter(assign(["only"], None, 3, 5)) == {"only": 5}


def test_wire_forms() -> None:
    assert wire_model("meta-llama/Llama-3.1-8B", "sql", "vllm") == "sql"
    assert wire_model("meta-llama/Llama-3.1-8B", "sql", "sglang") == "meta-llama/Llama-3.1-8B:sql"
    opts = ClientOptions(base_url="http://h:1", model="base", lora_format="sglang")
    assert request_body(opts, Prompt("hi", 1, 4, adapter="sql"))["model"] == "base:sql"
    assert request_body(opts, Prompt("hi", 1, 4))["model"] == "base"  # no adapter: the base model


def test_what_a_server_lists() -> None:
    cards = [{"id": "base", "parent": None}, {"id": "sql", "parent": "base"}, {"id": "self", "parent": "self"},
             {"id": 3, "parent": "base"}]
    assert listed_adapters(cards) == ["sql"]
    assert sglang_adapters({"lora_paths": {"sql": "/p", "py": "/q"}}) == ["sql", "py"]
    assert sglang_adapters({"lora_paths": ["sql=/p", "/just/a/path", {"lora_name": "py", "lora_path": "/q"}]}) == [
        "sql", "/just/a/path", "py"]
    assert sglang_adapters({"lora_paths": None}) == sglang_adapters("not a dict") == []


def test_auto_picks_the_form_the_server_speaks() -> None:
    assert choose_format("auto", ["sql"], ["sql", "py"], None) == "vllm"
    assert choose_format("auto", ["sql"], [], "sglang") == "sglang"
    assert choose_format("auto", ["sql"], [], "vllm") is None
    assert choose_format("sglang", ["sql"], ["sql"], None) == "sglang"  # asked: as asked
