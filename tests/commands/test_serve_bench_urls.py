"""`perfkit serve-bench URL`: every way a user writes the server's URL (the OpenAI SDK's `/v1`
base URL, a full endpoint URL), bad URLs refused before any run directory (exit 2, naming what
was tried), credentials never stored or printed, a bearer token from `--api-key-env`, and a
redirect to another server refused unless `--follow-redirects` (docs/failures.md)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from perfkit.cli import main
from tests.helpers.scripted_server import Request, plain, scripted_server, sse, text_chunk
from tests.helpers.serving_server import running_server


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with running_server("--synthetic", "--ttft-ms", "1", "--itl-ms", "1") as url:
        yield url


def _bench(url: str, tmp_path: Path, *extra: str) -> int:
    return main(["serve-bench", url, "--out", str(tmp_path / "runs"), "--no-store", "--concurrency", "1",
                 "--requests", "2", "--output-len", "3", "--warmup", "0", "--format", "json", *extra])


@pytest.mark.slow
@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/", "/v1/completions", "/v1/chat/completions"])
def test_every_spelling_of_the_url_reaches_the_server(server: str, suffix: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    code = _bench(server + suffix, tmp_path)
    out = capsys.readouterr().out
    assert code == 0, out
    (stage,) = json.loads(out)["stages"]
    assert stage["metrics"]["requests_ok"] == 2
    assert stage["metrics"]["endpoint"] == server  # the base, whatever was written


@pytest.mark.parametrize(("url", "needle"), [
    ("http://127.0.0.1:99999/v1", "port"),
    ("ftp://127.0.0.1:8000", "scheme 'ftp'"),
    ("http://:8000/v1", "no host"),
    ("127.0.0.1:8000", "is not http or https"),
    ("http://127.0.0.1:8000/v1?x=1", "query"),
    ("http://127.0.0.1:8000/v1/\x1b[31m", "control character"),
])
def test_a_bad_url_is_one_line_exit_2_and_no_run_directory(url: str, needle: str, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    code = _bench(url, tmp_path)
    err = capsys.readouterr().err
    assert code == 2 and needle in err and "URL" in err and len(err.strip().splitlines()) == 1, err
    assert "\x1b" not in err
    assert not (tmp_path / "runs").exists()


def test_a_chat_url_with_api_completions_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _bench("http://127.0.0.1:1/v1/chat/completions", tmp_path, "--api", "completions") == 2
    assert "names the chat API" in capsys.readouterr().err


def _needs_auth(req: Request) -> list[bytes | float]:
    if req.path == "/metrics":
        return [plain("404 Not Found", b"")]
    if req.headers.get("authorization") not in ("Bearer s3cret-token", "Basic dXNlcjpodW50ZXIy"):
        return [plain("401 Unauthorized", b'{"error": "no key"}')]
    return [sse([text_chunk("a"), text_chunk("b")])]


def test_credentials_in_the_url_are_sent_never_stored_or_printed(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    with scripted_server(_needs_auth) as (url, requests):
        with_creds = url.replace("http://", "http://user:hunter2@") + "/v1"
        code = main(["serve-bench", with_creds, "--out", str(tmp_path / "runs"), "--db",
                     f"sqlite:///{tmp_path / 'p.db'}", "--requests", "2", "--warmup", "0"])
    out, err = capsys.readouterr()
    assert code == 0, (out, err)
    assert any(r.headers.get("authorization") == "Basic dXNlcjpodW50ZXIy" for r in requests)
    assert "hunter2" not in out + err
    for f in [*(tmp_path / "runs").rglob("*"), tmp_path / "p.db"]:
        if f.is_file():
            data = f.read_bytes()
            if f.suffix == ".gz":
                import gzip

                data = gzip.decompress(data)
            assert b"hunter2" not in data, f
    run = json.loads(next((tmp_path / "runs").rglob("run.json")).read_text())
    assert run["points"][0]["metrics"]["endpoint"].startswith("http://***@127.0.0.1:")


def test_a_bearer_token_comes_from_api_key_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MY_KEY", "s3cret-token")
    with scripted_server(_needs_auth) as (url, _):
        assert _bench(url + "/v1", tmp_path, "--api-key-env", "MY_KEY") == 0
        out = capsys.readouterr().out
        assert "s3cret" not in out
        monkeypatch.delenv("MY_KEY")
        assert _bench(url, tmp_path / "b", "--api-key-env", "MY_KEY") == 2
    err = capsys.readouterr().err
    assert "--api-key-env MY_KEY: the variable is not set" in err
    assert not (tmp_path / "b" / "runs").exists()


def test_a_redirect_to_another_server_is_refused_unless_asked(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    with scripted_server(lambda req: [sse([text_chunk("a"), text_chunk("b")])]) as (other, other_requests):
        def redirect(req: Request) -> list[bytes | float]:
            return [plain("307 Temporary Redirect", b"", extra_headers=f"Location: {other}{req.path}\r\n")]

        with scripted_server(redirect) as (url, _):
            code = _bench(url, tmp_path)
            err = capsys.readouterr().err
            assert code == 3 and "redirected to another server" in err and "--follow-redirects" in err, err
            assert not [r for r in other_requests if r.method == "POST"]
            assert _bench(url, tmp_path, "--follow-redirects") == 0
            assert [r for r in other_requests if r.method == "POST"]


def test_a_redirect_on_the_same_server_is_followed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def script(req: Request) -> list[bytes | float]:
        if req.path.startswith("/new"):
            return [sse([text_chunk("a"), text_chunk("b")])]
        return [plain("308 Permanent Redirect", b"", extra_headers=f"Location: /new{req.path}\r\n")]

    with scripted_server(script) as (url, _):
        assert _bench(url, tmp_path) == 0, capsys.readouterr()
