"""Serving: one serving workload across runs (latency vs throughput, cost vs interactivity; one
curve per run, by default the latest run of each commit) and the stage table of one run (every
metric of its stages, the most important first, the rest under "more columns"; each column's
definition as its tooltip) with its notes, the cost at each target interactivity, the traffic
tables (reasoning, sessions by stage / turn / session, prompt cache, LoRA adapters: the reports'
cells) and the server's metrics; where the workload's runs came from `perfkit serve-sweep`, the
sweep's front (throughput per GPU vs interactivity over every configuration, as front.html) and its
configurations."""

from __future__ import annotations

import streamlit as st

from perfkit.dashboard import data, widgets
from perfkit.dashboard.text import md
from perfkit.reports.serving.figures import cost_vs_interactivity, latency_vs_throughput

st.title("Serving")
url = widgets.store_url()
if url is None:
    st.stop()
workloads = data.serving_workloads(url)
if not workloads:
    st.info("No serving runs in the store yet: measure a server with `perfkit serve-bench URL` "
            "(or `kind: serving` in a spec) and store the run.")
    st.stop()
wanted = st.query_params.get("workload")
workload = st.selectbox("Serving workload", workloads, index=workloads.index(wanted) if wanted in workloads else 0,
                        key="srv_workload")
ids = data.serving_run_ids(url, workload)
names = data.serving_run_labels(url, ids)
chosen = st.multiselect(f"Runs (default: the latest run of each commit, up to {data.SERVING_RUNS_SHOWN})", ids,
                        default=data.latest_per_commit(url, ids), format_func=lambda r: names.get(r, r),
                        key=f"srv_runs_{workload}")
if not chosen:
    st.info("Pick one or more runs.")
    st.stop()
curves = data.serving_curves(url, workload, chosen)
st.caption("One line per run (commit · run id), its stages in load order; an X marks a stage where the load "
           "client, not the server, was the bottleneck (the gate does not compare it).")
for key, fig in (("srv_latency", latency_vs_throughput(curves)), ("srv_cost", cost_vs_interactivity(curves))):
    if fig is not None:
        st.plotly_chart(fig, key=key, width="stretch")

st.subheader("Stages")
run_id = st.selectbox("Run", chosen, format_func=lambda r: names.get(r, r), key="srv_run")
tables = data.serving_tables(data.run_record(url, run_id), workload)
for where in tables.endpoints:
    st.caption(f"Endpoint: {md(where)}")
help_config = {label: st.column_config.TextColumn(label, help=md(text)) for label, text in tables.column_help.items()}
st.dataframe(tables.stages, hide_index=True, key="srv_stages", column_config=help_config)
if len(tables.more.columns) > 1:
    with st.expander(f"More columns ({len(tables.more.columns) - 1}): every other metric of the stages"):
        st.dataframe(tables.more, hide_index=True, key="srv_more", column_config=help_config)
for note in tables.notes:
    st.warning(md(note), icon=":material/info:")
if not tables.front.empty:
    st.subheader("Cost at target interactivity")
    st.dataframe(tables.front, hide_index=True, key="srv_front")
for i, traffic in enumerate(tables.traffic):
    st.subheader(md(traffic.title))
    st.dataframe(traffic.frame, hide_index=True, key=f"srv_traffic_{i}")
    if traffic.note:
        st.caption(md(traffic.note))
if not tables.server.empty:
    with st.expander("Server metrics (difference over each stage)"):
        st.dataframe(tables.server, hide_index=True, key="srv_server")

sweeps = data.serving_sweeps(url, workload)
if sweeps:
    st.subheader("Server sweep")
    ids = [s.sweep_id for s in sweeps]
    picked = st.selectbox("Sweep (perfkit serve-sweep)", ids, key=f"srv_sweep_{workload}")
    sweep = data.sweep_tables(sweeps[ids.index(picked)])
    st.caption("Every stage of every configuration on the throughput-vs-interactivity plane; the Pareto-optimal "
               "stages (no other stage has at least both and more of one) are starred and joined.")
    if sweep.figure is not None:
        st.plotly_chart(sweep.figure, key="srv_sweep_front", width="stretch")
    st.dataframe(sweep.front, hide_index=True, key="srv_sweep_table")
    for note in sweep.notes:
        st.caption(md(note))
    st.dataframe(sweep.configs, hide_index=True, key="srv_sweep_configs")
