"""Roofline: a run's points against its device's measured and datasheet ceilings."""

from __future__ import annotations

import streamlit as st

from perfkit.dashboard import data, display, widgets
from perfkit.dashboard.text import md
from perfkit.reports.html.text import plot_text

st.title("Roofline")
url = widgets.store_url()
if url is None:
    st.stop()
run_id = widgets.pick_run(url, "Run", key="roof_run")
if run_id is None:
    st.stop()
view, why = data.roofline(url, run_id)
if view is None:
    widgets.not_available(why)
    st.stop()
from perfkit.roofline.ceilings import roof_labels  # noqa: E402
from perfkit.roofline.figure import roofline_figure  # noqa: E402

shown = view.placed.copy()
for column in ("key", "workload"):
    if column in shown.columns:
        shown[column] = [plot_text(v) for v in shown[column]]
fig = roofline_figure(shown, view.roofs, title=f"Roofline: {plot_text(view.device)}")
st.plotly_chart(fig, key="roofline_chart", width="stretch")
for note in view.notes:
    st.caption(md(note))
for label in roof_labels(view.roofs):
    roof = view.roofs[label]
    st.caption(f"{md(label)} roof: {md(roof.device)} ({md(roof.source)})")
labels = data.run_labels(data.run_record(url, run_id))
columns = ["key", "dtype", "time_s", "intensity_dram", "achieved_flop_per_s", "achieved_bytes_per_s"]
for roof_label in roof_labels(view.roofs):
    columns += [f"attainable_flop_per_s_{roof_label}", f"pct_of_roof_{roof_label}", f"bound_{roof_label}"]
table = view.placed[[c for c in columns if c in view.placed.columns]]
table = table.assign(key=[labels.get(k, k) for k in table["key"]])
st.dataframe(display.roofline_table(table, roof_labels(view.roofs)), hide_index=True, key="roofline_table")
