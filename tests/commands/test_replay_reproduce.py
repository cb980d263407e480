"""The `reproduce:` command under a kernel-level why leads to a spec: attention slowed on purpose
in perfkit's decoder, the why names the attention range, and its reproduce command, run as
printed, writes a `kind: attention` spec with the candidate trace's shapes that the loader takes."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
import yaml

from perfkit.pipeline.spec import load_spec
from tests.helpers.forked_cli import run_perfkit

DATA = Path(__file__).resolve().parents[1] / "data" / "traces" / "perfkit"


@pytest.mark.slow
def test_reproduce_line_of_an_attention_move_writes_an_attention_spec(tmp_path: Path) -> None:
    sys.path.insert(0, str(DATA))
    from make_traces import profile_decoder  # type: ignore[import-not-found]

    from perfkit.comparison.server_traces import kernel_why
    from perfkit.reports.serving.kernel_lines import kernel_lines

    base = profile_decoder(tmp_path / "base.json.gz", steps=12)
    cand = profile_decoder(tmp_path / "cand.json.gz", steps=12, slow={"attention": 8})
    k = kernel_why("p", [str(base)], [str(cand)], {"tpot_p50_s": 0.01}, {"tpot_p50_s": 0.01})
    line = next(x for x in kernel_lines(k) if x.startswith("reproduce: "))
    argv = shlex.split(line.removeprefix("reproduce: "))
    assert argv[:2] == ["perfkit", "replay"] and argv[2] == str(cand)
    p = run_perfkit([*argv[1:], "--out", "model.yaml"], tmp_path)
    assert p.returncode == 0, p.stderr
    entry = yaml.safe_load((tmp_path / "model.yaml").read_text())["workloads"][0]
    assert entry["kind"] == "attention"
    assert (entry["batch"], entry["num_heads"], entry["num_kv_heads"], entry["head_dim"]) == ([4], [2], [2], [16])
    spec = load_spec(tmp_path / "model.yaml")
    assert spec.workloads[0].kind == "attention" and spec.points()[0].params["context"] == 256
