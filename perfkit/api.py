"""The Python API: `perfkit.bench(fn, *args)` times a callable with perfkit's timer.

    import perfkit
    m = perfkit.bench(torch.matmul, a, b)            # device taken from the tensors
    print(m.median_s, m.stats.ci_low_s, len(m.samples_s))

The timer is profiler/timer.py (first call untimed, warmup, CUDA events with L2 flush on a
GPU, perf_counter on a CPU, adaptive stop on the median's confidence interval); the result
is a `Measurement` that keeps every raw sample. `compare_to_baseline` judges a measurement
against an earlier one (the pytest plugin's `perfbench` fixture uses it).

Nothing heavy is imported at module level; torch only when a CUDA device is involved.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from perfkit.core.errors import DeviceError
from perfkit.core.measurement import Measurement


def _tensors(values: Any, depth: int = 0) -> list[Any]:
    """The torch tensors among `values` (looking one level into lists, tuples and dicts)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return []
    if isinstance(values, torch.Tensor):
        return [values]
    if depth > 1:
        return []
    if isinstance(values, Mapping):
        values = list(values.values())
    if isinstance(values, list | tuple):
        return [t for v in values for t in _tensors(v, depth + 1)]
    return []


def infer_device(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str:
    """"cuda:i" when an argument is a CUDA tensor, else "cpu"."""
    for t in _tensors([*args, *kwargs.values()]):
        if t.device.type == "cuda":
            return str(t.device) if t.device.index is not None else "cuda"
    return "cpu"


def check_device(device: str) -> str:
    if device == "cpu":
        return device
    if not device.startswith("cuda"):
        raise DeviceError(f"device '{device}': perfkit.bench times on 'cpu' or 'cuda[:i]'; pass one of those")
    import torch

    if not torch.cuda.is_available():
        raise DeviceError(f"device '{device}': no CUDA device is visible to torch "
                          f"(torch {torch.__version__}); use device='cpu' or run on a GPU machine")
    return device


def bench(
    fn: Callable[..., Any],
    *args: Any,
    kwargs: Mapping[str, Any] | None = None,
    device: str | None = None,
    warmup_s: float = 0.1,
    budget_s: float = 1.0,
    min_reps: int = 10,
    max_reps: int = 10_000,
    target_rel_ci: float = 0.01,
    flush_l2: bool = True,
    cuda_graph: bool = False,
    label: str | None = None,
) -> Measurement:
    """Time `fn(*args, **kwargs)` and return every sample (seconds per call) with statistics.

    device: "cpu" or "cuda[:i]"; default: the device of the first CUDA tensor argument, else
    "cpu". The remaining options are profiler.timer.TimerConfig's (docs/custom-kernels.md).
    """
    from profiler.timer import TimerConfig, time_callable

    if not callable(fn):
        raise TypeError(f"perfkit.bench: fn must be callable, got {type(fn).__name__}")
    call_kwargs = dict(kwargs or {})
    dev = check_device(device or infer_device(args, call_kwargs))
    config = TimerConfig(warmup_s=warmup_s, budget_s=budget_s, min_reps=min_reps,
                         max_reps=max_reps, target_rel_ci=target_rel_ci, flush_l2=flush_l2,
                         cuda_graph=cuda_graph)
    validate(config)
    target = fn if not args and not call_kwargs else (lambda: fn(*args, **call_kwargs))
    m = time_callable(target, dev, config)
    extra = {**m.extra, "device": dev}
    if label is not None:
        extra["label"] = label
    return replace(m, extra=extra)


def validate(config: Any) -> None:
    """ValueError naming the option when a timer option is out of range."""
    if config.warmup_s < 0:
        raise ValueError(f"warmup_s is {config.warmup_s}; it must be >= 0")
    if config.budget_s <= 0:
        raise ValueError(f"budget_s is {config.budget_s}; it must be > 0")
    if config.min_reps < 1 or config.max_reps < config.min_reps:
        raise ValueError(f"min_reps {config.min_reps} / max_reps {config.max_reps}: need 1 <= min_reps <= max_reps")
    if not 0 < config.target_rel_ci < 1:
        raise ValueError(f"target_rel_ci is {config.target_rel_ci}; it must be in (0, 1)")


@dataclass(frozen=True)
class BaselineVerdict:
    """A measurement judged against a baseline: slowdown = new median / baseline median - 1."""

    regressed: bool
    slowdown: float
    distinguishable: bool  # the two medians' 95% confidence intervals do not overlap
    message: str


def compare_to_baseline(new: Measurement, baseline: Measurement, max_slowdown: float,
                        name: str = "measurement") -> BaselineVerdict:
    """A regression needs both: a slowdown above `max_slowdown` (effect size) and 95% CIs of
    the two medians that do not overlap (the new one entirely above the baseline's)."""
    ns, bs = new.stats, baseline.stats
    if not (bs.median_s > 0 and ns.n and bs.n):
        return BaselineVerdict(False, float("nan"), False, f"{name}: baseline has no usable samples")
    slowdown = ns.median_s / bs.median_s - 1.0
    have_ci = ns.ci_low_s == ns.ci_low_s and bs.ci_high_s == bs.ci_high_s  # not NaN
    if slowdown > 0:
        distinct = bool(have_ci and ns.ci_low_s > bs.ci_high_s)
    else:
        distinct = bool(have_ci and ns.ci_high_s < bs.ci_low_s)
    regressed = slowdown > max_slowdown and distinct
    word = "slower" if slowdown > 0 else "faster"
    ci_text = "95% CIs do not overlap" if distinct else "95% CIs overlap" if have_ci else "too few samples for CIs"
    message = (f"{name}: {abs(slowdown) * 100:.1f}% {word} than the baseline (median "
               f"{_fmt(ns.median_s)} vs {_fmt(bs.median_s)}; {ci_text}; allowed slowdown "
               f"{max_slowdown * 100:.0f}%)")
    return BaselineVerdict(regressed, slowdown, distinct, message)


def _fmt(seconds: float) -> str:
    from reports.units import fmt_time

    return fmt_time(seconds)
