"""serve-bench's options derived from the serving spec's fields (perfkit.commands.spec_options):
one declaration per option, parsed back into the spec, errors named by the option."""

from __future__ import annotations

import argparse
from typing import Annotated

import pytest
from pydantic import Field

from perfkit.cli import build_parser, main
from perfkit.commands.serve_bench import build_spec
from perfkit.commands.spec_options import add_options, declared, option_at, spec_dict
from perfkit.core.cli_option import CliOption, comma_numbers
from perfkit.core.errors import SpecError
from perfkit.workloads.base import FrozenModel
from perfkit.workloads.serving.spec import ServingSpec

# the options serve-bench had when they were mirrored by hand: none lost, none renamed
FLAGS = {
    "url", "--model", "--api", "--concurrency", "--rate", "--replay", "--burstiness", "--max-concurrency",
    "--requests", "--duration-s", "--warmup", "--input-len", "--output-len", "--dataset", "--shared-prefix",
    "--groups", "--token-ids", "--vocab-size", "--slo", "--slo-quantile", "--price-per-gpu-hour", "--gpus",
    "--prices", "--price-name", "--target-interactivity", "--metrics-url", "--read-timeout-s",
    "--request-timeout-s", "--connect-timeout-s", "--no-usage", "--logprobs", "--processes",
    "--follow-redirects", "--api-key-env", "--no-ignore-eos",  # added since
    "--sessions", "--turns", "--think-time-s", "--session-file", "--tokenizer",
    "--lora", "--lora-format", "--gpu-metrics", "--gpu-metrics-gpus", "--price-per-kwh",
    "--replay-block-size", "--replay-speed",
}


def _args(*words: str) -> argparse.Namespace:
    return build_parser("serve-bench").parse_args(["serve-bench", "http://127.0.0.1:9", *words])


def test_every_option_is_declared_once_on_the_spec() -> None:
    flags = [d.option.flag for d in declared(ServingSpec)]
    assert sorted(flags) == sorted(FLAGS) and len(flags) == len(set(flags))


def test_options_map_back_into_the_spec() -> None:
    spec = build_spec(_args("--rate", "1,inf", "--burstiness", "2", "--dataset", "d.json", "--slo", "ttft=0.5",
                            "--slo-quantile", "0.9", "--no-usage", "--input-len", "7")).workloads[0]
    assert spec.load.rate == (1.0, float("inf")) and spec.load.concurrency is None and spec.load.burstiness == 2
    assert spec.prompts.source == "sharegpt" and spec.prompts.path == "d.json" and spec.prompts.input_len.value == 7
    assert spec.slo.ttft_s == 0.5 and spec.slo.quantile == 0.9 and spec.client.usage is False
    assert build_spec(_args()).workloads[0].load.concurrency == (1,)  # the group's default


def test_an_error_names_the_option_behind_its_location() -> None:
    assert option_at(["load", "concurrency"], ServingSpec) == "--concurrency"
    assert option_at(["load"], ServingSpec) == "--concurrency / --rate / --replay"
    assert option_at(["prompts", "input_len", "value"], ServingSpec) == "--input-len"
    assert option_at(["price"], ServingSpec) == "--price-per-gpu-hour / --prices"
    assert option_at(["endpoint"], ServingSpec) == "URL"
    assert option_at(["nowhere"], ServingSpec) == "an option"


def test_options_of_one_group_exclude_each_other(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["serve-bench", "http://127.0.0.1:9", "--dataset", "d.json", "--shared-prefix", "64"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "not allowed with argument" in err and len(err.strip().splitlines()) == 1


class _Tiny(FrozenModel):
    sizes: Annotated[tuple[int, ...], CliOption("--sizes", parse=comma_numbers(int))] = ()
    label: Annotated[str | None, CliOption("--label", help="a name")] = Field(None, max_length=10)


def test_a_new_option_is_one_field_declaration() -> None:
    parser = argparse.ArgumentParser()
    add_options(parser, _Tiny)
    args = parser.parse_args(["--sizes", "1,2", "--label", "x"])
    assert spec_dict(args, _Tiny) == {"sizes": [1, 2], "label": "x"}
    assert _Tiny.model_validate(spec_dict(parser.parse_args([]), _Tiny)) == _Tiny()
    with pytest.raises(SpecError, match="--sizes '1,y': not a comma-separated list"):
        spec_dict(parser.parse_args(["--sizes", "1,y"]), _Tiny)


def test_help_builds_no_spec_model() -> None:
    import subprocess
    import sys

    code = ("import sys; from perfkit.cli import build_parser; build_parser();"
            "print('perfkit.workloads.serving.spec' in sys.modules, 'pydantic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
