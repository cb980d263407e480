"""Page parts every dashboard page shares: the demo banner, the empty-store guide, the run
picker and navigation to a run. Text from runs and traces is shown with st.dataframe / st.code /
st.text (never as Markdown or HTML), or escaped first."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from perfkit.dashboard import data, display
from perfkit.dashboard.text import md

RUN_PAGE = "views/run.py"
COMPARE_PAGE = "views/compare.py"
KERNELS_PAGE = "views/kernels.py"
ROOFLINE_PAGE = "views/roofline.py"
HISTORY_PAGE = "views/history.py"

FILL_HELP = """\
perfkit profile examples/gemm-cpu.yaml --db {url}   # run a CPU sweep; it is stored there
perfkit ingest runs/* --db {url}                     # store run directories made elsewhere
perfkit dashboard --demo                             # or: a demo store built from real CPU runs"""


def demo_banner() -> None:
    label = data.demo_label()
    if label:
        st.warning(f"**Demo data.** {md(label)}", icon=":material/science:")


def store_url() -> str | None:
    """The store's URL when it holds runs; otherwise draws how to fill it and returns None."""
    url = data.db_url()
    state = data.store_state(url)
    if state.ready:
        return url
    st.info(f"No runs to show: {md(state.problem)}.")
    st.markdown("Fill the store, then reload this page:")
    st.code(FILL_HELP.format(url=state.url), language="bash")
    return None


def run_choice_label(row: pd.Series) -> str:
    spec = f" · {row['spec']}" if row["spec"] else ""
    commit = f" · {row['commit_short']}" if row["commit_short"] else ""
    return f"{row['run_id']} · {row['gpu']}{spec}{commit}"


def pick_run(url: str, label: str, *, key: str, default: str | None = None,
             param: str | None = "run") -> str | None:
    """A selectbox over stored runs, newest first; preselects ?run=<id> (or `default`)."""
    all_runs = data.runs(url)
    if all_runs.empty:
        return None
    ids = list(all_runs["run_id"])
    wanted = (st.query_params.get(param) if param else None) or default
    index = ids.index(wanted) if wanted in ids else 0
    names = {r["run_id"]: run_choice_label(r) for _, r in all_runs.iterrows()}
    chosen = st.selectbox(label, ids, index=index, key=key, format_func=lambda i: names.get(i, i))
    if param and chosen is not None and st.query_params.get(param) != chosen:
        st.query_params[param] = chosen
    return chosen


def open_run(run_id: str) -> None:
    st.switch_page(RUN_PAGE, query_params={"run": run_id})


def not_available(reason: str) -> None:
    st.info(f"Not available for this run: {md(reason)}")


def key_column_config(columns: list[str]) -> dict[str, Any]:
    """Column settings: help on the key columns, bounded widths for point and why."""
    out: dict[str, Any] = {c: st.column_config.TextColumn(c, help=display.KEY_HELP[c])
                           for c in display.KEY_COLUMNS if c in columns}
    if "point" in columns:
        out["point"] = st.column_config.TextColumn("point", width="medium")
    if "why" in columns:
        out["why"] = st.column_config.TextColumn("why", width="large")
    return out

