"""Session files (client/session_file.py) and synthetic sessions (client/sessions.py): turns as
given, defaults from the spec, lengths as asked; a bad line is one located error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfkit.core.errors import EXIT_BAD_INPUT, SpecError
from perfkit.workloads.serving.client.prompts import Lengths
from perfkit.workloads.serving.client.session_file import read_sessions
from perfkit.workloads.serving.client.sessions import ThinkTime, synthetic_sessions, total_turns


def _write(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_turns_are_replayed_as_given_with_the_spec_defaults(tmp_path: Path) -> None:
    path = _write(tmp_path, "# a comment", "",
                  json.dumps({"turns": [{"prompt": "How are you", "output_tokens": 4},
                                        {"input_tokens": 7, "think_time_s": 2.5}]}),
                  json.dumps({"turns": [{"prompt": "hi", "think_time_s": 0}]}))
    sessions = read_sessions(path, Lengths(value=9), ThinkTime(value_s=1.5), seed=0)
    assert len(sessions) == 2 and total_turns(sessions) == 3
    first, second = sessions[0].turns
    assert (first.text, first.output_tokens, first.think_s) == ("How are you", 4, 1.5)  # spec's think time
    assert len(second.text.split()) == 7 and second.input_tokens == 7
    assert (second.output_tokens, second.think_s) == (9, 2.5)  # spec's output length
    assert sessions[1].turns[0].think_s == 0.0
    assert read_sessions(path, Lengths(value=9), ThinkTime(value_s=1.5), seed=0) == sessions  # seeded


@pytest.mark.parametrize(("lines", "where", "says"), [
    (("",), "s.jsonl:", "no sessions"),
    (('{"turns": [{"prompt": "x"}]}', '{"turns": [1]}'), "s.jsonl:2: turn 0", "a turn is an object"),
    (('{"turns": [{"prompt": ""}]}',), "s.jsonl:1: turn 0", "prompt must be non-empty"),
    (('{"turns": [{"prompt": "x", "output_tokens": 1.5}]}',), "s.jsonl:1: turn 0", "output_tokens must be"),
    (('{"turns": [{"prompt": "x", "think_time_s": true}]}',), "s.jsonl:1: turn 0", "think_time_s must be"),
    (('{"turns": [{"prompt": "x"}], "id": 3}',), "s.jsonl:1:", "one key, turns"),
    (('{"turns": [{"prompt": "x"}',), "s.jsonl:1:", "not valid JSON"),
])
def test_a_bad_line_is_one_located_error(tmp_path: Path, lines: tuple[str, ...], where: str, says: str) -> None:
    path = _write(tmp_path, *lines)
    with pytest.raises(SpecError) as err:
        read_sessions(path, Lengths(), ThinkTime(), 0)
    msg = str(err.value)
    assert err.value.exit_code == EXIT_BAD_INPUT and "\n" not in msg
    assert msg.startswith(str(tmp_path / where)) and says in msg and "; " in msg


def test_an_unreadable_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="cannot read the session file"):
        read_sessions(tmp_path / "absent.jsonl", Lengths(), ThinkTime(), 0)


def test_synthetic_sessions_draw_lengths_and_think_times() -> None:
    sessions = synthetic_sessions(5, 3, Lengths(value=6), Lengths(value=4), ThinkTime("uniform", low_s=1, high_s=2),
                                  seed=3)
    assert len(sessions) == 5 and total_turns(sessions) == 15
    for s in sessions:
        assert [t.input_tokens for t in s.turns] == [6, 6, 6] and all(len(t.text.split()) == 6 for t in s.turns)
        assert [t.output_tokens for t in s.turns] == [4, 4, 4]
        assert s.turns[0].think_s == 0.0 and all(1 <= t.think_s <= 2 for t in s.turns[1:])
    assert len({s.turns[0].text for s in sessions}) == 5
    pauses = ThinkTime("exponential", 2.0).draw(__import__("numpy").random.default_rng(0), 4000)
    assert sum(pauses) / len(pauses) == pytest.approx(2.0, rel=0.1)
