"""`Artifacts`: what a run produced beside its points, and how it ended (run.json's `artifacts`).

Every path is relative to the run directory (perfkit.core.run_layout names them). A field is
left out of run.json when empty. Older records load: their known keys fill the fields, keys this
perfkit has no field for are kept under `extra` (`artifacts_data`), and an `ncu` written as a
plain CSV path reads as `NcuArtifacts(csv=...)`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from perfkit.core.bounded import Count


@dataclass(frozen=True)
class NcuArtifacts:
    """The Nsight Compute pass (`profile --ncu`): its raw CSV, kernel table and clock control."""

    csv: str
    kernels: str | None = None
    clock_control: str | None = None


@dataclass(frozen=True)
class NsysArtifacts:
    """The Nsight Systems pass (`profile --nsys`): report, SQLite export, analysis tables."""

    report: str
    sqlite: str
    analysis: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TuneArtifacts:
    """The tune table of `kind: custom` workloads with a `tune:` block."""

    json: str
    csv: str


@dataclass(frozen=True)
class StepFailure:
    """A post-sweep step that failed on a write (a full disk); its outputs were dropped."""

    step: str
    error: str


@dataclass(frozen=True)
class Artifacts:
    analysis: dict[str, str] = field(default_factory=dict)  # analysis name -> analysis/<name>.parquet
    analysis_error: str | None = None
    tune: TuneArtifacts | None = None
    ncu: NcuArtifacts | None = None
    ncu_error: str | None = None
    ncu_csv: str | None = None  # an ncu CSV given with the run (older records, hand-made runs)
    nsys: NsysArtifacts | None = None
    nsys_error: str | None = None
    kernels: list[dict[str, Any]] | str | None = None  # a kernel table: rows, or a .json/.csv file
    launches: Count | None = None  # torchrun launches of a `launch: {nproc: N}` sweep
    launch_failed: str | None = None  # why torchrun could not run the sweep
    launch_exit: str | None = None  # torchrun failed on the way out, after every point ran
    interrupted_by: str | None = None  # the signal (or "torchrun failure") that ended the run
    sweep_stopped_by: str | None = None  # why the sweep stopped early (not a signal: a full disk)
    post_run_failed: StepFailure | None = None
    post_run_interrupted: str | None = None  # the post-sweep step Ctrl-C cut short
    recovered_from: str | None = None  # run.partial.json: loaded from a run killed before it ended
    stored_from: str | None = None  # the run directory the store took the run from (absolute)
    extra: dict[str, Any] = field(default_factory=dict)  # keys of older records without a field

    JSON_OMIT_EMPTY: ClassVar[frozenset[str]] = frozenset(
        {"analysis", "analysis_error", "tune", "ncu", "ncu_error", "ncu_csv", "nsys", "nsys_error", "kernels",
         "launches", "launch_failed", "launch_exit", "interrupted_by", "sweep_stopped_by", "post_run_failed",
         "post_run_interrupted", "recovered_from", "stored_from", "extra"})

    def merged(self, other: Artifacts) -> Artifacts:
        """These artifacts with every field `other` sets (a step's outputs) set to its value."""
        return replace(self, **{f.name: getattr(other, f.name) for f in dataclasses.fields(other)
                                if getattr(other, f.name) != f.default and getattr(other, f.name) != {}})

    def without(self, names: tuple[str, ...]) -> Artifacts:
        """These artifacts with the fields `names` back to empty (a failed step's outputs)."""
        empty = Artifacts()
        return replace(self, **{name: getattr(empty, name) for name in names})

    @property
    def ncu_csv_file(self) -> str | None:
        """The ncu CSV of the run (relative to its directory, or absolute), if any."""
        return self.ncu_csv or (self.ncu.csv if self.ncu else None) or None


FIELDS = frozenset(f.name for f in dataclasses.fields(Artifacts))


def artifacts_data(raw: Any) -> Any:
    """The `artifacts` of a parsed record in Artifacts' shape: unknown keys under `extra`.

    A value that is not a mapping is returned as it is (loading it then names it malformed).
    """
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        return raw
    out = {k: v for k, v in raw.items() if k in FIELDS}
    unknown = {k: v for k, v in raw.items() if k not in FIELDS}
    if unknown:
        out["extra"] = {**(out.get("extra") or {}), **unknown}
    if isinstance(out.get("ncu"), str):  # an older hand-made record: the CSV's path
        out["ncu"] = {"csv": out["ncu"]}
    return out
