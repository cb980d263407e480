"""Two stages' engine steps compared with the gate's statistics: eager vs torch.compile traces of
perfkit's decoder (aligned by op category), and an attention class slowed on purpose."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
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


def _steps(att_ns: float, mlp_ns: float, other_ns: float, seed: int, n: int = 16) -> pd.DataFrame:
    """Per-step range samples of a decoder: attention, MLP and the rest, each with 3% noise."""
    import numpy as np

    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        a, m, o = (x * (1 + 0.03 * rng.standard_normal()) for x in (att_ns, mlp_ns, other_ns))
        rows += [(i, "decode", "range", "perfkit_attention", a, 1), (i, "decode", "range", "perfkit_mlp", m, 1),
                 (i, "decode", "name", "aten::mm", m, 1), (i, "decode", "name", "aten::bmm", a, 1),
                 (i, "decode", "step", "busy", a + m + o, 1)]
    return pd.DataFrame(rows, columns=["step", "kind", "level", "key", "time_ns", "count"])


def test_a_whole_step_shift_names_no_class() -> None:
    from perfkit.comparison.step_compare import compare_steps
    from perfkit.regression.step_verdicts import WITH_STEP

    # the second profile of a process runs every class 14% faster: the step moved, no class did
    k = compare_steps("p", _steps(1.8e6, 0.6e6, 0.3e6, 1), _steps(1.8e6 * 0.86, 0.6e6 * 0.86, 0.3e6 * 0.86, 2))
    decode = k.step_types[0]
    assert decode.busy.state == MOVED
    assert {c.state for c in decode.classes} == {WITH_STEP}
    line = kernel_lines(k)[0]
    assert "no one class" in line and "like the whole step" in line
    assert not any(x.startswith("reproduce:") for x in kernel_lines(k))


def test_one_slowed_class_is_named_and_the_other_is_not() -> None:
    from perfkit.comparison.step_compare import compare_steps

    k = compare_steps("p", _steps(1.8e6, 0.6e6, 0.3e6, 3), _steps(1.8e6 * 1.5, 0.6e6, 0.3e6, 4))
    decode = k.step_types[0]
    first, second = decode.classes
    assert (first.name, first.state) == ("perfkit_attention", MOVED)
    assert second.name == "perfkit_mlp" and second.state != MOVED
    # slowed and the whole step also shifted (-10%): attention is still named, MLP is not
    k = compare_steps("p", _steps(1.8e6, 0.6e6, 0.3e6, 5), _steps(1.8e6 * 1.5 * 0.9, 0.6e6 * 0.9, 0.3e6 * 0.9, 6))
    first, second = k.step_types[0].classes
    assert (first.name, first.state) == ("perfkit_attention", MOVED) and second.state != MOVED


def test_a_class_that_is_the_whole_step_keeps_its_own_verdict() -> None:
    from perfkit.comparison.step_compare import compare_steps

    k = compare_steps("p", _steps(1.8e6, 0.0, 0.0, 7), _steps(1.8e6 * 1.5, 0.0, 0.0, 8))
    att = next(c for c in k.step_types[0].classes if c.name == "perfkit_attention")
    assert att.state == MOVED


def test_a_class_that_kept_its_time_while_the_step_got_faster_is_named() -> None:
    from perfkit.comparison.step_compare import compare_steps

    # the machine ran 35% faster for the candidate, but MLP was made 1.5x slower: its own time barely
    # moved, against the rest of the step it did
    k = compare_steps("p", _steps(1.8e6, 0.6e6, 0.3e6, 9), _steps(1.8e6 * 0.65, 0.6e6 * 0.65 * 1.5, 0.3e6 * 0.65, 10))
    first = k.step_types[0].classes[0]
    assert (first.name, first.state) == ("perfkit_mlp", MOVED)
    assert abs(first.step_factor - 0.65) < 0.05
    text = kernel_lines(k)[0]
    assert "against the rest of the step, which moved -3" in text
    assert "perfkit_attention" in text and "like the whole step" in text
