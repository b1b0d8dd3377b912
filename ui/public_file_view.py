"""The Tune page's "your files" box: a participant marks one of their uploads public, so
a study may tune on it for free (engine/store/uploads.mark_public: the uploader only, for
good; engine/runs/public_tuning.py checks it again when the study is built and started).
The words say what marking costs: the records get no privacy protection at all."""

from __future__ import annotations

import streamlit as st

from engine.facade import PUBLIC_DATASETS, InputError, uploads
from ui.common import show_input_error

EXTENSION = {"image": ".npz", "tabular": ".csv"}  # what a stand-in of each kind is read from
WARNING = ("Marking a file public means its records get **no privacy protection**: every "
           "run on it is spent freely and never charged to any budget, and the results of "
           "those runs may show its records as they are. Mark only data that is public "
           "already (published, or yours to give away). It stays public: delete the file "
           "(Playground) to take the mark back.")


def _mark(root, owner: str, path: str) -> None:
    try:
        uploads.mark_public(root, owner, path)
    except InputError as err:  # another participant's file: refused by the engine
        st.session_state["tune_public_error"] = err


def public_files(root, owner: str, kind: str) -> list[str]:
    """Draw the owner's uploads of this kind, each with its "public" checkbox; return the
    paths of those marked public (the ones a study may tune on)."""
    files = [p for p in uploads.files_of(root, owner) if p.suffix == EXTENSION[kind]]
    with st.expander(f"Your uploaded {EXTENSION[kind]} files: mark one public to tune on it "
                     f"({len(files)})"):
        if err := st.session_state.pop("tune_public_error", None):
            show_input_error(err)
        if not files:
            st.caption(f"Upload a {EXTENSION[kind]} file on the Playground first; it is listed "
                       "here, private until you mark it public.")
            return []
        st.caption(WARNING)
        out = []
        for p in files:
            public = uploads.is_public(p)
            st.checkbox(f"**{uploads.display_name(p)}** is public (no privacy protection, "
                        "never charged)", value=public, disabled=public,
                        key=f"tune_public_{p.name}", on_change=_mark, args=(root, owner, str(p)),
                        help=WARNING)
            if public:
                out.append(str(p))
        return out


def kind_file(path: str) -> str:
    """The dataset a public file is read as: "npz" or "csv", by its extension."""
    return path.rsplit(".", 1)[-1].lower()


def stand_in_name(d: str) -> str:
    """A built-in stand-in by its name, a user's file by the name it was uploaded as."""
    return d if d in PUBLIC_DATASETS else f"{uploads.display_name(d)} (your file)"
