"""The Python API: `perfkit.bench(fn, *args)` times a callable with perfkit's timer.

    import perfkit
    m = perfkit.bench(torch.matmul, a, b)            # device taken from the tensors
    print(m.median_s, m.stats.ci_low_s, len(m.samples_s))

The timer is profiler/timer.py (first call untimed, warmup, CUDA events with L2 flush on a
GPU, perf_counter on a CPU, several calls per sample for calls near the clock's floor,
adaptive stop on the median's confidence interval); the result is a `Measurement` that keeps
every raw sample (seconds per call). `compare_to_baseline` judges a measurement against an
earlier one with the gate's test and words (the pytest plugin gates whole sessions the same way).
`compare(baseline, candidate)` is the comparison of two runs that `perfkit compare` / `gate` /
`report --vs` and the dashboard show (perfkit.comparison.pair): the same verdicts and numbers.

Threads: torch computes with `threads` intra-op threads while timing (default: 1 on a CPU, as
the CPU specs and benchmarks do; on a GPU torch's own count), restored afterwards, and recorded
as `extra["threads"]`.

Nothing heavy is imported at module level; torch (when installed) on the first bench call.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from perfkit.core.errors import DeviceError
from perfkit.core.measurement import Measurement
from perfkit.core.timing import DEFAULT_TIMING, TimingConfig


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


MAX_THREADS = 1024  # as the spec's cpu_threads


def check_threads(threads: int | None) -> int | None:
    if threads is None:
        return None
    if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= MAX_THREADS:
        raise ValueError(f"threads is {threads!r}; it must be an int from 1 to {MAX_THREADS} (or None)")
    return threads


@contextmanager
def torch_threads(device: str, threads: int | None) -> Iterator[int | None]:
    """torch's intra-op threads set to `threads` (None: 1 on a CPU, unchanged on a GPU) for the
    block, and the caller's count restored after it; yields the count in force (None without torch)."""
    try:
        import torch
    except ImportError:
        if threads is not None:
            raise ValueError(f"threads={threads}: torch is not installed, so perfkit cannot set its "
                             f"threads; drop threads= or install torch") from None
        yield None
        return
    want = threads if threads is not None else (1 if device == "cpu" else None)
    before = torch.get_num_threads()
    if want is not None and want != before:
        torch.set_num_threads(want)
    try:
        yield int(torch.get_num_threads())
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


def bench(
    fn: Callable[..., Any],
    *args: Any,
    kwargs: Mapping[str, Any] | None = None,
    device: str | None = None,
    threads: int | None = None,
    warmup_s: float = DEFAULT_TIMING.warmup_s,
    budget_s: float = DEFAULT_TIMING.budget_s,
    min_reps: int = DEFAULT_TIMING.min_reps,
    max_reps: int = DEFAULT_TIMING.max_reps,
    target_rel_ci: float = DEFAULT_TIMING.target_rel_ci,
    flush_l2: bool = DEFAULT_TIMING.flush_l2,
    cuda_graph: bool = DEFAULT_TIMING.cuda_graph,
    label: str | None = None,
) -> Measurement:
    """Time `fn(*args, **kwargs)` and return every sample (seconds per call) with statistics.

    device: "cpu" or "cuda[:i]"; default: the device of the first CUDA tensor argument, else
    "cpu". threads: torch's intra-op threads while timing (default: 1 on a CPU, torch's own
    count on a GPU); the caller's count is restored afterwards and the one used is recorded as
    extra["threads"]. The remaining options are perfkit.core.timing.TimingConfig's, with its
    defaults and limits (docs/timing.md); one out of range is a ValueError naming it.
    """
    from perfkit.profiler.timer import time_callable

    if not callable(fn):
        raise TypeError(f"perfkit.bench: fn must be callable, got {type(fn).__name__}")
    call_kwargs = dict(kwargs or {})
    dev = check_device(device or infer_device(args, call_kwargs))
    config = TimingConfig(warmup_s=warmup_s, budget_s=budget_s, min_reps=min_reps, max_reps=max_reps,
                          target_rel_ci=target_rel_ci, flush_l2=flush_l2, cuda_graph=cuda_graph).checked()
    check_threads(threads)
    target = fn if not args and not call_kwargs else (lambda: fn(*args, **call_kwargs))
    with torch_threads(dev, threads) as used:
        m = time_callable(target, dev, config)
    extra = {**m.extra, "device": dev}
    if used is not None:
        extra["threads"] = used
    if label is not None:
        extra["label"] = label
    return replace(m, extra=extra)


@dataclass(frozen=True)
class BaselineVerdict:
    """A measurement judged against a baseline by the gate's test of one measurement (no history).

    verdict: the gate's word (regressed, improved, unchanged, noisy, suspect, inconclusive, incomparable);
    change and interval: the test's (geometric outlier-skipped means), not a ratio of the medians;
    new_median_s / base_median_s: the medians every view shows."""

    verdict: str
    change: float
    interval: tuple[float, float]
    new_median_s: float
    base_median_s: float
    message: str

    @property
    def regressed(self) -> bool:
        return self.verdict == "regressed"


def compare_to_baseline(new: Measurement, baseline: Measurement, max_slowdown: float,
                        name: str = "measurement", seed: int = 0) -> BaselineVerdict:
    """The gate's verdict (perfkit.regression.gate.stats.compare_samples, min_effect = max_slowdown,
    no stored history) on the time per call of `new` against `baseline`, in the gate's words.
    The statistics (numpy, scipy) load on the first call."""
    from perfkit.core.direction import LOWER
    from perfkit.regression.gate.stats import compare_samples
    from perfkit.regression.gate.types import MetricPolicy
    from perfkit.reports.gate.format import verdict_line

    c = compare_samples(name, baseline.samples_s, new.samples_s, LOWER, (), MetricPolicy(min_effect=max_slowdown),
                        seed=seed, unit="s")
    return BaselineVerdict(c.verdict.value, c.change, (c.ci_low - 1.0, c.ci_high - 1.0), c.cand_value,
                           c.base_value, verdict_line(c))


def compare(baseline: str, candidate: str, db: str | None = None, policy: str | None = None, *, seed: int = 0,
            history_runs: int = 30, metric: str | None = None) -> Any:
    """The comparison `perfkit compare BASELINE CANDIDATE` (and gate, report --vs, the dashboard)
    shows: a perfkit.regression.gate.compare.GateResult, one row per measurement (`.rows`; each a
    Comparison with the verdict, the medians `base_value` / `cand_value` and the test's `ratio`).
    Runs are named as on the command line (run directory, run id, commit, BRANCH@GPU[:SPEC]);
    db: the store (default: $PERFKIT_DB, else ./perfkit.db); policy: a gate.yaml; history_runs:
    stored runs for the run-to-run spread (0: none). StoreError / SpecError on bad input."""
    from perfkit.comparison.pair import PairOptions, compare_pair
    from perfkit.regression.gate.policy import load_policy
    from perfkit.store.api import open_existing_store

    options = PairOptions(load_policy(policy), seed, history_runs, metric)
    engine = open_existing_store(db)
    try:
        return compare_pair(baseline, candidate, engine, options)
    finally:
        if engine is not None:
            engine.dispose()
