"""The traffic tables of a workload's stages (reasoning, sessions by stage / turn / session, prompt
cache, LoRA adapters): the terminal's words and cells, user strings kept as text and cut, long
tables capped with a note, nothing for plain stages; the HTML and Markdown reports show them
escaped."""

from __future__ import annotations

from typing import Any

from markdown_it import MarkdownIt

from perfkit.core.record import PointResult
from perfkit.reports.html.serving import traffic_blocks
from perfkit.reports.markdown.serving import workload_lines
from perfkit.reports.serving.adapter_text import adapter_lines_of
from perfkit.reports.serving.session_text import cache_line, session_line
from perfkit.reports.serving.traffic_tables import MAX_NAME, MAX_SESSIONS_SHOWN, traffic_tables
from tests.helpers.serving_runs import serving_run, stage_metrics, stage_point

EVIL_ADAPTER = '<script>alert("a")</script> [x](http://evil) \x1b[31m|pipe|'
EVIL_SESSION = "<img src=x onerror=alert(1)>"  # a hand-made run.json's session id


def traffic_metrics(sessions: int = 3) -> dict[str, Any]:
    return {
        "ttfa_p50_s": 0.0188, "ttfa_p99_s": 0.0301, "reasoning_tok_per_req_mean": 3.0, "answer_tok_per_req_mean": 5.0,
        "reasoning_token_source": "per_chunk",
        "sessions": float(sessions), "session_turns_mean": 2.0, "session_duration_p50_s": 0.0612,
        "session_ttft_mean_p50_s": 0.0158,
        "turn_table": {"turn": [0.0, 1.0], "requests": [3.0, 3.0], "requests_ok": [3.0, 2.0],
                       "ttft_p50_s": [0.0168, None], "input_tokens_mean": [156.0, 321.0],
                       "cached_tokens_mean": [0.0, 156.0]},
        "session_table": {"session": [EVIL_SESSION, *(float(i) for i in range(1, sessions))],
                          "turns_ok": [2.0] * sessions, "duration_s": [0.0612] * sessions,
                          "ttft_mean_s": [0.0196] * sessions},
        "prompt_cache_reported": 6.0, "prompt_cache_share": 0.327, "prompt_cached_tokens": 468.0,
        "adapter_table": {"adapter": ["a", EVIL_ADAPTER + "x" * 100], "requests": [2.0, 4.0],
                          "requests_ok": [2.0, 4.0], "ttft_p50_s": [0.0148, 0.0166], "tpot_p50_s": [0.00231, None]},
    }


def traffic_point(sessions: int = 3) -> PointResult:
    return stage_point(2, stage_metrics(2) | traffic_metrics(sessions))


def test_every_table_in_the_terminals_words_and_cells() -> None:
    p = traffic_point()
    tables = {t.title: t for t in traffic_tables([stage_point(1, stage_metrics(1)), p])}
    assert list(tables) == ["Reasoning", "Sessions", "By turn: concurrency=2", "By session: concurrency=2",
                            "Prompt cache", "By adapter: concurrency=2"]  # the plain stage adds no row
    assert tables["Reasoning"].rows == (("concurrency=2", "70 ms", "18.8 ms", "30.1 ms", "3", "5", "per_chunk"),)
    assert tables["Reasoning"].headers[1:6] == ("TTFT p50", "TTFA p50", "TTFA p99", "reasoning tok/req",
                                                "answer tok/req")
    assert tables["Sessions"].rows == (("concurrency=2", "3", "2", "61.2 ms", "15.8 ms"),)
    turns = tables["By turn: concurrency=2"]
    assert turns.headers == ("turn", "requests", "ok", "TTFT p50", "prompt tokens (mean)", "cached tokens (mean)")
    assert turns.rows == (("0", "3", "3", "16.8 ms", "156", "0"), ("1", "3", "2", "-", "321", "156"))
    by_session = tables["By session: concurrency=2"]
    assert by_session.rows[0] == (EVIL_SESSION, "2", "61.2 ms", "19.6 ms") and by_session.rows[1][0] == "1"
    assert tables["Prompt cache"].rows == (("concurrency=2", "32.7%", "468", "6 of 64"),)
    adapters = tables["By adapter: concurrency=2"]
    assert adapters.rows == (("a", "2", "2", "14.8 ms", "2.31 ms"),
                             ((EVIL_ADAPTER + "x" * 100)[:MAX_NAME], "4", "4", "16.6 ms", "-"))
    # the terminal's lines read the same cells
    m = p.metrics
    assert "TTFT p50 16.8 ms, -; prompt tokens (mean) 156, 321; cached tokens (mean) 0, 156" in str(session_line("k", m))
    assert cache_line("k", m) == "k: prompt cache: 32.7% of prompt tokens cached (468 tokens; 6 of 64 requests said)"
    assert adapter_lines_of("k", m)[0] == "k: adapter a: 2 requests (2 ok), TTFT p50 14.8 ms, TPOT p50 2.31 ms"


def test_long_session_tables_are_capped_with_a_note_and_plain_stages_have_none() -> None:
    (by_session,) = [t for t in traffic_tables([traffic_point(MAX_SESSIONS_SHOWN + 7)]) if t.title.startswith("By s")]
    assert len(by_session.rows) == MAX_SESSIONS_SHOWN and by_session.note == "7 more sessions (the run's session_table)"
    assert traffic_tables([stage_point(1, stage_metrics(1))]) == []
    assert traffic_tables([stage_point(1, stage_metrics(1) | {"adapter_table": {"adapter": "abc"}})]) == []


def test_the_reports_show_them_escaped() -> None:
    html = "".join(traffic_blocks([traffic_point()]))
    assert "<script" not in html and "<img" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html and "&lt;script&gt;alert(&quot;a&quot;)" in html
    assert "\x1b" not in html and "\\x1b[31m" in html
    assert "<h4>By adapter: concurrency=2</h4>" in html and '<td class="num">32.7%</td>' in html
    run = serving_run()
    run = run.with_points((*run.points, traffic_point()))
    text = "\n".join(workload_lines(run, "chat"))
    assert "\x1b" not in text and "By turn: concurrency=2:" in text
    page = MarkdownIt("commonmark").enable("table").render(text)
    assert "<script" not in page and "<img" not in page and "<a href" not in page
    assert "<td>&lt;img src=x onerror=alert(1)&gt;</td>" in page
