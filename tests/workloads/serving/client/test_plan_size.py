"""Plans without bounds are refused before anything starts (client/plan_size.py): exit 2 with
the numbers, no run directory, no request sent."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfkit.cli import main


@pytest.mark.parametrize(("args", "needle"), [
    (["--rate", "1e-300"], "take 3.2e+301 s, over 604800 s"),
    (["--input-len", "10000000", "--requests", "1000"], "hold 1e+10 tokens"),
    (["--rate", "inf", "--requests", "10000000"], "10000000 requests all at once, over 100000"),
    (["--rate", "inf", "--duration-s", "5"], "sends without end"),
    (["--output-len", "2000000"], "over 1048576 per request"),
    (["--concurrency", "4", "--duration-s", "60", "--input-len", "10000"], "4096 prompts of up to 10000 tokens"),
])
def test_a_plan_past_its_bounds_is_exit_2_before_anything(args: list[str], needle: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["serve-bench", "http://127.0.0.1:9/v1", "--no-store", "--out", str(tmp_path / "runs"), *args])
    err = capsys.readouterr().err
    assert code == 2 and "serve-bench plan: " in err and needle in err, err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


def test_a_plan_within_bounds_is_accepted() -> None:
    import argparse

    from perfkit.commands.serve_bench import add_parser, build_spec

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    add_parser(sub)
    args = parser.parse_args(["serve-bench", "http://h:1/v1", "--rate", "0.001", "--duration-s", "5"])
    assert build_spec(args).workloads[0].load.rate == (0.001,)
