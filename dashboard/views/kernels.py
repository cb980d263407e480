"""Kernels: top kernels, launch overhead and idle breakdown of a run; its traces to download."""

from __future__ import annotations

import streamlit as st

from perfkit.dashboard import data, display, widgets
from perfkit.dashboard.text import md
from perfkit.reports.html.figures import kernels_figure

PERFETTO = """\
Open a trace in Perfetto: go to https://ui.perfetto.dev, choose "Open trace file" and pick the
downloaded .json.gz (it stays on your machine; Perfetto reads it in the browser). chrome://tracing
opens the same files."""

st.title("Kernels")
url = widgets.store_url()
if url is None:
    st.stop()
run_id = widgets.pick_run(url, "Run", key="kern_run")
if run_id is None:
    st.stop()
run = data.run_record(url, run_id)
labels = data.run_labels(run)
traced = [p.key for p in run.points if p.trace]
ALL = "(every point)"
point = st.selectbox("Point", [ALL, *traced], format_func=lambda k: labels.get(k, k), key="kern_point")
view, why = data.kernel_tables(url, run_id, None if point == ALL else point, data.run_roots())
if view is None:
    stored = data.stored_kernels(url, run_id)
    if stored.empty:
        widgets.not_available(why)
    else:
        st.caption(f"Kernel table stored with the run (traces unavailable: {md(why)}).")
        st.dataframe(display.readable(stored), hide_index=True, key="kern_stored")
else:
    st.caption(f"From {md(view.source)}.")
    fig = kernels_figure(view.summary)
    if fig is not None:
        st.plotly_chart(fig, key="kern_chart", width="stretch")
    st.subheader("Top kernels")
    st.dataframe(display.readable(view.summary), hide_index=True, key="kern_summary")
    st.subheader("Launch overhead")
    if view.launch.empty:
        st.caption("No launch data.")
    else:
        st.dataframe(display.readable(view.launch), hide_index=True, key="kern_launch")
    st.subheader("Idle breakdown")
    if view.idle.empty:
        st.caption("No idle data.")
    else:
        st.dataframe(display.readable(view.idle), hide_index=True, key="kern_idle")
if point != ALL:
    st.subheader("Trace")
    path = data.trace_file(run_id, point, run, data.run_roots())
    if path is None:
        st.caption("The trace file of this point is not under --runs.")
    else:
        st.download_button("Download trace", data=path.read_bytes, file_name=path.name,
                           mime="application/gzip", key="kern_download", on_click="ignore")
        st.code(PERFETTO, language="text")
