"""DP Synth Lab: the Streamlit entry point — navigation, shared sidebar, theme.

Run with `make run` (or `.venv/bin/streamlit run app.py`); serves on localhost:8501.
"""

from pathlib import Path

import streamlit as st

ROOT = Path(__file__).parent

st.set_page_config(page_title="DP Synth Lab", page_icon=":material/lock:", layout="wide")
st.html(f"<style>{(ROOT / 'assets' / 'style.css').read_text()}</style>")

PAGES = [
    st.Page(ROOT / "pages" / "playground.py", title="Playground", icon=":material/science:", default=True),
    st.Page(ROOT / "pages" / "runs.py", title="Runs & Compare", icon=":material/monitoring:"),
    st.Page(ROOT / "pages" / "tune.py", title="Tune", icon=":material/tune:"),
    st.Page(ROOT / "pages" / "accountant.py", title="Accountant", icon=":material/calculate:"),
    st.Page(ROOT / "pages" / "learn.py", title="Learn", icon=":material/menu_book:"),
]
nav = st.navigation(PAGES)

with st.sidebar:
    from ui.common import instructor, jobs, runs_root, session_id
    from ui.participant import alias, instructor_box, remember

    remember()  # the participant (and instructor) cookies survive a reload

    active = jobs().active()
    st.caption(f"{len(active)} run(s) queued or training" if active else "No run training.")
    # The alias names this browser; the cookie and the owner key are never shown.
    st.caption(f"Runs are kept in `{runs_root()}`. You are participant `{alias(session_id())}`"
               + (" · instructor mode" if instructor() else ""))
    instructor_box()

from ui.url_check import unknown_page  # noqa: E402

# st.navigation runs the default page for a path it does not know: say so instead.
# (Only with a browser's URL: a process spawned from a test re-runs this file bare, where
# a Page has no url_path.)
url = st.context.url
missing = url and unknown_page(url, [p.url_path for p in PAGES],
                               st.get_option("server.baseUrlPath"))
if missing:
    st.title("No such page")
    st.error(f"There is no page “/{missing}” in DP Synth Lab (the Playground was not "
             "opened in its place). Pick one of these:", icon=":material/explore_off:")
    for page in PAGES:
        st.page_link(page)
else:
    nav.run()
