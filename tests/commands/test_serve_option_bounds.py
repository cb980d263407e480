"""`perfkit serve` options past any sensible size are refused when the command line is parsed
(one line naming the option and both numbers, exit 2), before a server or a list is made:
`--spec-k 10^9` would allocate a counter per draft position, `--ttft-ms 1e300` would wait
forever, `--max-batch 10^9` a KV cache of 10^9 rows."""

from __future__ import annotations

import pytest

from perfkit.cli import main


@pytest.mark.parametrize(("args", "needle"), [
    (["--synthetic", "--spec-k", "1000000000", "--spec-accept-rate", "0.5"], "--spec-k: 1000000000 is above 1,024"),
    (["--synthetic", "--ttft-ms", "1e300"], "--ttft-ms: 1e300 is above 3,600,000"),
    (["--synthetic", "--itl-ms", "1e300"], "--itl-ms: 1e300 is above 3,600,000"),
    (["--synthetic", "--jitter-ms", "1e300"], "--jitter-ms: 1e300 is above 3,600,000"),
    (["--synthetic", "--max-concurrency", "1" + "0" * 21], "--max-concurrency: 1000000000000000000000 is above 1,000,000"),
    (["--model", "tiny", "--max-batch", "1000000000"], "--max-batch: 1000000000 is above 4096"),
], ids=["spec-k", "ttft", "itl", "jitter", "max-concurrency", "max-batch"])
def test_an_absurd_serve_option_is_one_line_exit_2(args: list[str], needle: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    try:
        rc = main(["serve", *args, "--port", "0"])
    except SystemExit as exc:  # argparse's own exit
        rc = int(exc.code or 0)
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert rc == 2 and out == "" and len(lines) == 1 and "Traceback" not in err, err
    assert needle in lines[0], lines


def test_the_largest_allowed_values_are_kept() -> None:
    from perfkit.cli import build_parser
    from perfkit.commands.serve import serve_options
    from perfkit.workloads.serving.server.options import SyntheticOptions

    args = build_parser("serve").parse_args(["serve", "--synthetic", "--spec-k", "1024", "--spec-accept-rate", "0.5",
                                             "--ttft-ms", "3600000", "--max-concurrency", "1000000"])
    mode = serve_options(args).mode
    assert isinstance(mode, SyntheticOptions) and mode.spec is not None
    assert (mode.spec.k, mode.ttft_s, mode.max_concurrency) == (1024, 3600.0, 1_000_000)
