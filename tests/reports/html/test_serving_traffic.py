"""The HTML report of a real run with reasoning, multi-turn sessions, a prompt cache and LoRA
adapters (`perfkit serve --synthetic --lora-modules a,b --reasoning-tokens 3`, `serve-bench
--sessions 3 --turns 2 --lora a,b`, then `perfkit report`) shows each traffic table with the
run's numbers, which are the known truth: 3 reasoning and 5 answer tokens per request, 3 sessions
of 2 turns, the second turn's prompt cached up to the first turn's prompt, 6 requests over the
two adapters."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest

from perfkit.cli import main
from perfkit.core.record import load_run
from perfkit.core.units import fmt_percent
from tests.helpers.serving_server import running_server

REASONING, OUTPUT, SESSIONS, TURNS = 3, 8, 3, 2


class Tables(HTMLParser):
    """Every table after an <h4>: {title: [[cell, ...] per row, header first]}."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.title: str | None = None
        self.text: str | None = None  # the text of the open h4, th or td
        self.rows: list[list[str]] = []

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag in ("h4", "th", "td"):
            self.text = ""
        elif tag == "tr":
            self.rows.append([])

    def handle_data(self, data: str) -> None:
        if self.text is not None:
            self.text += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "h4":
            self.title, self.rows = self.text, []
        elif tag in ("th", "td") and self.rows:
            self.rows[-1].append(self.text or "")
        elif tag == "table" and self.title is not None:
            self.tables[self.title], self.title = self.rows, None
        if tag in ("h4", "th", "td"):
            self.text = None


def column(table: list[list[str]], header: str) -> list[str]:
    at = table[0].index(header)
    return [row[at] for row in table[1:]]


@pytest.mark.slow
def test_the_report_shows_the_traffic_tables_of_a_real_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with running_server("--synthetic", "--ttft-ms", "10", "--itl-ms", "2", "--lora-modules", "a,b",
                        "--reasoning-tokens", str(REASONING)) as url:
        code = main(["serve-bench", url, "--out", str(tmp_path / "runs"), "--no-store", "--warmup", "0", "--api",
                     "chat", "--sessions", str(SESSIONS), "--turns", str(TURNS), "--lora", "a,b", "--seed", "5",
                     "--output-len", str(OUTPUT), "--quiet"])
    assert code == 0, capsys.readouterr().err
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert main(["report", str(run_dir), "--out", str(tmp_path / "r.html")]) == 0
    parser = Tables()
    parser.feed((tmp_path / "r.html").read_text())
    t = parser.tables
    (m,) = [p.metrics for p in load_run(run_dir / "run.json").points]
    (stage,) = column(t["Sessions"], "stage")
    assert column(t["Reasoning"], "reasoning tok/req") == [str(REASONING)]
    assert column(t["Reasoning"], "answer tok/req") == [str(OUTPUT - REASONING)]
    assert column(t["Sessions"], "sessions") == [str(SESSIONS)]
    assert column(t["Sessions"], "turns completed per session (mean)") == [str(TURNS)]
    turns = t[f"By turn: {stage}"]
    assert column(turns, "turn") == ["0", "1"] and column(turns, "requests") == [str(SESSIONS)] * TURNS
    first, second = (float(v) for v in column(turns, "prompt tokens (mean)"))
    assert column(turns, "cached tokens (mean)") == ["0", f"{first:g}"] and second > first
    assert column(t[f"By session: {stage}"], "turns completed") == [str(TURNS)] * SESSIONS
    assert column(t["Prompt cache"], "of prompt tokens cached") == [fmt_percent(m["prompt_cache_share"])]
    assert column(t["Prompt cache"], "requests said") == [f"{SESSIONS * TURNS} of {SESSIONS * TURNS}"]
    adapters = t[f"By adapter: {stage}"]
    assert column(adapters, "adapter") == ["a", "b"]
    asked = [int(n) for n in m["adapter_table"]["requests"]]
    assert column(adapters, "requests") == [str(n) for n in asked] and sum(asked) == SESSIONS * TURNS
