"""The dashboard's one data module: every read of the store, runs and traces, cached.

Pages call these and draw; nothing here draws and nothing computes statistics of its own:
comparisons are the gate's (perfkit.regression.gate.compare, the runs' sides from
perfkit.comparison), series and change points are the comparison layer's
(perfkit.comparison.history_frame), every table query is the store's (perfkit.store), kernel
tables and roofline placement come through reports.html.data. The store is opened read-only
(perfkit.store.read_only: SQLite `query_only`, PostgreSQL read-only transactions) and never
created or migrated here.

Configuration comes from the environment, set by `perfkit dashboard`:
PERFKIT_DB (the store), PERFKIT_RUNS (run directory roots, os.pathsep-separated; where traces
and analysis tables are looked up by run id), PERFKIT_DASHBOARD_DEMO (a demo-data label).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from perfkit.comparison.trend import TrendInfo
from perfkit.core.record import Run
from perfkit.core.run_layout import MEMORY_DIR, RunDir
from perfkit.core.units import fmt_change
from perfkit.dashboard.serving_columns import column_help, stage_columns
from perfkit.dashboard.why_cells import why_cells
from perfkit.regression.serving_why import ServingWhy
from perfkit.reports.gate.format import VERDICT_ORDER
from perfkit.store.engine import Engine

TTL_S = 60  # new runs appear within a minute
RUNS_ENV = "PERFKIT_RUNS"
DEMO_ENV = "PERFKIT_DASHBOARD_DEMO"
OTHER_WORKLOAD = "(ingested)"


# ----------------------------------------------------------------------------- configuration


def db_url() -> str:
    from perfkit.store.url import default_db_url

    return default_db_url()


def run_roots() -> tuple[str, ...]:
    raw = os.environ.get(RUNS_ENV, "")
    roots = [r for r in raw.split(os.pathsep) if r.strip()] or ["runs"]
    return tuple(str(Path(r).resolve()) for r in roots)


def demo_label() -> str | None:
    return os.environ.get(DEMO_ENV) or None


# ----------------------------------------------------------------------------- the store


@dataclass(frozen=True)
class StoreState:
    url: str  # password hidden
    ready: bool  # a perfkit store this perfkit reads, holding at least one run
    runs: int
    problem: str  # why it is not ready ("" when ready)


@st.cache_resource(show_spinner=False)
def engine(url: str) -> Engine | None:
    """A read-only engine on the store, or None when the SQLite file does not exist."""
    from perfkit.store.read_only import open_read_only

    return open_read_only(url)


@st.cache_data(ttl=TTL_S, show_spinner=False)
def store_state(url: str) -> StoreState:
    from perfkit.core.errors import PerfkitError
    from perfkit.store import read
    from perfkit.store.engine import describe
    from perfkit.store.migrations import SCHEMA_VERSION, current_version

    try:
        eng = engine(url)
    except PerfkitError as exc:
        return StoreState(url, False, 0, str(exc))
    if eng is None:
        return StoreState(url, False, 0, "no store file there yet")
    shown = describe(eng)
    with eng.connect() as conn:
        try:
            version = current_version(conn)
        except PerfkitError as exc:
            return StoreState(shown, False, 0, str(exc))
        if version == 0:
            return StoreState(shown, False, 0, "the database holds no perfkit tables yet")
        if version != SCHEMA_VERSION:
            return StoreState(shown, False, 0, f"store schema version {version}; this dashboard reads "
                              f"{SCHEMA_VERSION}: run any writing command (`perfkit ingest`) to migrate it")
        n = read.count_runs(conn)
    return StoreState(shown, n > 0, n, "" if n else "the store holds no runs yet")


def _engine(url: str) -> Engine:
    eng = engine(url)
    if eng is None:
        from perfkit.core.errors import StoreError

        raise StoreError(f"{url}: no store there; pass --db or set PERFKIT_DB")
    return eng


@st.cache_data(ttl=TTL_S, show_spinner=False)
def runs(url: str) -> pd.DataFrame:
    """One row per stored run, newest first, with its spec name and point counts."""
    from perfkit.store.run_list import run_listing

    with _engine(url).connect() as conn:
        listing = run_listing(conn)
    columns = ["run_id", "created", "created_epoch", "commit", "branch", "gpu", "device", "status", "source",
               "dirty", "spec"]
    df = pd.DataFrame([[getattr(x, c) for c in columns] for x in listing], columns=columns)
    for status in ("ok", "failed", "skipped"):
        df[status] = pd.Series([x.points.get(status, 0) for x in listing], index=df.index, dtype="int64")
    df["commit_short"] = df["commit"].fillna("").str.slice(0, 10)
    df["created_at"] = pd.to_datetime(df["created_epoch"], unit="s", utc=True)
    return df.sort_values(["created_epoch", "run_id"], ascending=False, kind="stable").reset_index(drop=True)


# ----------------------------------------------------------------------------- metric catalog


def split_metric(name: str) -> tuple[str, str]:
    """`<point key>:<metric>` -> (key, metric); a name without a point key is its own key."""
    key, sep, metric = name.rpartition(":")
    return (key, metric) if sep and key else (name, name)


def parse_key(key: str) -> tuple[str, str, dict[str, str]]:
    """`kind/workload/p=v,q=w` -> (kind, workload, {p: v, q: w}); other names go to OTHER_WORKLOAD."""
    parts = key.split("/", 2)
    if len(parts) < 3:
        return "", OTHER_WORKLOAD, {}
    params: dict[str, str] = {}
    for item in parts[2].split(","):
        name, sep, value = item.partition("=")
        if not sep:
            return parts[0], parts[1], {"key": parts[2]}
        params[name] = value
    return parts[0], parts[1], params


@st.cache_data(ttl=TTL_S, show_spinner=False)
def catalog(url: str) -> pd.DataFrame:
    """Every stored metric name split into key, metric, kind, workload and its parameters."""
    from perfkit.store import read

    with _engine(url).connect() as conn:
        names = read.metric_names(conn)
    rows = []
    for name in names:
        key, metric = split_metric(name)
        kind, workload, params = parse_key(key) if key != name else ("", OTHER_WORKLOAD, {})
        rows.append({"name": name, "key": key, "metric": metric, "kind": kind,
                     "workload": f"{kind}/{workload}" if kind else workload, "params": params})
    return pd.DataFrame(rows, columns=["name", "key", "metric", "kind", "workload", "params"])


@st.cache_data(ttl=TTL_S, show_spinner=False)
def metric_facts(url: str, name: str) -> tuple[str, str, list[str], list[str]]:
    """(unit, direction, GPUs, branches) of a metric."""
    from perfkit.store import read

    with _engine(url).connect() as conn:
        unit, direction = read.metric_unit_direction(conn, name)
        gpus = read.metric_gpus(conn, name)
        branches = read.metric_branches(conn, name)
    return unit, direction, gpus, branches


# ----------------------------------------------------------------------------- history


@dataclass(frozen=True)
class History:
    runs: pd.DataFrame  # run_id, gpu, created_at, commit, branch, value (the run's location), x
    commits: pd.DataFrame  # gpu, commit, created_at, value, runs, level, band_low, band_high, x
    changes: pd.DataFrame  # comparison.history_frame.CHANGE_COLUMNS (commit, previous_commit, base_run, ...), x
    # x: position of the commit in the time order of all commits shown
    unit: str
    direction: str
    spread: dict[str, float]  # gpu -> run-to-run sigma (relative, log scale) of the band
    trends: dict[str, TrendInfo] = field(default_factory=dict)  # gpu -> its trend (perfkit history's)


@st.cache_data(ttl=TTL_S, show_spinner=False)
def history(url: str, name: str, gpus: tuple[str, ...], branch: str | None, band_sigmas: float = 2.0) -> History:
    """A metric over commits per GPU: run values, commit values with the noise band, change points.

    Run and commit values and change points are `perfkit history`'s (see perfkit.comparison.history_frame).
    The band is each segment's level (between change points) times exp(+-band_sigmas * sigma),
    sigma the run-to-run spread the gate uses (perfkit.regression.gate.history.run_spread) of that GPU's series.
    """
    from perfkit.comparison.history_frame import (
        CHANGE_COLUMNS,
        COMMIT_COLUMNS,
        RUN_COLUMNS,
        gpu_series,
        history_frame,
    )

    unit, direction, _, _ = metric_facts(url, name)
    with _engine(url).connect() as conn:
        runs_ = history_frame(conn, name, gpus, branch)
    commit_rows: list[dict[str, Any]] = []
    change_rows: list[dict[str, Any]] = []
    spread: dict[str, float] = {}
    trends: dict[str, TrendInfo] = {}
    for gpu, part in runs_.groupby("gpu", sort=True):
        commits, changes, spread[str(gpu)], trend = gpu_series(str(gpu), part, direction, band_sigmas)
        if trend is not None:
            trends[str(gpu)] = trend
        commit_rows += commits
        change_rows += changes
    frames = [_with_time(runs_[RUN_COLUMNS].copy()), _with_time(pd.DataFrame(commit_rows, columns=COMMIT_COLUMNS)),
              _with_time(pd.DataFrame(change_rows, columns=CHANGE_COLUMNS))]
    # x: the commit's position in the time order of every commit shown (all GPUs together)
    first = frames[1].groupby("commit")["created_epoch"].min().sort_values(kind="stable")
    position = pd.Series(range(len(first)), index=first.index)
    for df in frames:
        df["x"] = df["commit"].map(position).astype("float64")
    return History(frames[0], frames[1], frames[2], unit=unit, direction=direction, spread=spread, trends=trends)


REPUTATION_COLUMNS = ["metric", "gpu", "noisy_runs", "far_off_pct", "runs_scored", "last_far_commit", "last_far_run"]


@st.cache_data(ttl=TTL_S, show_spinner="Scoring the stored runs ...")
def noise_reputation(url: str, names: tuple[str, ...], gpus: tuple[str, ...], branch: str | None) -> pd.DataFrame:
    """Per metric and GPU: the share of its stored runs at the current level far off the others,
    worst first (perfkit.comparison.noise_reputation: the gate's `noisy runs`); REPUTATION_COLUMNS."""
    from perfkit.comparison.noise_reputation import metric_reputations
    from perfkit.regression.gate.reputation import noisy_runs_text

    with _engine(url).connect() as conn:
        reps = metric_reputations(conn, names, gpus, branch)
    rows = [[r.name, r.gpu, noisy_runs_text(r.far, r.runs), round(100.0 * r.share), r.runs, r.last_far_commit[:10],
             r.last_far_run] for r in reps]  # whole percent as an integer: sorts as a number, shows no bare float
    return pd.DataFrame(rows, columns=REPUTATION_COLUMNS).astype({"far_off_pct": "int64", "runs_scored": "int64"})


def history_between(h: History, lo_epoch: float, hi_epoch: float) -> History:
    """The part of a history made between two times (inclusive): the commit-range filter."""
    def cut(df: pd.DataFrame) -> pd.DataFrame:
        return df[(df["created_epoch"] >= lo_epoch) & (df["created_epoch"] <= hi_epoch)]

    return replace(h, runs=cut(h.runs), commits=cut(h.commits), changes=cut(h.changes))


def _with_time(df: pd.DataFrame) -> pd.DataFrame:
    df["created_at"] = pd.to_datetime(df["created_epoch"], unit="s", utc=True)
    return df


# ----------------------------------------------------------------------------- one run


@st.cache_data(ttl=TTL_S, show_spinner=False)
def run_record(url: str, run_id: str) -> Run:
    from perfkit.store import read

    with _engine(url).connect() as conn:
        return read.load_run(conn, run_id)


@st.cache_data(ttl=TTL_S, show_spinner=False)
def run_dir(run_id: str, roots: tuple[str, ...], stored_from: str | None = None) -> str | None:
    """The run's directory: where it was stored from when it is still there, else under one of
    the roots (ROOT/<run_id>/run.json, or one level deeper)."""
    if stored_from and RunDir(Path(stored_from)).holds_record():
        return stored_from
    for root in roots:
        base = Path(root)
        if RunDir(base / run_id).holds_record():
            return str(base / run_id)
        if base.is_dir():
            for child in base.iterdir():
                if RunDir(child / run_id).holds_record():
                    return str(child / run_id)
    return None


def run_labels(run: Run) -> dict[str, str]:
    from perfkit.reports.html.data import point_labels

    return point_labels(run)


METRIC_COLUMNS = ["point", "metric", "value", "better", "definition"]


def workload_metrics(run: Run) -> pd.DataFrame:
    """The run's workload metrics (TTFT, TPOT, ITL p50/p90/p99, tok/s, MBU, algbw / busbw, ...),
    one row per point and metric, values as display text (METRIC_COLUMNS); empty when none."""
    from perfkit.reports.metric_rows import metric_rows

    rows = [{"point": r.point, "metric": r.metric, "value": r.text, "better": r.better, "definition": r.definition}
            for r in metric_rows(run, run_labels(run))]
    return pd.DataFrame(rows, columns=METRIC_COLUMNS)


def memory_budgets(run: Run) -> pd.DataFrame:
    """The inference memory budget of every point with one (profile {memory: true}), one row per
    point and term, values as display text; empty when none (perfkit.reports.inference_budget)."""
    from perfkit.reports.inference_budget import budget_rows, run_budgets

    labels = run_labels(run)
    rows = [{"point": labels.get(p.key, p.key), "term": "\u00a0\u00a0" * r.indent + r.label, "bytes": r.text,
             "source": r.source, "how / why": r.note, "definition": r.definition}
            for p, budget in run_budgets(run) for r in budget_rows(budget)]
    return pd.DataFrame(rows, columns=["point", "term", "bytes", "source", "how / why", "definition"])


def bandwidth_figure(run: Run) -> Any:
    """busbw and algbw vs message size of a collectives run (a plotly figure), None otherwise."""
    from perfkit.reports.html.figures import bandwidth_figure as figure
    from perfkit.reports.metric_rows import bandwidth_points

    return figure(bandwidth_points(run))


@st.cache_data(ttl=TTL_S, show_spinner=False)
def stored_kernels(url: str, run_id: str) -> pd.DataFrame:
    """The kernel table stored with the run (`run.artifacts.kernels`), possibly empty."""
    from perfkit.store import read

    with _engine(url).connect() as conn:
        return pd.DataFrame(read.kernel_table(conn, run_id))


@st.cache_data(ttl=TTL_S, show_spinner="Reading the run's traces ...")
def kernel_tables(url: str, run_id: str, point_key: str | None, roots: tuple[str, ...]) -> tuple[Any, str]:
    """(KernelView | None, why not) for a run, or one point of it (its trace)."""
    from perfkit.reports.html.data import analysis_tables, kernel_view, trace_tables

    run = run_record(url, run_id)
    where = run_dir(run_id, roots, run.artifacts.stored_from)
    if where is None:
        return None, f"run directory {run_id}/ not found under {', '.join(roots)} (start with --runs DIR)"
    labels = run_labels(run)
    if point_key is None:
        return kernel_view(run, Path(where), labels)
    stored = analysis_tables(run, Path(where), labels)
    label = labels.get(point_key, point_key)
    if stored is not None and "point" in stored.summary.columns:
        def mine(df: pd.DataFrame) -> pd.DataFrame:
            return df[df["point"] == label] if "point" in df.columns else df

        return replace(stored, summary=mine(stored.summary), launch=mine(stored.launch), idle=mine(stored.idle)), ""
    point = next((p for p in run.points if p.key == point_key), None)
    if point is None or not point.trace or not (Path(where) / point.trace).is_file():
        return None, "this point has no trace file"
    return trace_tables(Path(where) / point.trace), ""


def trace_file(run_id: str, point_key: str, run: Run, roots: tuple[str, ...]) -> Path | None:
    where = run_dir(run_id, roots, run.artifacts.stored_from)
    point = next((p for p in run.points if p.key == point_key), None)
    if where is None or point is None or not point.trace:
        return None
    path = Path(where) / point.trace
    return path if path.is_file() else None


def tune_winners(url: str, run_id: str, roots: tuple[str, ...]) -> tuple[pd.DataFrame, str]:
    """The run's tune winners (RUN/tune.json) as display text, one row per tuned workload and shape
    (reports.tune_rows.TUNE_HEADERS), and why they are not shown (a damaged file, no directory);
    an empty frame and "" for a run without a tune table."""
    from perfkit.reports.html.data import tune_view
    from perfkit.reports.tune_rows import TUNE_HEADERS, tune_rows

    run = run_record(url, run_id)
    where = run_dir(run_id, roots, run.artifacts.stored_from)
    empty = pd.DataFrame(columns=list(TUNE_HEADERS))
    if where is None and run.artifacts.tune is not None:
        return empty, f"run directory {run_id}/ not found under {', '.join(roots)} (start with --runs DIR)"
    results, why = tune_view(run, Path(where) if where else None)
    rows = [dict(zip(TUNE_HEADERS, row.cells(), strict=True)) for row in tune_rows(list(results))]
    return (pd.DataFrame(rows, columns=list(TUNE_HEADERS)) if rows else empty), why


def report_html(url: str, run_id: str, roots: tuple[str, ...]) -> bytes:
    """The self-contained HTML report of a stored run (kernels too when its directory is found)."""
    from perfkit.reports.html.data import gather
    from perfkit.reports.html.page import render_html

    run = run_record(url, run_id)
    where = run_dir(run_id, roots, run.artifacts.stored_from)
    return render_html(gather(run, Path(where) if where else None)).encode("utf-8")


@st.cache_data(ttl=TTL_S, show_spinner=False)
def roofline(url: str, run_id: str) -> tuple[Any, str]:
    """(reports.html_data.RooflineView | None, why not) of a stored run."""
    from perfkit.reports.html.data import roofline_view

    return roofline_view(run_record(url, run_id))


# ----------------------------------------------------------------------------- serving

SERVING_KIND = "serving"
SERVING_RUNS_SHOWN = 8  # runs drawn by default: the latest of each commit


def serving_workloads(url: str) -> list[str]:
    """The stored serving workloads as the catalog names them (`serving/<workload>`), sorted."""
    cat = catalog(url)
    return sorted({str(w) for w in cat[cat["kind"] == SERVING_KIND]["workload"]})


@st.cache_data(ttl=TTL_S, show_spinner=False)
def serving_run_ids(url: str, workload: str) -> list[str]:
    """The runs whose points include `workload` (a catalog name), newest first."""
    from perfkit.store import read

    cat = catalog(url)
    mine = cat[(cat["kind"] == SERVING_KIND) & (cat["workload"] == workload)]
    names = mine.drop_duplicates("key")["name"]  # one metric per point is enough to find its runs
    found: set[str] = set()
    with _engine(url).connect() as conn:
        for name in names:
            found.update(h.run_id for h in read.metric_history(conn, str(name)))
    return [r for r in runs(url)["run_id"] if r in found]


def latest_per_commit(url: str, run_ids: list[str], most: int = SERVING_RUNS_SHOWN) -> list[str]:
    """Of `run_ids`, the newest run of each commit (a run without a commit counts as its own), newest
    first, at most `most`."""
    listed = runs(url)
    rows = listed[listed["run_id"].isin(run_ids)]
    commit = rows["commit"].fillna("").where(rows["commit"].fillna("") != "", rows["run_id"])
    return [str(r) for r in rows.assign(_c=commit).drop_duplicates("_c", keep="first")["run_id"].head(most)]


def serving_run_labels(url: str, run_ids: list[str]) -> dict[str, str]:
    """Run id -> its label in the serving figures (commit short + run id)."""
    from perfkit.reports.serving.curves import commit_run_label

    listed = runs(url)
    rows = listed[listed["run_id"].isin(run_ids)]
    return {str(r): commit_run_label(c if isinstance(c, str) else None, str(r))
            for r, c in zip(rows["run_id"], rows["commit"], strict=True)}


def serving_runs(url: str, workload: str, run_ids: list[str] | None = None) -> list[tuple[str, Run]]:
    """(label, run) of the given runs, or of every run with `workload` (commit short + run id)."""
    from perfkit.reports.serving.curves import run_label

    chosen = serving_run_ids(url, workload) if run_ids is None else run_ids
    return [(run_label(run), run) for run in (run_record(url, r) for r in chosen)]


def point_workload(workload: str) -> str:
    """`serving/chat` (the catalog's name) -> `chat` (the points' workload)."""
    return workload.split("/", 1)[1] if "/" in workload else workload


def serving_curves(url: str, workload: str, run_ids: list[str]) -> list[Any]:
    """The curves (reports.serving_curves.Curve) of `workload` in the given runs, one per run."""
    from perfkit.reports.serving.curves import serving_curves as curves

    return curves(serving_runs(url, workload, run_ids), point_workload(workload))


@st.cache_data(ttl=TTL_S, show_spinner=False)
def serving_sweeps(url: str, workload: str) -> list[Any]:
    """The server sweeps (measurements.sweep_runs.StoredSweep) among the runs of `workload`, newest
    first, each with its front redrawn from the store."""
    from perfkit.workloads.serving.measurements.sweep_runs import stored_sweeps

    runs_of = [run_record(url, r) for r in serving_run_ids(url, workload)]
    return stored_sweeps(runs_of, point_workload(workload))


@dataclass(frozen=True)
class SweepTables:
    """One stored server sweep as the Serving page shows it: the reports' cells (sweep_tables)."""

    figure: Any  # plotly Figure or None
    front: pd.DataFrame
    configs: pd.DataFrame
    notes: list[str]


def sweep_tables(sweep: Any) -> SweepTables:
    from perfkit.reports.serving.sweep_html import front_figure
    from perfkit.reports.serving.sweep_tables import (
        CONFIG_HEADERS,
        config_cells,
        front_cells,
        front_headers,
    )

    rows = [r.as_dict() for r in sweep.front]
    return SweepTables(front_figure(rows), pd.DataFrame(front_cells(rows), columns=list(front_headers(sweep.gpus))),
                       pd.DataFrame(config_cells(sweep.configs), columns=list(CONFIG_HEADERS)), list(sweep.notes))


@dataclass(frozen=True)
class TrafficFrame:
    """One traffic table (reports.serving.traffic_tables: reasoning, sessions, turns, prompt cache,
    adapters) as the Serving page shows it."""

    title: str  # the run's text (a stage label): the page escapes it
    frame: pd.DataFrame  # the reports' cells, as text
    note: str | None  # rows left out past the cap


@dataclass(frozen=True)
class ServingTables:
    """A serving workload of one run as the dashboard shows it: text cells (reports.serving_rows)."""

    stages: pd.DataFrame  # stage, status, then a column per important metric with a value (serving_columns)
    more: pd.DataFrame  # stage, then a column per other metric with a value
    column_help: dict[str, str]  # column label -> its metric's key, definition and better direction
    notes: list[str]  # `stage: note` (client-bound, failed requests, chunk gaps, the client's notes)
    front: pd.DataFrame  # reports.serving_rows.FRONT_HEADERS
    server: pd.DataFrame  # metric, then one column per stage
    endpoints: list[str]
    traffic: list[TrafficFrame] = field(default_factory=list)  # in the reports' order


def serving_tables(run: Run, workload: str) -> ServingTables:
    from perfkit.reports.serving.rows import (
        FRONT_HEADERS,
        endpoints,
        front_rows,
        is_front,
        server_metric_table,
        stage_label,
        stage_notes,
        stage_points,
    )
    from perfkit.reports.serving.stage_table import VALIDITY, VALIDITY_HELP, stage_table
    from perfkit.reports.serving.traffic_tables import traffic_tables

    name = point_workload(workload)
    stages = stage_points(run.points, name)
    columns = stage_columns(stages)
    main, rest_t = stage_table(stages, columns.main), stage_table(stages, columns.more)
    table = pd.DataFrame(main.rows(), columns=main.header())
    rest = pd.DataFrame(rest_t.rows(status=False), columns=rest_t.header(status=False))
    helps = {c.label: column_help(c.key) for c in (*main.columns, *rest_t.columns)}
    if main.judged:
        helps[VALIDITY] = VALIDITY_HELP
    notes = list(main.notes)
    fronts = [p for p in run.points if is_front(p) and p.workload == name]
    notes += [f"{stage_label(p)}: {n}" for p in fronts for n in stage_notes(p)]
    front = pd.DataFrame([[c.target, c.usd_per_1m_output_tok, c.throughput_per_gpu] for p in fronts
                          for c in front_rows(p)], columns=list(FRONT_HEADERS))
    names, metrics = server_metric_table(stages)
    server = pd.DataFrame(metrics, columns=["metric", *names])
    traffic = [TrafficFrame(t.title, pd.DataFrame(t.rows, columns=list(t.headers)), t.note)
               for t in traffic_tables(stages)]
    return ServingTables(table, rest, helps, notes, front, server, endpoints(stages), traffic)


# ----------------------------------------------------------------------------- comparisons

VERDICTS = tuple(v.value for v in VERDICT_ORDER)  # the gate table's order; others follow
DERIVED = ("flop_per_s", "bytes_per_s")  # a point's time samples again, scaled


@dataclass(frozen=True)
class Compared:
    table: pd.DataFrame  # reports.html_data.COMPARE_COLUMNS
    note: str
    counts: dict[str, int]  # verdict -> measurements, as the gate counts them (one row per measurement)
    why: tuple[ServingWhy, ...] = ()  # the gate's serving attribution (GateResult.why), as it is
    answer: tuple[str, str] = ("", "")  # the comparison's headline and its why (regression.gate.headline)


def verdict_names(counts: dict[str, int]) -> list[str]:
    """The gate's verdicts in display order, then any other verdict the gate gave (newer gates)."""
    return [*VERDICTS, *sorted(v for v in counts if v not in VERDICTS)]


@st.cache_data(ttl=TTL_S, show_spinner="Comparing ...")
def compare(url: str, base_id: str, cand_id: str) -> Compared:
    """The gate's comparison of two stored runs, as `perfkit compare BASE CAND` makes it
    (perfkit.comparison.pair: the same history, policy and seed)."""
    from perfkit.comparison.pair import compare_pair
    from perfkit.core.errors import StoreError
    from perfkit.reports.html.compare import gate_pairs
    from perfkit.reports.html.data import comparison_rows, verdict_counts

    try:
        result = compare_pair(base_id, cand_id, _engine(url))
    except StoreError as exc:  # nothing in common: no rows, and why
        return Compared(comparison_rows([], {}), str(exc), {})
    from perfkit.regression.gate.headline import headline

    pairs, note = gate_pairs(result)
    table = comparison_rows(pairs, run_labels(run_record(url, cand_id)))
    head = headline(result)
    return Compared(table, note, verdict_counts(table), result.why, (head.text, head.why))


def gate_row(cmp: Compared, key: str, metric: str) -> dict[str, Any] | None:
    """The comparison row of one point's metric, or None when the gate did not compare it."""
    rows = cmp.table[(cmp.table["key"] == key) & (cmp.table["metric"] == metric)]
    return {str(k): v for k, v in rows.iloc[0].items()} if len(rows) else None


@st.cache_data(ttl=TTL_S, show_spinner="Diffing kernels ...")
def kernel_diff(url: str, base_id: str, cand_id: str, point_key: str, roots: tuple[str, ...]) -> tuple[Any, str]:
    """((diff, totals) | None, what it compares or why not): analyzers.diff over the two runs' traces
    of one point: their GPU kernels, or their CPU ops when the traces hold no kernels (CPU runs)."""
    from perfkit.analyzers.diff import diff_totals, op_diff, trace_diff
    from perfkit.analyzers.loaders.kineto.load import load_trace

    paths = []
    for run_id in (base_id, cand_id):
        path = trace_file(run_id, point_key, run_record(url, run_id), roots)
        if path is None:
            return None, f"no trace of this point for run {run_id} (run directory under --runs, with traces/)"
        paths.append(path)
    base, cand = load_trace(paths[0]), load_trace(paths[1])
    diff, what = trace_diff(base, cand), "GPU kernels"
    if diff.empty:
        diff, what = op_diff(base, cand), "CPU ops (a CPU run's trace has no kernels; each op's time includes the ops it calls)"
    if diff.empty:
        return None, "the traces hold neither GPU kernels nor CPU ops"
    return (diff, diff_totals(diff)), what


def previous_run(all_runs: pd.DataFrame, run_id: str) -> str | None:
    """The run before `run_id` of the same spec on the same GPU and branch (the natural baseline):
    in the store's order (created, then run id, as `runs` sorts them), so for the latest run it is
    the run `perfkit compare BRANCH@GPU RUN` resolves (perfkit.store.run_search.find_latest)."""
    at = all_runs.index[all_runs["run_id"] == run_id]
    if not len(at):
        return None
    r = all_runs.loc[at[0]]
    older = all_runs.loc[at[0] + 1:]  # `runs` is newest first with a fresh 0..n-1 index
    same = older[(older["gpu"] == r["gpu"]) & (older["spec"] == r["spec"])
                 & (older["branch"].fillna("") == (r["branch"] or ""))]
    return str(same.iloc[0]["run_id"]) if len(same) else None



@st.cache_data(ttl=TTL_S, show_spinner=False)
def compare_pair(url: str, cand: str | None) -> Any:
    """The pair Compare opens on (perfkit.dashboard.compare_pair.default_pair): two runs with a
    metric in common, or the candidate and why none can be its baseline."""
    from perfkit.dashboard.compare_pair import default_pair
    from perfkit.store import read

    all_runs = runs(url)
    seen: dict[str, frozenset[str]] = {}
    with _engine(url).connect() as conn:
        def metrics_of(run_id: str) -> frozenset[str]:
            if run_id not in seen:
                seen[run_id] = frozenset(name for name, _ in read.run_metric_directions(conn, run_id))
            return seen[run_id]

        return default_pair(all_runs, cand, metrics_of, lambda r: previous_run(all_runs, r))

OPEN_WINDOW = 200  # commits of each series searched for change points still in effect
OPEN_COLUMNS = ["gpu", "branch", "metric", "key", "name", "seen_by", "since_commit", "commits_since", "magnitude",
                "p_value", "before", "after", "baseline_run", "run_id", "gate", "gate_change"]
SEEN_BY_HISTORY = "change point"
SEEN_BY_GATE = "gate vs run before"


@st.cache_data(ttl=TTL_S, show_spinner="Looking for open regressions ...")
def open_regressions(url: str, run_id: str) -> pd.DataFrame:
    """Regressions open at `run_id` on its GPU and branch, one row per metric (OPEN_COLUMNS):

    - seen by a change point: the metric's last change point in the newest OPEN_WINDOW commits
      made it worse. `baseline_run` is the last run before that change, and `gate` the gate's
      verdict on `run_id` against it (what Compare shows for the pair);
    - seen by the gate: the gate calls the metric regressed against the run before (Overview's
      baseline), and no change point covers it yet (detection needs 5 commits a side).

    So every metric the Overview counts as regressed against the baseline is listed here.
    The gate's table has one row per measurement (a point's flop/s and bytes/s are its time's).
    """
    all_runs = runs(url)
    row = all_runs[all_runs["run_id"] == run_id].iloc[0]
    gpu, branch = str(row["gpu"]), row["branch"]
    out = _change_point_regressions(url, run_id, gpu, branch)
    for r in out:
        if r["baseline_run"]:
            _add_gate(r, compare(url, r["baseline_run"], run_id))
    prev = previous_run(all_runs, run_id)
    if prev is not None:
        seen = {r["name"] for r in out}
        cmp = compare(url, prev, run_id)
        for c in cmp.table.to_dict("records"):
            name = f"{c['key']}:{c['metric']}"
            if c["verdict"] == "regressed" and name not in seen:
                out.append({"gpu": gpu, "branch": branch, "metric": c["metric"], "key": c["key"], "name": name,
                            "seen_by": SEEN_BY_GATE, "since_commit": row["commit"], "commits_since": 1,
                            "magnitude": c["ratio"] - 1.0, "p_value": c["p_value"], "before": c["base_value"],
                            "after": c["cand_value"], "baseline_run": prev, "run_id": run_id,
                            "gate": c["verdict"], "gate_change": c["ratio"] - 1.0})
    return pd.DataFrame(out, columns=OPEN_COLUMNS)


def _change_point_regressions(url: str, run_id: str, gpu: str, branch: str | None) -> list[dict[str, Any]]:
    """Metrics of the run whose latest change point (its GPU and branch) made them worse."""
    from perfkit.comparison.history_frame import gpu_series, history_frame
    from perfkit.store import read

    out = []
    with _engine(url).connect() as conn:
        names = read.run_metric_directions(conn, run_id)
        timed = {n.rpartition(":")[0] for n, _ in names if n.endswith(":time_s")}
        for name, direction in names:
            key, metric = split_metric(name)
            if metric in DERIVED and key in timed:
                continue
            hist = history_frame(conn, name, [gpu], branch, limit=OPEN_WINDOW)
            if len(hist) < 2:
                continue
            commits, changes, _, _ = gpu_series(gpu, hist, direction, 2.0)
            if changes and changes[-1]["kind"] == "regression":
                last = changes[-1]
                since = sum(1 for c in commits if c["created_epoch"] >= last["created_epoch"])
                out.append({"gpu": gpu, "branch": branch, "metric": metric, "key": key, "name": name,
                            "seen_by": SEEN_BY_HISTORY, "since_commit": last["commit"], "commits_since": since,
                            "magnitude": last["magnitude"], "p_value": last["p_value"], "before": last["before"],
                            "after": last["after"], "baseline_run": last["base_run"], "run_id": run_id,
                            "gate": "", "gate_change": math.nan})
    return out


def _add_gate(row: dict[str, Any], cmp: Compared) -> None:
    found = gate_row(cmp, row["key"], row["metric"])
    if found is not None:
        row["gate"], row["gate_change"] = str(found["verdict"]), float(found["ratio"]) - 1.0
    else:
        row["gate"] = "not compared"


OVERVIEW_COLUMNS = ("gpu", "spec", "branch", "run_id", "created_at", "commit", "baseline", "open_regressions",
                    "worst", "serving_cost", "serving_why", "points")  # then one column per verdict (overview_verdicts)


def overview_verdicts(table: pd.DataFrame) -> list[str]:
    """The verdict columns of an overview table, in display order."""
    return [c for c in table.columns if c not in OVERVIEW_COLUMNS]


def _latest_row(url: str, all_runs: pd.DataFrame, r: Mapping[Any, Any]) -> tuple[dict[str, Any], dict[str, int]]:
    """One overview row (without its verdict counts) and the gate's verdict counts against the run before."""
    run_id = str(r["run_id"])
    prev = previous_run(all_runs, run_id)
    counts: dict[str, int] = {}
    worst = ""
    cells = why_cells(())
    if prev is not None:
        cmp = compare(url, prev, run_id)
        counts = cmp.counts
        cells = why_cells(cmp.why)
        table = cmp.table
        reg = table[table["verdict"] == "regressed"]
        if len(reg):
            top = reg.iloc[0]  # the gate table's first regression: the largest change
            worst = f"{top['label']} {top['metric']} {fmt_change(top['ratio'])}"
    row = {"gpu": r["gpu"], "spec": r["spec"], "branch": r["branch"], "run_id": run_id,
           "created_at": r["created_at"], "commit": r["commit_short"], "baseline": prev or "",
           "open_regressions": len(open_regressions(url, run_id)), "worst": worst,
           "serving_cost": cells.cost, "serving_why": cells.why,
           "points": f"{r['ok']} ok, {r['failed']} failed, {r['skipped']} skipped"}
    return row, counts


@st.cache_data(ttl=TTL_S, show_spinner="Checking the latest runs ...")
def overview(url: str) -> pd.DataFrame:
    """Latest run per GPU and spec (and branch): its open regressions and the gate's verdicts
    against the run before it (counted as in Compare); rows with regressions first."""
    all_runs = runs(url)
    latest = all_runs.drop_duplicates(["gpu", "spec", "branch"], keep="first")
    rows, all_counts = [], []
    for r in latest.to_dict("records"):
        row, counts = _latest_row(url, all_runs, r)
        rows.append(row)
        all_counts.append(counts)
    verdicts = verdict_names({v: 1 for counts in all_counts for v in counts})
    df = pd.DataFrame([{**row, **{v: counts.get(v, 0) for v in verdicts}} for row, counts in zip(rows, all_counts,
                                                                                                  strict=True)])
    if df.empty:
        return df
    return df.sort_values(["open_regressions", "regressed", "gpu", "spec"], ascending=[False, False, True, True],
                          kind="stable").reset_index(drop=True)


# ----------------------------------------------------------------------------- memory

MEMORY_SUFFIXES = (".pickle", ".json.gz", ".json", ".xplane.pb")
MEMORY_ARTIFACT = "memory_artifact"  # the point metric naming its memory file


def memory_files(url: str, run_id: str, roots: tuple[str, ...]) -> tuple[list[tuple[str, str]], str]:
    """(label, path relative to the run directory) of every memory input of a run: each point's
    `memory_artifact`, then any other file in RUN/memory/; read only inside the run directory
    (a recorded path leading outside is left out and said). ([], why) when there is none."""
    from perfkit.core.run_layout import key_slug
    from perfkit.reports.html.data import inside_run

    run = run_record(url, run_id)
    where = run_dir(run_id, roots, run.artifacts.stored_from)
    if where is None:
        return [], f"run directory {run_id}/ not found under {', '.join(roots)} (start with --runs DIR)"
    root, labels = Path(where), run_labels(run)
    found: dict[str, str] = {}
    outside = []
    for p in run.points:
        rel = p.metrics.get(MEMORY_ARTIFACT)
        if isinstance(rel, str) and rel:
            path = inside_run(root, rel)
            if path is None:
                outside.append(rel)
            elif path.is_file():
                found[path.relative_to(root.resolve()).as_posix()] = labels.get(p.key, p.key)
    folder = inside_run(root, MEMORY_DIR)
    slugs = {key_slug(p.key): labels.get(p.key, p.key) for p in run.points}
    if folder is not None and folder.is_dir():
        for f in sorted(folder.iterdir()):
            rel = inside_run(root, f"{MEMORY_DIR}/{f.name}")
            if rel is None or not rel.is_file() or not f.name.endswith(MEMORY_SUFFIXES):
                continue
            stem = re.sub(r"^\d{4}-", "", next(f.name[:-len(x)] for x in MEMORY_SUFFIXES if f.name.endswith(x)))
            found.setdefault(rel.relative_to(root.resolve()).as_posix(), slugs.get(stem, f.name))
    files = [(f"{label} ({name})", name) for name, label in found.items()]
    why = "" if files else ("no memory files in this run (record them with `profile: {memory: true}` in the spec, "
                            "or open a file by path)")
    if outside:
        why = (why + "; " if why else "") + (f"not read: {len(outside)} memory path(s) in run.json outside the "
                                             f"run directory ({', '.join(outside[:3])})")
    return files, why


def run_memory_path(url: str, run_id: str, relative: str, roots: tuple[str, ...]) -> str | None:
    """The absolute path of one of `memory_files`' entries, None when it is not (or no longer) inside the run."""
    from perfkit.reports.html.data import inside_run

    run = run_record(url, run_id)
    where = run_dir(run_id, roots, run.artifacts.stored_from)
    path = inside_run(Path(where), relative) if where is not None else None
    return str(path) if path is not None and path.is_file() else None


@st.cache_data(ttl=TTL_S, show_spinner="Reading the memory input ...", max_entries=8)
def memory_view(path: str, device: str | None = None) -> tuple[Any, str]:
    """(reports.memory_view.MemoryView | None, why not) of a memory input file (a snapshot, a
    profile_memory trace or an .xplane.pb): the analysis `perfkit memory` prints, cut to a page."""
    from perfkit.analyzers.loaders.memory.load import load_memory_input
    from perfkit.analyzers.memory.analysis import analyze_memory
    from perfkit.core.errors import PerfkitError
    from perfkit.reports.memory.view import memory_view as cut

    p = Path(path).expanduser()
    if not p.is_file():
        return None, f"{path}: no such file; give the path of a memory snapshot, trace or .xplane.pb"
    try:
        return cut(analyze_memory(load_memory_input(p), device)), ""
    except PerfkitError as exc:
        return None, str(exc)
    except OSError as exc:
        return None, f"{path}: cannot read: {exc.strerror or exc}"
