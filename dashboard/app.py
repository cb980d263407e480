"""The perfkit dashboard (Streamlit): `perfkit dashboard` runs `streamlit run` on this file.

One `st.navigation` entry over thin pages in views/; every read goes through dashboard.data.
"""

from __future__ import annotations

import streamlit as st

from dashboard import widgets

st.set_page_config(page_title="perfkit", page_icon="📈", layout="wide")
PAGES = [
    st.Page("views/overview.py", title="Overview", icon="🏠", default=True),
    st.Page("views/history.py", title="History", icon="📈"),
    st.Page("views/compare.py", title="Compare", icon="⚖️"),
    st.Page("views/roofline.py", title="Roofline", icon="🏔️"),
    st.Page("views/kernels.py", title="Kernels", icon="🧩"),
    st.Page("views/run.py", title="Run", icon="🔎"),
]
page = st.navigation(PAGES)
widgets.demo_banner()
page.run()
