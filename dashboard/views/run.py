"""Run: one stored run's environment, spec, points with numerics, workload metrics, tune winners
(RUN/tune.json, when the run directory is found) and failures."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from perfkit.core.codec import to_builtins
from perfkit.core.units import fmt_num, fmt_pct
from perfkit.dashboard import data, widgets
from perfkit.dashboard.text import md
from perfkit.reports.html.data import failures
from perfkit.reports.point_cells import point_cells

st.title("Run")
url = widgets.store_url()
if url is None:
    st.stop()
run_id = widgets.pick_run(url, "Run", key="run_pick")
if run_id is None:
    st.stop()
run = data.run_record(url, run_id)
store, chosen = url, run_id
labels = data.run_labels(run)
git = run.env.git
c1, c2, c3, c4 = st.columns(4)
c1.metric("Status", run.status)
c2.metric("Device", run.device)
c3.metric("Commit", (git.commit or "-")[:10])
c4.metric("Points ok", f"{run.counts.get('ok', 0)} / {len(run.points)}")
st.caption(md(f"created {run.created} · finished {run.finished or '-'} · spec "
                           f"{run.spec.get('name', '')} ({run.spec_path}) · branch {git.branch or '-'}"))
links = st.columns(4)
links[0].page_link(widgets.COMPARE_PAGE, label="Compare with its baseline", query_params={"run": run_id})
links[1].page_link(widgets.ROOFLINE_PAGE, label="Roofline", query_params={"run": run_id})
links[2].page_link(widgets.KERNELS_PAGE, label="Kernels", query_params={"run": run_id})
links[3].download_button("HTML report", data=lambda: data.report_html(store, chosen, data.run_roots()),
                         file_name=f"perfkit-{run_id}.html", mime="text/html", key="run_report",
                         on_click="ignore")

rows = []
for p in run.points:
    st_ = p.measurement.stats if p.measurement and p.measurement.samples_s else None
    cells = point_cells(p)
    rows.append({
        "point": labels.get(p.key, p.key), "status": p.status,
        "median": cells.median, "95% CI": fmt_pct(st_.rel_ci_halfwidth) if st_ else "-",
        "samples": st_.n if st_ else 0, "stop": p.measurement.stop_reason if p.measurement else "-",
        "flop/s": cells.flop_per_s, "bytes/s": cells.bytes_per_s,
        "rel err": fmt_num(p.numerics.rel_err) if p.numerics else "-",
        "tol": fmt_num(p.numerics.tol) if p.numerics else "-",
        "numerics ok": p.numerics.ok if p.numerics else None,
        "reference": p.numerics.reference if p.numerics else "", "key": p.key,
    })
st.subheader("Points and numerics")
st.dataframe(pd.DataFrame(rows), hide_index=True, key="run_points")
metrics = data.workload_metrics(run)
if not metrics.empty:
    st.subheader("Workload metrics")
    st.dataframe(metrics, hide_index=True, key="run_metrics")
    bandwidth = data.bandwidth_figure(run)
    if bandwidth is not None:
        st.plotly_chart(bandwidth, key="run_bandwidth")
budgets = data.memory_budgets(run)
if not budgets.empty:
    st.subheader("Memory budget")
    st.dataframe(budgets, hide_index=True, key="run_memory_budget")
tune, why_not = data.tune_winners(store, chosen, data.run_roots())
if not tune.empty or why_not:
    st.subheader("Tune winners")
    if why_not:
        widgets.not_available(why_not)
    else:
        st.caption("Per shape, the fastest configuration and the runner-up; speedup = runner-up median / "
                   "best median; distinguishable when their 95% confidence intervals do not overlap.")
        st.dataframe(tune, hide_index=True, key="run_tune")
st.subheader("Failures")
bad = failures(run)
if bad:
    st.dataframe(pd.DataFrame([{"point": labels.get(k, k), "status": s, "error": e} for k, s, e in bad]),
                 hide_index=True, key="run_failures")
else:
    st.success("Every point ran and passed its numerics check.")
left, right = st.columns(2)
with left:
    st.subheader("Environment")
    st.json(to_builtins(run.env), expanded=1)
with right:
    st.subheader("Spec")
    st.code(json.dumps(run.spec, indent=2, default=str), language="json")
