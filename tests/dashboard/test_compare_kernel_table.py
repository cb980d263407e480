"""The Compare page of a serving pair whose stages kept server traces: under the why lines, the
per-step-type kernel table (the rows `perfkit compare` writes as the kernel-level why) and a
download of each side's trace for ui.perfetto.dev. Real runs: `serve-bench` against `perfkit
serve --synthetic`, real traces of perfkit's decoder handed over with `serve-bench attach`, the
runs stored with `perfkit ingest`."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

pytest.importorskip("streamlit", reason="the dashboard extra is not installed")

from perfkit.cli import main
from perfkit.core.record import load_run
from perfkit.core.units import fmt_time
from perfkit.reports.serving.kernel_table import KERNEL_COLUMNS, PERFETTO_URL
from tests.dashboard.test_pages import app
from tests.helpers.serving_server import running_server

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces" / "perfkit"
BENCH = ["--concurrency", "1", "--requests", "6", "--output-len", "8", "--no-store", "--format", "json"]


@pytest.mark.slow
def test_compare_page_shows_the_kernel_table_and_each_trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    url, root, dirs = f"sqlite:///{tmp_path / 'k.db'}", tmp_path / "runs", []
    for itl_ms, trace in (("40", "tiny_eager.json.gz"), ("56", "tiny_compile.json.gz")):
        with running_server("--synthetic", "--ttft-ms", "20", "--itl-ms", itl_ms) as server:
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                assert main(["serve-bench", server, "--out", str(root), *BENCH]) == 0, out.getvalue()
        run_dir = Path(json.loads(out.getvalue())["run_dir"])
        assert main(["serve-bench", "attach", str(run_dir), str(TRACES / trace)]) == 0
        assert main(["ingest", str(run_dir), "--db", url]) == 0
        dirs.append(run_dir)
    base, cand = (load_run(d).run_id for d in dirs)
    capsys.readouterr()
    assert main(["compare", base, cand, "--db", url, "--format", "json"]) in (0, 1)
    kernels = json.loads(capsys.readouterr().out)["serving_why"][0]["kernels"]
    assert kernels["failure"] == "" and kernels["alignment"] == "category"  # eager vs compile: by op category

    monkeypatch.setenv("PERFKIT_DB", url)
    monkeypatch.setenv("PERFKIT_RUNS", str(root))
    monkeypatch.setenv("PERFKIT_HOME", str(tmp_path / "home"))
    at = app("views/compare.py", run=cand, base=base)
    tables = [df.value for df in at.dataframe if list(df.value.columns) == list(KERNEL_COLUMNS)]
    assert len(tables) == 1, [list(df.value.columns) for df in at.dataframe]
    table = tables[0]
    want = []  # the CLI's kernel level, row for row
    for s in kernels["step_types"]:
        want.append((s["kind"], "busy", fmt_time(s["busy"]["base_s"]), fmt_time(s["busy"]["cand_s"]), s["busy"]["state"]))
        want += [(s["kind"], c["name"], fmt_time(c["base_s"]), fmt_time(c["cand_s"]), c["state"]) for c in s["classes"]]
    got = [tuple(r) for r in table[["step type", "class", "baseline per step", "candidate per step", "verdict"]]
           .itertuples(index=False)]
    assert got == want and len(got) > 3
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels == ["baseline: tiny_eager.json.gz", "candidate: tiny_compile.json.gz"]
    assert any(f"[open in ui.perfetto.dev]({PERFETTO_URL})" in m.value for m in at.markdown)
