"""What a run report shows, gathered once for both renderers (HTML and Markdown) and the
dashboard: the run, the optional baseline comparison, roofline placement, kernel tables and the
tune winners (RUN/tune.json, read by perfkit/core/tune_result.py).

Nothing here computes statistics or trace analyses: comparisons come from the gate, placement
from roofline/, kernel tables from analyzers/ (or the Parquet tables `perfkit profile` wrote
into `RUN/analysis/`). A part that is not available carries a one-line reason instead.

Files named in run.json (traces, analysis tables, tune.json) are read only inside the run
directory: a path that resolves outside it (absolute, `../..`, a link out) is not read, and the
report's `outside` note names it (`perfkit report` prints it as a warning).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from perfkit.core.errors import PerfkitError
from perfkit.core.record import STATUS_OK, Run
from perfkit.core.run_layout import ANALYSIS_DIR, TUNE_JSON, RunDir, analysis_table
from perfkit.core.table_file import TableError, left_out, read_parquet_table
from perfkit.core.tune_result import TuneResult, read_tune
from perfkit.core.units import fmt_change, fmt_interval, fmt_num, fmt_p
from perfkit.regression.serving_why import ServingWhy
from perfkit.reports.gate.format import VERDICT_ORDER, sort_key
from perfkit.reports.html.compare import metric_suffix
from perfkit.reports.metric_rows import measure_text
from perfkit.reports.point_params import varying_params

COMPARE_COLUMNS = [
    "label", "key", "metric", "unit", "direction", "base_value", "cand_value", "ratio",
    "ci_low", "ci_high", "p_value", "verdict", "reason",
]  # fmt: skip
VERDICT_RANK = {v.value: i for i, v in enumerate(VERDICT_ORDER)}  # the gate table's order
# Table -> analyses `perfkit profile` may have written (run.artifacts.analysis, else found under
# RUN/analysis/<name>.parquet; first found wins).
ANALYSIS_FILES: dict[str, tuple[str, ...]] = {
    "summary": ("kernel_summary", "kernels"),
    "launch": ("launch_summary", "launch"),
    "idle": ("idle_breakdown", "idle"),
}
# Table -> (numeric, text) columns the renderers read from it (the others they show as they are).
ANALYSIS_COLUMNS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "summary": (("count", "total_ns", "mean_ns", "share_pct"), ("name",)),
}


@dataclass(frozen=True)
class RooflineView:
    placed: pd.DataFrame  # roofline.place columns, one row per placed point
    roofs: Mapping[str, Any]  # label -> roofline.model.Roof
    device: str
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class KernelView:
    """Kernel tables of a run: top GPU ops, launch overhead and idle breakdown (per point)."""

    summary: pd.DataFrame  # analyzers.kernel_summary columns (+ "point" when from several traces)
    launch: pd.DataFrame  # analyzers.launch.launch_summary columns (+ "point")
    idle: pd.DataFrame  # analyzers.idle.idle_breakdown columns (+ "point")
    source: str  # where the tables came from


@dataclass(frozen=True)
class ReportData:
    run: Run
    run_dir: Path | None
    labels: dict[str, str]  # point key -> display label
    base: Run | None = None
    comparisons: pd.DataFrame | None = None  # COMPARE_COLUMNS, worst verdict first
    roofline: RooflineView | None = None
    kernels: KernelView | None = None
    notes: dict[str, str] = field(default_factory=dict)  # section -> why it is not available
    tune: tuple[TuneResult, ...] = ()  # RUN/tune.json: the tune winners per workload and shape
    serving_why: tuple[ServingWhy, ...] = ()  # --vs: why each serving stage moved (the comparison's)
    answer: tuple[str, str] = ("", "")  # --vs: the comparison's headline and its why (headline.py)


def point_labels(run: Run) -> dict[str, str]:
    """Point key -> `workload p=v ...` naming only the parameters that vary within the workload."""
    shown = varying_params(run)
    out: dict[str, str] = {}
    for p in run.points:
        names = shown.get(p.workload) or []
        params = " ".join(f"{k}={p.params[k]}" for k in names if k in p.params)
        out[p.key] = f"{p.workload} {params}".strip()
    if len(set(out.values())) < len(out):  # two workloads share a name: fall back to keys
        return {p.key: p.key for p in run.points}
    return out


def describe_commit(run: Run) -> str:
    """'<commit[:10]> (dirty) on <branch>' of a run's git fields ('no commit' when unknown)."""
    git = run.env.git
    commit = (git.commit or "")[:10] or "no commit"
    branch = git.branch or ""
    dirty = " (dirty)" if git.dirty else ""
    return f"{commit}{dirty}" + (f" on {branch}" if branch else "")


def records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """A frame's rows as dicts with str keys (for the renderers' table rows)."""
    return [{str(k): v for k, v in row.items()} for row in df.to_dict("records")]


def comparison_rows(pairs: Iterable[tuple[str, Any]], labels: Mapping[str, str]) -> pd.DataFrame:
    """A table of (point key, perfkit.regression.gate.types.Comparison) pairs in the gate table's
    order (reports.gate_format.sort_key: worst verdict first, then the largest change)."""
    rows = []
    for key, c in sorted(pairs, key=lambda pair: sort_key(pair[1])):
        verdict = getattr(c.verdict, "value", str(c.verdict))
        rows.append(
            {
                "label": labels.get(key, key),
                "key": key,
                "metric": metric_suffix(c.metric, key),
                "unit": c.unit,
                "direction": c.direction,
                "base_value": c.base_value,
                "cand_value": c.cand_value,
                "ratio": c.shown_ratio,  # the change every view shows (the interval is the test's)
                "ci_low": c.ci_low,
                "ci_high": c.ci_high,
                "p_value": c.p_value,
                "verdict": verdict,
                "reason": c.reason,
            }
        )
    return pd.DataFrame(rows, columns=COMPARE_COLUMNS)


def comparison_display(df: pd.DataFrame) -> pd.DataFrame:
    """The comparison table as display strings: point, metric, baseline, candidate (medians), change
    and its test interval (the gate's test), p, verdict, why."""
    rows = [{"point": r["label"], "metric": r["metric"], "baseline": measure_text(r["metric"], r["base_value"], r["unit"]),
             "candidate": measure_text(r["metric"], r["cand_value"], r["unit"]), "change": fmt_change(r["ratio"]),
             "test interval": fmt_interval(r["ci_low"], r["ci_high"]), "p": fmt_p(r["p_value"]),
             "verdict": r["verdict"], "why": r["reason"], "key": r["key"]}
            for r in df.to_dict("records")]
    return pd.DataFrame(rows, columns=["point", "metric", "baseline", "candidate", "change", "test interval",
                                       "p", "verdict", "why", "key"])


def verdict_counts(comparisons: pd.DataFrame | None) -> dict[str, int]:
    if comparisons is None or comparisons.empty:
        return {}
    counts = comparisons["verdict"].value_counts()
    return {v: int(counts[v]) for v in sorted(counts.index, key=lambda v: VERDICT_RANK.get(v, 9))}


def roofline_view(run: Run) -> tuple[RooflineView | None, str]:
    """Placement of the run's points against the roofs roofline_for_run decides for it."""
    from perfkit.roofline.for_run import roofline_for_run
    from perfkit.roofline.place import place_points

    roof = roofline_for_run(run)
    if roof.device is None:
        return None, roof.missing
    placed = place_points(run, roof.roofs)
    if placed.empty:
        return None, "no point has both an analytic cost and a measured time"
    return RooflineView(placed=placed, roofs=roof.roofs, device=roof.device.name, notes=roof.notes), ""


def run_directory(path: str | Path) -> Path:
    p = Path(path)
    return p if p.is_dir() else p.parent


def inside_run(run_dir: Path, relative: str) -> Path | None:
    """`relative` (a path run.json records) under the run directory, links resolved; None when
    it leads outside the directory (an absolute path, `..`, a link pointing out)."""
    root = run_dir.resolve()
    try:
        path = (root / relative).resolve()
    except (OSError, ValueError):  # a NUL byte, a link loop: not a file of the run
        return None
    return path if path.is_relative_to(root) else None


def recorded_files(run: Run) -> list[str]:
    """Every file run.json names that a report may read: traces, analysis tables, tune.json."""
    names = [p.trace for p in run.points if p.trace]
    names += [v for v in run.artifacts.analysis.values() if v]
    if run.artifacts.tune is not None:
        names.append(run.artifacts.tune.json)
    return names


def outside_note(run: Run, run_dir: Path | None) -> str:
    """'' or one line naming the recorded paths that lead outside the run directory (not read)."""
    if run_dir is None:
        return ""
    outside = [name for name in recorded_files(run) if inside_run(run_dir, name) is None]
    if not outside:
        return ""
    shown = ", ".join(outside[:3]) + (f" and {len(outside) - 3} more" if len(outside) > 3 else "")
    return (f"not read: {len(outside)} path(s) in run.json outside the run directory {run_dir} ({shown}); "
            "a run's traces and tables are read only inside its directory")


def analysis_tables(run: Run, run_dir: Path, labels: Mapping[str, str]) -> KernelView | None:
    """The kernel tables `perfkit profile` stored under RUN/analysis/, when it did (an unreadable
    one left out, said in the view's source)."""
    view, notes = stored_tables(run, run_dir, labels)
    if view is None or not notes:
        return view
    return replace(view, source=f"{view.source} ({'; '.join(notes)})")


def stored_tables(run: Run, run_dir: Path, labels: Mapping[str, str]) -> tuple[KernelView | None, list[str]]:
    """The kernel tables under RUN/analysis/, and a note for each one left out as unreadable.

    Their `trace` column (the trace path relative to the run directory) becomes `point`.
    """
    where = RunDir(run_dir)
    if not run.artifacts.analysis and not where.analysis.is_dir():
        return None, []
    by_trace = {p.trace: labels.get(p.key, p.key) for p in run.points if p.trace}
    found: dict[str, pd.DataFrame] = {}
    notes: list[str] = []
    for table, names in ANALYSIS_FILES.items():
        for name in names:
            relative = run.artifacts.analysis.get(name) or analysis_table(name)
            path = inside_run(where.path, relative)
            if path is None or not path.is_file():
                continue
            try:
                df = read_parquet_table(path, *ANALYSIS_COLUMNS.get(table, ((), ())))
            except TableError as exc:
                notes.append(left_out(exc, relative))
                continue
            if "trace" in df.columns:
                point = df["trace"].map(lambda t: by_trace.get(t, t))
                df = df.drop(columns="trace")
                df.insert(0, "point", point)
            found[table] = df
            break
    if "summary" not in found or found["summary"].empty:
        return None, notes
    empty = pd.DataFrame()
    summary = found["summary"].sort_values("total_ns", ascending=False, kind="stable").reset_index(drop=True)
    return KernelView(summary, found.get("launch", empty), found.get("idle", empty), f"{ANALYSIS_DIR}/"), notes


def trace_points(run: Run, run_dir: Path) -> list[tuple[str, Path]]:
    """(point key, trace path) of every point whose trace file exists inside the run directory."""
    out = []
    for p in run.points:
        path = inside_run(run_dir, p.trace) if p.trace else None
        if path is not None and path.is_file():
            out.append((p.key, path))
    return out


def trace_tables(trace: Path) -> KernelView:
    """Kernel summary, launch overhead and idle breakdown of one trace file (analyzers/)."""
    from perfkit.analyzers.idle import idle_breakdown
    from perfkit.analyzers.kernel_summary import kernel_summary
    from perfkit.analyzers.launch import launch_summary
    from perfkit.analyzers.linking import gpu_ops
    from perfkit.analyzers.loaders.kineto.load import load_trace

    table = load_trace(trace)
    ops = gpu_ops(table)
    return KernelView(
        summary=kernel_summary(table),
        launch=launch_summary(table, ops=ops),
        idle=idle_breakdown(table, ops=ops),
        source=trace.name,
    )


def kernel_view(run: Run, run_dir: Path | None, labels: Mapping[str, str]) -> tuple[KernelView | None, str]:
    """Stored analysis tables, else the analyzers over every point's trace (tagged by point)."""
    if run_dir is None:
        return None, "no run directory: kernel tables need its traces"
    stored, notes = stored_tables(run, run_dir, labels)
    left = f" ({'; '.join(notes)})" if notes else ""
    if stored is not None:
        return replace(stored, source=stored.source + left), ""
    traces = trace_points(run, run_dir)
    if not traces:
        return None, "; ".join([*notes, "the run has no trace files (profile with `profile.torch_profiler: true`)"])
    parts: dict[str, list[pd.DataFrame]] = {"summary": [], "launch": [], "idle": []}
    for key, path in traces:
        view = trace_tables(path)
        for name, df in (("summary", view.summary), ("launch", view.launch), ("idle", view.idle)):
            if not df.empty:
                parts[name].append(df.assign(point=labels.get(key, key))[["point", *df.columns]])
    if not parts["summary"]:
        return None, "; ".join([*notes, f"no GPU kernels in the {len(traces)} trace(s) of this run "
                                         "(a CPU run records CPU ops only)"])
    summary = pd.concat(parts["summary"], ignore_index=True).sort_values("total_ns", ascending=False, kind="stable")
    launch = pd.concat(parts["launch"], ignore_index=True) if parts["launch"] else pd.DataFrame()
    idle = pd.concat(parts["idle"], ignore_index=True) if parts["idle"] else pd.DataFrame()
    return KernelView(summary.reset_index(drop=True), launch, idle, f"{len(traces)} trace(s) under traces/{left}"), ""


def tune_view(run: Run, run_dir: Path | None) -> tuple[tuple[TuneResult, ...], str]:
    """The run's tune results (RUN/tune.json) and, when it has a tune table that cannot be read,
    one line saying why (the file's located error); ((), "") for a run without a tune table."""
    listed = run.artifacts.tune
    name = listed.json if listed is not None else TUNE_JSON
    if run_dir is None:
        return (), f"no run directory: the tune table is RUN/{name}" if listed else ""
    path = inside_run(run_dir, name)
    if path is None:
        return (), f"{name}: outside the run directory, not read"
    if not path.is_file():
        return (), f"{path} not found (run.json lists it)" if listed else ""
    try:
        return tuple(read_tune(path)), ""
    except PerfkitError as exc:
        return (), str(exc)


def failures(run: Run) -> list[tuple[str, str, str]]:
    """(point key, status, error) of every point that did not run ok, and of numerics misses."""
    out = []
    for p in run.points:
        if p.status != STATUS_OK:
            out.append((p.key, p.status, p.error or ""))
        elif p.numerics is not None and not p.numerics.ok:
            n = p.numerics
            out.append((p.key, "numerics", f"rel err {fmt_num(n.rel_err)} > tol {fmt_num(n.tol)} vs {n.reference}"))
    return out


def finite(x: Any) -> bool:
    try:
        return math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def gather(
    run: Run,
    run_dir: Path | None,
    *,
    base: Run | None = None,
    comparisons: Iterable[tuple[str, Any]] | None = None,
    compare_note: str = "",
    serving_why: tuple[ServingWhy, ...] = (),
    answer: tuple[str, str] = ("", ""),
    with_roofline: bool = True,
    with_kernels: bool = True,
) -> ReportData:
    """Everything a report of `run` shows (compared with `base` when comparisons are given)."""
    labels = point_labels(run)
    notes: dict[str, str] = {}
    table = comparison_rows(comparisons, labels) if comparisons is not None else None
    if base is not None and compare_note:
        notes["compare"] = compare_note
    roof, why = roofline_view(run) if with_roofline else (None, "not requested")
    if why:
        notes["roofline"] = why
    kern, why = kernel_view(run, run_dir, labels) if with_kernels else (None, "not requested")
    if why:
        notes["kernels"] = why
    tune, why = tune_view(run, run_dir)
    if why:
        notes["tune"] = why
    why = outside_note(run, run_dir)
    if why:
        notes["outside"] = why
    return ReportData(run, run_dir, labels, base, table, roof, kern, notes, tune, serving_why, answer)
