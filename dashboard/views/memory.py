"""Memory: the memory input of a run's point (RUN/memory/, written by `profile: {memory: true}`)
or any memory file by path: the timeline (allocated / active / reserved; a time range of it), the
peak with the allocations alive at it, per-category totals, fragmentation with each number's
definition (the same words as `perfkit memory`) and the segment map. One analysis: `perfkit memory`'s."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from perfkit.dashboard import data, widgets
from perfkit.dashboard.text import md
from perfkit.reports.memory.figures import segment_map_figure, timeline_figure

RUN_SOURCE, FILE_SOURCE = "A run's memory files", "A file path"

st.title("Memory")
source = st.radio("Memory input", [RUN_SOURCE, FILE_SOURCE], horizontal=True, key="mem_source")
path: str | None = None
if source == RUN_SOURCE:
    url = widgets.store_url()
    if url is None:
        st.stop()
    run_id = widgets.pick_run(url, "Run", key="mem_run")
    if run_id is None:
        st.stop()
    roots = data.run_roots()
    files, why = data.memory_files(url, run_id, roots)
    if why:
        widgets.not_available(why)
    if not files:
        st.stop()
    labels = {rel: label for label, rel in files}
    chosen = st.selectbox("Point", list(labels), key="mem_file", format_func=lambda rel: labels.get(rel, rel))
    path = data.run_memory_path(url, run_id, chosen, roots)
    if path is None:
        widgets.not_available(f"{chosen} is no longer a file inside the run directory")
        st.stop()
else:
    path = st.text_input("Memory file (a snapshot .pickle / .json, a profile_memory trace .json(.gz) or an "
                         ".xplane.pb, on the dashboard's machine)", key="mem_path").strip() or None
    if path is None:
        st.caption("Give a path, or pick a run with memory files.")
        st.stop()

view, why = data.memory_view(path)
if view is not None and len(view.devices) > 1:
    device = st.selectbox("Device", view.devices, index=view.devices.index(view.device), key="mem_device")
    if device != view.device:
        view, why = data.memory_view(path, device)
if view is None:
    st.error(md(why))
    st.stop()

st.caption(f"{md(view.path)}: {md(view.kind)}, device {md(view.device)}, {view.events:,} events.")
st.dataframe(pd.DataFrame(view.summary, columns=["", "value"]), hide_index=True, key="mem_summary")
for note in view.notes:
    st.caption(f"Not measured: {md(note)}")

st.subheader("Timeline")
st.caption("Allocated: blocks held by tensors; active: allocated plus freed blocks waiting for their stream; "
           f"reserved: the allocator's segments. Each of the {len(view.x):,} points drawn is the highest event "
           "of its slice (the peak always survives).")
lo: float | None = None
hi: float | None = None
if len(view.x) > 1 and view.x[0] < view.x[-1]:
    lo, hi = st.slider(f"Range ({view.x_unit})", min_value=float(view.x[0]), max_value=float(view.x[-1]),
                       value=(float(view.x[0]), float(view.x[-1])), key="mem_range")
st.plotly_chart(timeline_figure(view, lo, hi), key="mem_timeline", width="stretch")

st.subheader("Alive at the peak")
shown = f"the {len(view.alive_rows):,} largest of " if len(view.alive_rows) < view.alive_total else ""
st.caption(f"{shown}{view.alive_total:,} allocations alive when allocated bytes were highest.")
st.dataframe(pd.DataFrame(view.alive_rows, columns=list(view.alive_columns)), hide_index=True, key="mem_alive")

st.subheader("Categories")
st.caption("Decided by: input = the file says so, rule:* = names around the allocation, none = unknown.")
st.dataframe(pd.DataFrame(view.category_rows, columns=["category", "at peak", "allocated", "allocs", "decided by"]),
             hide_index=True, key="mem_categories")

st.subheader("Fragmentation")
if view.fragmentation_rows:
    st.dataframe(pd.DataFrame(view.fragmentation_rows, columns=["number", "value", "definition"]),
                 hide_index=True, key="mem_fragmentation")
    fig = segment_map_figure(view)
    if fig is not None:
        drawn = len({r[0] for r in view.segment_rows})
        st.caption(f"Segment map: the {drawn:,} largest of {view.segments_total:,} segments, blocks by state.")
        st.plotly_chart(fig, key="mem_segments", width="stretch")
else:
    st.caption(f"The input holds no segments ({md(view.kind)}): fragmentation needs a torch memory snapshot.")
for i, rows in enumerate(view.oom_rows):
    st.subheader(f"Out of memory #{i + 1}")
    st.dataframe(pd.DataFrame(rows, columns=["", "value"]), hide_index=True, key=f"mem_oom_{i}")
