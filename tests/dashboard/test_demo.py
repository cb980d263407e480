"""`perfkit dashboard --demo`: real CPU runs of real commits of a demo git repository, one of
which really slows a code path; History, Overview, Compare and `perfkit history` agree on it."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from perfkit.cli import main
from perfkit.core.errors import StoreError
from perfkit.dashboard.demo import build
from perfkit.dashboard.demo_repo import BRANCH, CHANGE_MESSAGE, FAST_BODY, SLOW_BODY, demo_history
from perfkit.store.api import open_store
from perfkit.store.read import get_run, load_run

pytestmark = pytest.mark.slow  # the demo store: twelve real profile runs, built once per session

LINEAR_KEY = "custom/linear/tokens=8,d_model=512"


def git(repo: Path, *args: str) -> list[str]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True,
                          ).stdout.split()


@pytest.fixture
def demo(demo_store: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The demo store, served to the dashboard pages."""
    monkeypatch.setenv("PERFKIT_DB", demo_store.demo.db_url)
    monkeypatch.setenv("PERFKIT_RUNS", str(demo_store.demo.runs_dir))
    return demo_store


def test_history_commits_change_only_the_linear_code_path_at_change_at() -> None:
    commits = demo_history(12, 7)
    assert [c.slow for c in commits] == [False] * 6 + [True] * 6
    linear = [i for i, c in enumerate(commits, start=1) if "demo_ops/linear.py" in c.files]
    assert linear == [1, 7] and commits[6].message == CHANGE_MESSAGE
    assert FAST_BODY in commits[0].files["demo_ops/linear.py"] and SLOW_BODY in commits[6].files["demo_ops/linear.py"]
    assert len({c.message for c in demo_history(30, 7)}) == 30  # fillers stay distinct on a long history
    with pytest.raises(ValueError, match="change_at"):
        demo_history(5, 1)


def test_each_run_is_a_real_profile_of_a_real_commit(demo_store: Any) -> None:
    demo, info = demo_store.demo, demo_store.info
    repo = demo.directory / "repo"
    shas = [c["sha"] for c in info["commits"]]
    assert len(shas) == 12 and git(repo, "rev-list", "--reverse", BRANCH) == shas
    assert git(repo, "log", "--format=%H", "--", "demo_ops/linear.py") == [demo_store.change_sha, shas[0]]
    assert git(repo, "show", "--name-only", "--format=", demo_store.change_sha) == ["demo_ops/linear.py"]
    engine = open_store(demo.db_url)
    try:
        with engine.connect() as conn:
            for commit in info["commits"]:
                row = get_run(conn, commit["run_id"])
                assert (row.commit, row.branch) == (commit["sha"], BRANCH)
                run = load_run(conn, commit["run_id"])
                checkout = Path(str(run.env.git.repo))  # a clone of the demo repository, at that commit
                assert checkout.parent == demo.directory / "checkouts" and run.env.git.dirty is False
                assert git(checkout, "rev-parse", "--abbrev-ref", "HEAD") == [BRANCH]
                assert "demo" not in run.env.extra  # nothing re-filed: the record is perfkit profile's own
                ok = [p for p in run.points if p.status == "ok"]
                assert len(ok) == 4 and all(p.measurement and len(p.measurement.samples_s) >= 10 for p in ok)
                assert any(p.key == LINEAR_KEY and p.numerics and p.numerics.ok for p in ok)
            assert get_run(conn, demo_store.gpu_run).gpu.startswith("NVIDIA H100")
    finally:
        engine.dispose()
    assert info["gpu_runs"] == [demo_store.gpu_run] and "1 GPU run(s)" in demo.label
    assert demo_store.change_sha[:10] in demo.label and CHANGE_MESSAGE in demo.label


def test_perfkit_history_finds_the_step_at_the_commit_that_changed_the_code(
        demo_store: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["history", f"{LINEAR_KEY}:time_s", "--db", demo_store.demo.db_url, "--format", "json"]) == 0
    (cp,) = json.loads(capsys.readouterr().out)["change_points"]
    assert (cp["commit"], cp["previous_commit"]) == (demo_store.change_sha, demo_store.before_sha)
    assert cp["kind"] == "regression" and cp["magnitude"] > 0.5  # a copy of W per call: far slower


def test_overview_history_and_compare_tell_the_same_story(demo: Any) -> None:
    from tests.dashboard.test_pages import app, frame

    at = app()
    opened = frame(at, "overview_open")
    row = opened[opened["point"] == LINEAR_KEY].iloc[0]
    assert (row["metric"], row["seen by"], row["since commit"]) == ("time_s", "change point", demo.change_sha)
    assert int({m.label: m.value for m in at.metric}["Open regressions"]) == len(opened)
    latest = frame(at, "overview_table")
    assert len(latest) == 2  # the demo's CPU series and the GPU run
    cpu = latest[latest["spec"] == "demo-cpu"].iloc[0]
    assert cpu["open_regressions"] >= 1 and cpu["open_regressions"] >= cpu["regressed"]
    # Compare of the two runs the Overview links: the gate's verdict is the one the Overview shows
    base_run = demo.info["commits"][demo.info["change_at"] - 2]["run_id"]
    latest_run = demo.info["commits"][-1]["run_id"]
    (link,) = [e.proto for e in at.get("page_link") if e.proto.query_string == f"base={base_run}&run={latest_run}"]
    assert link.page == "compare" and link.label.endswith(f": {row['gate']}")
    at = app("views/compare.py", base=base_run, run=latest_run)
    table = frame(at, "cmp_table")
    verdict = table[(table["key"] == LINEAR_KEY) & (table["metric"] == "time_s")].iloc[0]["verdict"]
    assert verdict == row["gate"]
    # "regressed" on a quiet machine; on a loaded one the runs' own spread can make it "noisy", never
    # a verdict that contradicts a 3x slowdown
    assert verdict not in ("improved", "unchanged", "incomparable")
    # History: the change point at that commit, after the commit before it
    at = app("views/history.py", metric=f"{LINEAR_KEY}:time_s")
    changes = frame(at, "history_changes")
    assert list(changes["commit"]) == [demo.change_sha] and list(changes["previous commit"]) == [demo.before_sha]
    assert list(changes["kind"]) == ["regression"]
    (link,) = at.get("page_link")
    first_run = demo.info["commits"][demo.info["change_at"] - 1]["run_id"]
    assert link.proto.page == "compare" and link.proto.query_string == f"base={base_run}&run={first_run}"


def test_built_once_then_reused(demo_store: Any) -> None:
    start = time.perf_counter()
    again = build(demo_store.demo.directory, progress=lambda _: None)
    assert not again.built and again.db_url == demo_store.demo.db_url and time.perf_counter() - start < 2.0
    assert again.label == demo_store.demo.label


def test_refuses_to_replace_a_folder_it_did_not_make(tmp_path: Path) -> None:
    (tmp_path / "demo" / "repo").mkdir(parents=True)
    (tmp_path / "demo" / "repo" / "mine.txt").write_text("keep me")
    with pytest.raises(StoreError, match="is not a perfkit demo repository"):
        build(tmp_path / "demo", progress=lambda _: None)
    assert (tmp_path / "demo" / "repo" / "mine.txt").read_text() == "keep me"


@pytest.mark.parametrize("argv", [["--port", "0"], ["--port", "70000"]])
def test_bad_port_is_bad_input(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:  # refused while parsing, before anything starts
        main(["dashboard", *argv])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("perfkit dashboard: error: argument --port") and err.count("\n") == 1


def test_compare_shows_the_op_diff_of_the_change(demo: Any) -> None:
    """The runs before and at the change keep their traces: Compare shows the added copy."""
    from tests.dashboard.test_pages import app, frame

    commits, k = demo.info["commits"], demo.info["change_at"]
    at = app("views/compare.py", base=commits[k - 2]["run_id"], run=commits[k - 1]["run_id"])
    at.selectbox(key="cmp_point").set_value(LINEAR_KEY).run()
    assert not at.exception and not any("Not available" in i.value for i in at.info)
    diff = frame(at, "cmp_diff")
    added = set(diff[diff["status"] == "added"]["name"])
    assert added & {"aten::copy_", "aten::clone", "aten::contiguous"}, added  # W^T made contiguous: a copy
    copied = diff[diff["name"].isin(added)]
    assert all(v.startswith("+") for v in copied["change"])  # time the change added, formatted
    assert any("CPU ops" in c.value for c in at.caption)
