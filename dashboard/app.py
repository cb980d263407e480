"""The perfkit dashboard (Streamlit): `perfkit dashboard` runs `streamlit run` on this file.

One `st.navigation` entry over thin pages in views/; every read goes through dashboard.data.
The default page answers at `/` only (Streamlit gives it the empty path), so Overview is also
registered, hidden from the menu, at `/overview`: both URLs land on it.
"""

from __future__ import annotations

import streamlit as st

from perfkit.dashboard import widgets

st.set_page_config(page_title="perfkit", page_icon=":material/show_chart:", layout="wide")
PAGES = [
    st.Page("views/overview.py", title="Overview", icon=":material/home:", url_path="home", default=True),
    st.Page("views/overview.py", title="Overview", url_path="overview", visibility="hidden"),
    st.Page("views/history.py", title="History", icon=":material/show_chart:", url_path="history"),
    st.Page("views/compare.py", title="Compare", icon=":material/compare_arrows:", url_path="compare"),
    st.Page("views/roofline.py", title="Roofline", icon=":material/landscape:", url_path="roofline"),
    st.Page("views/kernels.py", title="Kernels", icon=":material/memory:", url_path="kernels"),
    st.Page("views/serving.py", title="Serving", icon=":material/speed:", url_path="serving"),
    st.Page("views/memory.py", title="Memory", icon=":material/storage:", url_path="memory"),
    st.Page("views/run.py", title="Run", icon=":material/search:", url_path="run"),
]
page = st.navigation(PAGES)
widgets.demo_banner()
page.run()
