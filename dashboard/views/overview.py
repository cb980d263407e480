"""Overview: the latest run per GPU and spec, open regressions first."""

from __future__ import annotations

import streamlit as st

from dashboard import data, widgets

st.title("Overview")
url = widgets.store_url()
if url is None:
    st.stop()
state = data.store_state(url)
all_runs = data.runs(url)
table = data.overview(url)
open_regressions = int((table["regressed"] > 0).sum()) if len(table) else 0
c1, c2, c3, c4 = st.columns(4)
c1.metric("Runs stored", state.runs)
c2.metric("GPUs", all_runs["gpu"].nunique())
c3.metric("Specs", all_runs["spec"].nunique())
c4.metric("Latest runs with regressions", open_regressions)
st.caption(f"Store: {state.url}. Each row is the latest run of a spec on a GPU and branch, compared by the "
           "gate with the run before it (its baseline). Select a row to open the run.")
event = st.dataframe(
    table, hide_index=True, on_select="rerun", selection_mode="single-row", key="overview_table",
    column_config={
        "created_at": st.column_config.DatetimeColumn("created", format="YYYY-MM-DD HH:mm"),
        "regressed": st.column_config.NumberColumn("regressed", help="metrics the gate calls regressed"),
        "worst": st.column_config.TextColumn("largest regression"),
    },
)
if event.selection.rows:
    widgets.open_run(str(table.iloc[event.selection.rows[0]]["run_id"]))
st.subheader("Recent runs")
st.dataframe(all_runs[["run_id", "created_at", "gpu", "spec", "branch", "commit_short", "status", "ok", "failed",
                       "skipped", "source"]].head(50), hide_index=True, key="recent_runs")
