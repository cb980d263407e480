"""Compare: two runs, metric by metric (the gate's verdicts), and their kernel diff."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from perfkit.dashboard import data, display, widgets
from perfkit.dashboard.text import md
from perfkit.reports.gate.format import VALUES_NOTE
from perfkit.reports.html.data import comparison_display
from perfkit.reports.html.figures import comparison_figure
from perfkit.reports.serving.kernel_table import (
    KERNEL_COLUMNS,
    PERFETTO_URL,
    kernel_rows,
    trace_files,
)
from perfkit.reports.serving.why_lines import TITLE as WHY_TITLE
from perfkit.reports.serving.why_lines import why_lines

st.title("Compare")
url = widgets.store_url()
if url is None:
    st.stop()
all_runs = data.runs(url)
# the pair to open on: two runs with a metric in common (the candidate asked for, or the newest
# run that has one), never two runs that share nothing
asked = st.query_params.get("run")
opening = data.compare_pair(url, asked if asked in set(all_runs["run_id"]) else None)
c1, c2 = st.columns(2)
with c2:
    cand = widgets.pick_run(url, "Candidate", key="cmp_cand", default=opening.cand)
pair = opening if cand == opening.cand else data.compare_pair(url, cand)
others = [r for r in all_runs["run_id"] if r != cand]
with c1:
    base = widgets.pick_run(url, "Baseline (default: the run before the candidate)", key="cmp_base",
                            default=pair.base or (others[0] if others else None), param="base")
if pair.base is None and pair.why_none:
    st.warning(f"Nothing to compare by default: {md(pair.why_none)}.")
if base is None or cand is None:
    st.stop()
if base == cand:
    st.info("Pick two different runs.")
    st.stop()
result = data.compare(url, base, cand)
if result.answer[0]:  # the answer first, as every view of the pair says it
    st.markdown(f"**Answer:** {md(result.answer[0])}")
    if result.answer[1]:
        st.markdown(f"**Why:** {md(result.answer[1])}")
verdicts = data.verdict_names(result.counts)
for col, verdict in zip(st.columns(len(verdicts)), verdicts, strict=True):
    col.metric(verdict, result.counts.get(verdict, 0))
st.caption("Measurements per verdict, as the gate counts them: a point's time, flop/s and bytes/s are one "
           "measurement, one row. " + VALUES_NOTE[0].upper() + VALUES_NOTE[1:] + ".")
if result.note:
    st.caption(f"Not compared: {md(result.note)}")
if result.why:
    st.subheader(WHY_TITLE[0].upper() + WHY_TITLE[1:])
    st.caption("Per serving stage, which component of a request's time moved its latency, throughput and cost "
               "(the same lines as `perfkit compare`, the gate's Markdown and `report --vs`); \"within noise\" "
               "where the gate found no change in the stage.")
    for line in why_lines(result.why):
        st.markdown(md(line))
    for i, w in enumerate(result.why):
        if w.kernels is None or w.kernels.failure:
            continue
        st.markdown(f"**{md(w.label)}**: engine steps per type, baseline vs candidate")
        st.dataframe(pd.DataFrame(kernel_rows(w.kernels), columns=list(KERNEL_COLUMNS)), hide_index=True,
                     key=f"cmp_kernels_{i}")
        files = [(side, path) for side, path in trace_files(w.kernels) if path.is_file()]
        if files:
            st.markdown(f"Traces of these steps: download one, then [open in ui.perfetto.dev]({PERFETTO_URL}) "
                        "(Open trace file: it takes no local file by URL).")
            for j, (side, path) in enumerate(files):
                st.download_button(f"{side}: {path.name}", data=path.read_bytes, file_name=path.name,
                                   mime="application/gzip" if path.name.endswith(".gz") else "application/json",
                                   key=f"cmp_trace_{i}_{j}", on_click="ignore")
if result.table.empty:
    st.info("The two runs share no metric.")
    st.stop()
fig = comparison_figure(result.table)
if fig is not None:
    st.plotly_chart(fig, key="cmp_chart", width="stretch")
shown = comparison_display(result.table)
st.dataframe(shown, hide_index=True, key="cmp_table",  # metric, verdict, change first: on screen at 1400 px
             column_order=display.key_columns_first(list(shown.columns), hidden=("key",)),
             column_config=widgets.key_column_config(list(shown.columns)))

cand_run = data.run_record(url, cand)
labels = data.run_labels(cand_run)
traced = {p.key for p in cand_run.points if p.kind != "serving"}  # a serving stage has no trace of its own
keys = sorted({str(k) for k in result.table["key"]} & traced)
if not keys:  # serving runs: the kernel level is in each stage's why (serve-bench --profile)
    st.stop()
st.subheader("Kernel diff")
point = st.selectbox("Point", keys, format_func=lambda k: labels.get(k, k), key="cmp_point")
diff, what = data.kernel_diff(url, base, cand, point, data.run_roots())
if diff is None:
    widgets.not_available(what)
else:
    table, totals = diff
    st.caption(f"{md(what)}: before is the baseline, after the candidate.")
    st.dataframe(display.readable(totals), hide_index=True, key="cmp_diff_totals")
    diff_shown = display.readable(table)
    st.dataframe(diff_shown, hide_index=True, key="cmp_diff", column_order=display.key_columns_first(
        ["status", *[c for c in diff_shown.columns if c != "status"]]))
