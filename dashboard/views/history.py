"""History: a metric over commits per GPU, with noise bands and change points; below, the noise
reputation of every metric of the workload (the gate's `noisy runs`)."""

from __future__ import annotations

import streamlit as st

from perfkit.comparison.gate_history import HISTORY_RUNS
from perfkit.dashboard import data, display, figures, widgets
from perfkit.dashboard.text import md
from perfkit.regression.changepoint.options import ChangePointOptions
from perfkit.regression.gate.reputation import BAD_REPUTATION, FAR_SCORE

DEFAULT_COMMITS = 500  # shown at first on a long history (the slider widens it)
MAX_LINKS = 5  # change points offered for Compare, newest first

st.title("History")
url = widgets.store_url()
if url is None:
    st.stop()
cat = data.catalog(url)
if cat.empty:
    st.info("The store holds runs but no metrics yet.")
    st.stop()
wanted = cat[cat["name"] == st.query_params.get("metric", "")]  # ?metric=<name> preselects it
target = wanted.iloc[0] if len(wanted) else None


def index_of(options: list, value: object) -> int:
    return options.index(value) if value in options else 0


c1, c2 = st.columns([2, 3])
workloads = sorted(cat["workload"].unique())
workload = c1.selectbox("Workload", workloads, key="h_workload",
                        index=index_of(workloads, target["workload"] if target is not None else None))
rows = cat[cat["workload"] == workload]
workload_names = tuple(sorted(rows["name"]))  # the noise reputation table's metrics
params = {k for p in rows["params"] for k in p}
varying = sorted(k for k in params if len({p.get(k) for p in rows["params"]}) > 1)
with c2:
    cols = st.columns(max(len(varying), 1))
    for i, name in enumerate(varying):
        values = sorted({p.get(name) for p in rows["params"] if p.get(name) is not None}, key=str)
        chosen = cols[i].selectbox(md(str(name)), values, key=f"h_param_{name}",
                                   index=index_of(values, target["params"].get(name) if target is not None else None))
        rows = rows[[p.get(name) == chosen for p in rows["params"]]]
c3, c4, c5 = st.columns([2, 3, 2])
metrics = sorted(rows["metric"].unique(), key=lambda m: (m != "time_s", m))
metric = c3.selectbox("Metric", metrics, key="h_metric",
                      index=index_of(metrics, target["metric"] if target is not None else None))
name = str(rows[rows["metric"] == metric]["name"].iloc[0])
st.query_params["metric"] = name
unit, direction, gpus, branches = data.metric_facts(url, name)
chosen_gpus = c4.multiselect("GPU", gpus, default=gpus, key="h_gpus")
branch_options = ["(all)", *branches]
branch = c5.selectbox("Branch", branch_options, key="h_branch",  # default: main, when there is one
                      index=index_of(branch_options, st.query_params.get("branch", "main")))
if not chosen_gpus:
    st.info("Choose at least one GPU.")
    st.stop()
h = data.history(url, name, tuple(chosen_gpus), None if branch == "(all)" else branch)
if h.runs.empty:
    st.info("No run of this metric matches the filters.")
    st.stop()
commits = h.commits.sort_values("created_epoch")["commit"].drop_duplicates().tolist()
if len(commits) > 1:
    # positions, not commit ids: a slider over thousands of options is slow in the browser
    lo_i, hi_i = st.slider("Commit range (positions in time order, oldest 0)", 0, len(commits) - 1,
                           (max(0, len(commits) - DEFAULT_COMMITS), len(commits) - 1), key="h_range")
    first, last = commits[lo_i], commits[hi_i]
    st.caption(f"From commit {md(first[:10])} to {md(last[:10])} ({hi_i - lo_i + 1:,} commits).")
    if len(commits) > DEFAULT_COMMITS:
        st.caption(f"{len(commits):,} commits; the newest {DEFAULT_COMMITS} are shown first: widen the range to see "
                   "more. Change points and bands are computed over the whole history.")
    lo = h.commits.loc[h.commits["commit"] == first, "created_epoch"].min()
    hi = h.commits.loc[h.commits["commit"] == last, "created_epoch"].max()
    h = data.history_between(h, float(lo), float(hi))
better = "higher" if direction == "higher" else "lower"
st.caption(f"{md(name)} ({md(unit) or 'no unit'}, {better} is better). "
           "Dots: runs (click one to open it). Line: the level of each segment between change points; "
           "band: ±2 run-to-run sigma (the gate's spread estimate). Markers: detected change points.")
spread = h.runs["value"].max() / max(h.runs["value"].min(), 1e-300)
log_y = st.toggle("Log scale", value=bool(spread > 10), key="h_log")  # GPUs far apart: log by default
fig = figures.history_figure(h, f"{name} by GPU", log_y=log_y)
event = st.plotly_chart(fig, on_select="rerun", selection_mode="points", key="history_chart", width="stretch")
picked = [p for p in (event.selection.points if event else []) if p.get("customdata")]
if picked:
    widgets.open_run(str(picked[0]["customdata"][0]))
if h.trends:
    st.subheader(f"Trends ({len(h.trends)})")
    st.caption("A slow creep is reported as a trend (its slope per commit and the commits it spans), as "
               "`perfkit history` reports it; the change points below are then those left with the line taken out.")
    for gpu, trend in sorted(h.trends.items()):
        st.markdown(f"- **{md(gpu)}**: {md(trend.text())} over {trend.commits:,} commits")
st.subheader(f"Change points ({len(h.changes)})")
if h.changes.empty:
    opts = ChangePointOptions()  # the defaults perfkit.comparison.history_frame detects with
    st.caption(f"None detected in this range (p <= {opts.max_p:g} and at least {opts.min_magnitude:.1%}, "
               f"{opts.min_size} commits a side).")
else:
    st.dataframe(display.change_points_table(h.changes, unit), hide_index=True, key="history_changes",
                 column_config={"previous commit": st.column_config.TextColumn(
                                    width="small", help="the last commit at the old level"),
                                "commit": st.column_config.TextColumn(
                                    width="small", help="the first commit at the new level"),
                                "created": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm")})
    st.caption("The gate's verdict on a change: the last run of the previous commit against the first run at the "
               "new level.")
    for change in h.changes.sort_values("created_epoch", ascending=False).head(MAX_LINKS).to_dict("records"):
        st.page_link(widgets.COMPARE_PAGE, icon=":material/compare_arrows:",
                     label=md(f"Compare {change['gpu']}: {change['previous_commit'][:10]} → "
                                   f"{change['commit'][:10]} ({change['kind']})"),
                     query_params={"base": change["base_run"], "run": change["first_run"]})
st.subheader("Runs")
table = h.runs.sort_values("created_epoch", ascending=False)[["run_id", "gpu", "created_at", "commit", "branch",
                                                              "value", "n"]]
sel = st.dataframe(display.history_runs_table(table, unit), hide_index=True, on_select="rerun",
                   selection_mode="single-row", key="history_runs",
                   column_config={"created": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm")})
if sel.selection.rows:
    widgets.open_run(str(table.iloc[sel.selection.rows[0]]["run_id"]))
st.subheader("Noise reputation")
reputation = data.noise_reputation(url, workload_names, tuple(chosen_gpus), None if branch == "(all)" else branch)
st.caption(f"How often each metric of {md(workload)} landed far off without a code change: of its newest "
           f"{HISTORY_RUNS} runs on the GPUs and branch above, those at its current level scored against the others "
           f"(more than {FAR_SCORE:g} robust sigmas off), as `perfkit gate` counts its `noisy runs`. From "
           f"{BAD_REPUTATION:.0%} the gate blames the benchmark in its reasons: fix the benchmark (more samples, "
           "warm-up, locked clocks, a quieter runner) rather than rerun the pull request. Worst first; click a "
           "column to sort.")
if reputation.empty:
    st.caption("No metric of this workload has enough stored runs at its current level to score yet.")
else:
    st.dataframe(reputation, hide_index=True, key="history_reputation",
                 column_config={"metric": st.column_config.TextColumn("metric"),
                                "gpu": st.column_config.TextColumn("GPU"),
                                "noisy_runs": st.column_config.TextColumn(
                                    "noisy runs", help="runs far off / runs scored"),
                                "far_off_pct": st.column_config.NumberColumn(
                                    "far off", format="%d%%", help="share of the scored runs far off"),
                                "runs_scored": st.column_config.NumberColumn(
                                    "runs scored", help="the runs at the metric's current level"),
                                "last_far_commit": st.column_config.TextColumn(
                                    "last far-off commit", help="the commit of the newest run far off"),
                                "last_far_run": st.column_config.TextColumn("last far-off run")})
