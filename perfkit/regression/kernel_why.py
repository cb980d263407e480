"""The kernel level of a serving stage's why: its engine steps per type, compared baseline vs
candidate with the gate's statistics (step_verdicts.py), and what moved inside them.

Records only (built by perfkit.comparison.step_compare; rendered by reports/serving/kernel_lines.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ClassDelta:
    """One class of work inside a step type: mean seconds per step on each side, its verdict."""

    name: str  # a category (attention, GEMM, ...), a sub-range (perfkit_attention) or busy / gaps
    base_s: float
    cand_s: float
    state: str  # moved | unchanged | within noise (step_verdicts)
    top: str = ""  # the kernel / op with the most time in it (candidate)
    top_per_step: float = 0.0  # how many times it ran per step
    # the step's common factor (median ratio of its parts; 1.0: none): the class's own change is
    # cand_s / step_factor against base_s
    step_factor: float = 1.0

    @property
    def delta_s(self) -> float:
        return self.cand_s - self.base_s

    @property
    def own_delta_s(self) -> float:
        """The change the class made beyond the whole step's factor."""
        return self.cand_s / self.step_factor - self.base_s

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "base_s": self.base_s, "cand_s": self.cand_s, "state": self.state,
                "top": self.top, "top_per_step": self.top_per_step, "step_factor": self.step_factor}


@dataclass(frozen=True)
class StepTypeDelta:
    kind: str  # prefill | decode | mixed | unknown
    n_base: int  # steps (the samples)
    n_cand: int
    busy: ClassDelta  # time per step (GPU busy; CPU: the step)
    classes: tuple[ClassDelta, ...]  # moved first (largest change first), then the rest
    gaps: ClassDelta | None = None  # GPU idle between the step's ops (launch gaps)
    class_level: str = "category"  # range (the server's op-class ranges) | category
    # share of each side's GPU time replayed by a CUDA / HIP graph whose capture is not in its
    # traces: GPU work with no op (never idle); 0.0 when every kernel has its op
    unattributed_base: float = 0.0
    unattributed_cand: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "n_base": self.n_base, "n_cand": self.n_cand, "busy": self.busy.to_json(),
                "classes": [c.to_json() for c in self.classes], "gaps": self.gaps.to_json() if self.gaps else None,
                "class_level": self.class_level, "unattributed_base": self.unattributed_base,
                "unattributed_cand": self.unattributed_cand}


@dataclass(frozen=True)
class ClientCheck:
    """Do the steps explain the client? decode-step time x decode steps per request vs TPOT."""

    step_s: float  # mean step period of the trace (its span / its steps)
    tpot_p50_s: float  # the client's time per token p50: inside the profiled window when known (ITL p50 of the
    # tokens inside it, else TPOT p50 of its requests), else the stage's TPOT p50
    inside_window: bool = False  # tpot_p50_s is of the requests the trace saw

    @property
    def ratio(self) -> float:
        return self.step_s / self.tpot_p50_s if self.tpot_p50_s > 0 else float("nan")


@dataclass(frozen=True)
class KernelWhy:
    point_key: str
    on_gpu: bool  # GPU time (else CPU op time: a CPU server)
    method_base: str  # how steps were found (engine ranges, ProfilerStep, gaps)
    method_cand: str
    alignment: str  # name | op | category: the key the two sides were matched by
    exact_share: float  # share of time whose exact kernel / op name is on both sides
    matched_share: float  # share matched by `alignment`
    step_types: tuple[StepTypeDelta, ...]
    failure: str = ""  # why no kernel-level answer (nothing aligned): shown instead
    traces_base: tuple[str, ...] = ()
    traces_cand: tuple[str, ...] = ()
    client: tuple[tuple[str, ClientCheck], ...] = ()  # (side, check) per side
    reproduce: str = ""  # the `perfkit replay ...` command for the suspect
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"point": self.point_key, "on_gpu": self.on_gpu, "method_base": self.method_base,
                "method_cand": self.method_cand, "alignment": self.alignment, "exact_share": self.exact_share,
                "matched_share": self.matched_share, "step_types": [s.to_json() for s in self.step_types],
                "failure": self.failure, "traces_base": list(self.traces_base),
                "traces_cand": list(self.traces_cand), "reproduce": self.reproduce,
                "client": [{"side": s, "step_s": c.step_s, "tpot_p50_s": c.tpot_p50_s} for s, c in self.client]}
