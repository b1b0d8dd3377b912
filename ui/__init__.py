"""Shared UI helpers for the pages (Streamlit widgets and cached handles); not pages."""
