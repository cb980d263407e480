"""Two stages' engine steps compared with the gate's statistics: eager vs torch.compile traces of
perfkit's decoder (aligned by op category), and an attention class slowed on purpose."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from perfkit.comparison.server_traces import kernel_why
from perfkit.comparison.step_compare import alignment
from perfkit.regression.step_verdicts import MOVED
from perfkit.reports.serving.kernel_lines import kernel_lines

DATA = Path(__file__).resolve().parents[1] / "data" / "traces" / "perfkit"
EAGER, COMPILED = str(DATA / "tiny_eager.json.gz"), str(DATA / "tiny_compile.json.gz")


@pytest.mark.slow
def test_eager_vs_compile_aligns_by_op_category() -> None:
    k = kernel_why("p", [EAGER], [COMPILED])
    assert k.failure == ""
    assert k.alignment == "category"
    assert k.matched_share >= 0.9  # of the CPU op time, on both sides
    assert k.exact_share < k.matched_share
    text = "\n".join(kernel_lines(k))
    assert "aligned by op category" in text
    decode = next(s for s in k.step_types if s.kind == "decode")
    assert decode.class_level == "category"  # the compiled side has no op-class ranges
    assert {c.name for c in decode.classes} >= {"GEMM", "attention", "host"}


@pytest.mark.slow
def test_decode_steps_only_of_compile_trace_exact_names_match_less() -> None:
    from perfkit.comparison.server_traces import stage_samples

    e, _, _ = stage_samples([EAGER])
    c, _, _ = stage_samples([COMPILED])
    e, c = e[e["kind"] == "decode"], c[c["kind"] == "decode"]
    key, share, exact = alignment(e, c)
    assert key == "category" and share >= 0.9
    assert exact < 0.75  # Inductor's fused kernels and its wrappers have no eager namesake


@pytest.mark.slow
def test_slowed_attention_is_named_first(tmp_path: Path) -> None:
    sys.path.insert(0, str(DATA))
    from make_traces import profile_decoder  # type: ignore[import-not-found]

    base = profile_decoder(tmp_path / "base.json.gz", steps=12)
    cand = profile_decoder(tmp_path / "cand.json.gz", steps=12, slow={"attention": 8})  # large: the test runs on loaded machines
    k = kernel_why("p", [str(base)], [str(cand)], {"tpot_p50_s": 0.01}, {"tpot_p50_s": 0.01})
    decode = next(s for s in k.step_types if s.kind == "decode")
    assert decode.class_level == "range"
    assert decode.classes[0].name == "perfkit_attention" and decode.classes[0].state == MOVED
    lines = kernel_lines(k)
    assert lines[0].startswith("decode steps") and "perfkit_attention +" in lines[0]
    assert any(x.startswith("reproduce: perfkit replay ") and "--op perfkit_attention" in x for x in lines)
    assert any("client TPOT p50" in x for x in lines)


def test_nothing_aligned_is_a_failure_not_an_answer() -> None:
    import pandas as pd

    from perfkit.comparison.step_compare import compare_steps

    def side(name: str, cat_time: int) -> pd.DataFrame:
        rows = [(i, "decode", "name", name, cat_time, 1) for i in range(5)]
        rows += [(i, "decode", "step", "busy", cat_time, 1) for i in range(5)]
        return pd.DataFrame(rows, columns=["step", "kind", "level", "key", "time_ns", "count"])

    k = compare_steps("p", side("aten::mm", 1000), side("my_custom_kernel", 1000))
    # aten::mm is GEMM, the unknown kernel is "other": no key lines up
    assert k.failure.startswith("the two traces' kernels and ops do not line up")
    assert kernel_lines(k) == [k.failure]
