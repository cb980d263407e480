"""What a server sends never reaches the terminal raw: a 500 whose body is terminal escapes, an
SSE error event with escapes, a `--model` with escapes in a failing stage's message; on stdout
and stderr every such string is shown by the terminal's escaping rule (`\\x1b`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfkit.cli import main
from tests.helpers.scripted_server import Request, plain, scripted_server, sse, text_chunk

ESC = "\x1b]0;pwned\x07\x1b[2J\x1b[31mred\u202e"


def _500(req: Request) -> list[bytes | float]:
    return [plain("500 Internal Server Error", ESC.encode() + b"\r\nsecond line")]


def _error_event(req: Request) -> list[bytes | float]:
    return [sse([text_chunk("a"), {"error": {"message": ESC}}])]


@pytest.mark.parametrize("script", [_500, _error_event], ids=["500 body", "SSE error event"])
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_server_text_is_escaped_on_stdout_and_stderr(script: object, fmt: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    with scripted_server(script) as (url, _):  # type: ignore[arg-type]
        code = main(["serve-bench", url, "--out", str(tmp_path / "runs"), "--no-store", "--requests", "2",
                     "--warmup", "0", "--model", f"m{ESC}", "--format", fmt])
    out, err = capsys.readouterr()
    assert code == 3, err
    for text in (out, err):
        assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert "\\x1b" in err  # shown, escaped
    for f in (tmp_path / "runs").rglob("run.json"):  # the reasons are stored escaped too
        point = json.loads(f.read_text())["points"][0]
        assert "\x1b" not in point["error"] and "\\x1b" in point["error"]
