"""One definition of the timer's options: the spec, perfkit.bench and the docs agree with it."""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from perfkit.api import bench
from perfkit.core.errors import SpecError
from perfkit.core.timing import DEFAULT_TIMING, TimingConfig, limits
from perfkit.pipeline.spec import load_spec
from perfkit.workloads.base import TimingOverride, TimingSpec

ROOT = Path(__file__).resolve().parents[2]
NAMES = [f.name for f in dataclasses.fields(TimingConfig)]


def test_spec_defaults_are_the_timers() -> None:
    assert NAMES == ["warmup_s", "budget_s", "min_reps", "max_reps", "target_rel_ci", "flush_l2", "cuda_graph"]
    assert TimingSpec().to_config() == TimingConfig() == DEFAULT_TIMING
    assert list(TimingSpec.model_fields) == NAMES == list(TimingOverride.model_fields)
    assert all(TimingOverride.model_fields[n].default is None for n in NAMES)


def test_bench_defaults_are_the_timers() -> None:
    params = inspect.signature(bench).parameters
    assert {n: params[n].default for n in NAMES} == dataclasses.asdict(DEFAULT_TIMING)


@pytest.mark.parametrize(("page", "row"), [
    ("spec.md", r"^\| `{name}` \| [^|]+ \| `([^`]+)` \|"),  # key | type | default | meaning
    ("timing.md", r"^\| `{name}` \| ([^|]+) \|"),  # option | default | limits
])
def test_docs_tables_show_the_defaults(page: str, row: str) -> None:
    text = (ROOT / "docs" / page).read_text()
    for name in NAMES:
        found = re.search(row.format(name=name), text, re.M)
        assert found, name
        expected = getattr(DEFAULT_TIMING, name)
        shown = found.group(1).strip()
        assert (shown == str(expected).lower()) if isinstance(expected, bool) else float(shown) == expected, name


def _beyond(kind: str, bound: float, integer: bool) -> tuple[float, float]:
    """(a value just outside the limit, the value at or just inside it)."""
    step = 1 if integer else 1e-6
    return {
        "ge": (bound - step, bound),
        "gt": (bound, bound + step),
        "le": (bound + step, bound),
        "lt": (bound, bound - step),
    }[kind]


@pytest.mark.parametrize("name", [n for n in NAMES if limits(n)])
def test_spec_and_bench_share_the_limits(name: str) -> None:
    integer = isinstance(getattr(DEFAULT_TIMING, name), int)
    for kind, bound in limits(name).items():
        bad, good = _beyond(kind, bound, integer)
        # keep min_reps <= max_reps, so that the limit itself is what fails
        fix = {"max_reps": 10_000_000} if name == "min_reps" else {"min_reps": 1} if name == "max_reps" else {}
        with pytest.raises(ValidationError):
            TimingSpec(**{name: bad, **fix})
        with pytest.raises(ValidationError):
            TimingOverride(**{name: bad})
        assert TimingConfig(**{name: bad, **fix}).problems(), (name, kind, bad)
        assert getattr(TimingSpec(**{name: good, **fix}), name) == good
        assert TimingConfig(**{name: good, **fix}).problems() == [], (name, kind, good)


def test_override_changes_only_its_keys() -> None:
    base = TimingSpec(budget_s=0.5)
    merged = TimingOverride(min_reps=3, flush_l2=False).apply(base).to_config()
    assert merged == TimingConfig(budget_s=0.5, min_reps=3, flush_l2=False)
    assert TimingOverride(min_reps=3).model_dump(exclude_none=True) == {"min_reps": 3}


def test_scaled_and_checked() -> None:
    quick = TimingConfig().scaled(0.2)
    assert quick.warmup_s == pytest.approx(0.02) and quick.budget_s == pytest.approx(0.2)
    assert quick.min_reps == 10 and quick.flush_l2 is True
    assert TimingConfig().checked() == TimingConfig()
    with pytest.raises(ValueError, match="budget_s is 0; it must be > 0"):
        TimingConfig(budget_s=0).checked()
    with pytest.raises(ValueError, match="target_rel_ci is 1; it must be < 1"):
        TimingConfig(target_rel_ci=1).checked()


def test_spec_points_carry_the_timing_config(tmp_path: Path) -> None:
    path = tmp_path / "model.yaml"
    path.write_text("name: t\ntiming: {budget_s: 0.5}\nworkloads:\n"
                    "  - kind: gemm\n    m: 1\n    n: 1\n    k: 1\n    timing: {min_reps: 3}\n"
                    "  - {kind: gemm, name: g2, m: 2, n: 2, k: 2}\n")
    spec = load_spec(path)
    first, second = spec.points()
    assert first.timing == TimingConfig(budget_s=0.5, min_reps=3)
    assert second.timing == TimingConfig(budget_s=0.5)
    assert spec.to_dict()["workloads"][0]["timing"] == {"min_reps": 3}  # the spec as written, not merged


@pytest.mark.parametrize(("block", "where"), [
    ("timing: {min_reps: 20, max_reps: 5}\n", "2:9"),
    ("timing:\n  min_reps: 20\n  max_reps: 5\n", "3:3"),
])
def test_min_reps_above_max_reps_is_located(tmp_path: Path, block: str, where: str) -> None:
    path = tmp_path / "model.yaml"
    path.write_text("name: t\n" + block + "workloads:\n  - {kind: gemm, m: 1, n: 1, k: 1}\n")
    with pytest.raises(SpecError) as info:
        load_spec(path)
    message = str(info.value)
    assert message.startswith(f"{path}:{where}: 'timing': min_reps 20 / max_reps 5"), message
    assert "raise max_reps or lower min_reps" in message
