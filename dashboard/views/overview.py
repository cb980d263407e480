"""Overview: the latest run per GPU and spec, open regressions first."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from perfkit.dashboard import data, display, widgets
from perfkit.dashboard.text import md

MAX_LINKS = 5  # open regressions offered for Compare, largest first

st.title("Overview")
url = widgets.store_url()
if url is None:
    st.stop()
state = data.store_state(url)
all_runs = data.runs(url)
table = data.overview(url)
opened = pd.concat([data.open_regressions(url, str(r)) for r in table["run_id"]], ignore_index=True)
c1, c2, c3, c4 = st.columns(4)
c1.metric("Runs stored", state.runs)
c2.metric("GPUs", all_runs["gpu"].nunique())
c3.metric("Specs", all_runs["spec"].nunique())
c4.metric("Open regressions", len(opened),
          help="metrics whose latest change point made them worse, plus metrics the gate calls regressed against "
               "the run before")

st.subheader("Open regressions")
if opened.empty:
    st.success("None: no metric's latest change point (newest 200 commits per GPU and branch) made it worse, and "
               "the gate calls no metric of a latest run regressed against the run before.")
else:
    st.caption("Seen by a change point (still the metric's latest one; `gate`: the gate's verdict on the latest "
               "run against the last run before the change), or by the gate against the run before (too new for a "
               f"change point: 5 commits a side). Select a row to see its History; the links (largest {MAX_LINKS}) "
               "open the Compare of its two runs.")
    shown = opened.sort_values("magnitude", key=abs, ascending=False).reset_index(drop=True)
    open_table = display.open_regressions_table(shown)
    open_columns = list(open_table.columns)
    pick = st.dataframe(open_table, hide_index=True, on_select="rerun", selection_mode="single-row",
                        key="overview_open", column_order=display.key_columns_first(open_columns),  # seen at 1400 px
                        column_config={**widgets.key_column_config(open_columns),
                                       "since commit": st.column_config.TextColumn(width="small")})
    if pick.selection.rows:
        row = shown.iloc[pick.selection.rows[0]]
        st.switch_page(widgets.HISTORY_PAGE, query_params={"metric": str(row["name"]),
                                                          "branch": str(row["branch"] or "(all)")})
    for reg in shown.head(MAX_LINKS).to_dict("records"):  # the gate's verdict on each, in Compare
        st.page_link(widgets.COMPARE_PAGE, icon=":material/compare_arrows:",
                     label=md(f"Compare {reg['key']} ({reg['gpu']}, {reg['branch']}): {reg['baseline_run']} "
                                   f"→ {reg['run_id']}: {reg['gate'] or 'not compared'}"),
                     query_params={"base": str(reg["baseline_run"]), "run": str(reg["run_id"])})

st.subheader("Latest runs")
st.caption(f"Store: {md(state.url)}. The latest run of each spec on each GPU and branch, with its open "
           "regressions and the gate's verdicts against the run before it (its baseline; flop/s and bytes/s of a "
           "timed point are not counted again). Every metric regressed against the baseline is an open "
           "regression. A serving run also shows its cost change against the baseline and what moved it "
           "(the gate's serving attribution, as `perfkit compare` prints it). Select a row to open the run.")
SERVING = [c for c in ("serving_cost", "serving_why") if len(table) and (table[c] != "").any()]
COLUMNS = ["gpu", "spec", "branch", "open_regressions", *SERVING, *data.overview_verdicts(table), "worst", "commit",
           "created_at", "points", "run_id", "baseline"]
table = table[COLUMNS] if len(table) else table
event = st.dataframe(
    table, hide_index=True, on_select="rerun", selection_mode="single-row", key="overview_table",
    column_config={
        "gpu": st.column_config.TextColumn("GPU"),
        "created_at": st.column_config.DatetimeColumn("created", format="YYYY-MM-DD HH:mm"),
        "open_regressions": st.column_config.NumberColumn("open regressions"),
        "regressed": st.column_config.NumberColumn("regressed vs baseline",
                                                   help="metrics the gate calls regressed against the run before"),
        "worst": st.column_config.TextColumn("largest regression vs baseline"),
        "serving_cost": st.column_config.TextColumn(
            "cost vs baseline", help="serving: USD per 1M output tokens, candidate vs baseline, of the stage whose "
                                     "cost moved most (among the stages the gate found a change in)"),
        "serving_why": st.column_config.TextColumn(
            "why (serving)", help="what moved that stage most, as `perfkit compare` says it; \"within noise\" "
                                  "when the gate found no change in any serving stage"),
        "run_id": st.column_config.TextColumn("run"),
    },
)
if event.selection.rows:
    widgets.open_run(str(table.iloc[event.selection.rows[0]]["run_id"]))
st.subheader("Recent runs")
st.dataframe(all_runs[["run_id", "created_at", "gpu", "spec", "branch", "commit_short", "status", "ok", "failed",
                       "skipped", "source"]].head(50), hide_index=True, key="recent_runs",
             column_config={"run_id": st.column_config.TextColumn("run"), "gpu": st.column_config.TextColumn("GPU"),
                            "created_at": st.column_config.DatetimeColumn("created", format="YYYY-MM-DD HH:mm"),
                            "commit_short": st.column_config.TextColumn("commit")})
