"""Open the real app in Streamlit's AppTest (same process, no browser)."""

from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[1] / "app.py")


def open_app(query: dict | None = None) -> AppTest:
    """The app after its first run, with `query` as the URL's settings."""
    at = AppTest.from_file(APP, default_timeout=60)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    return at.run()
