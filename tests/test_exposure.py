"""Exposure: what the app shows and keeps, and to whom.

- the server binds to localhost unless the user opts in (.streamlit/config.toml);
- uploads live in their owner's folder of the run store, outliving the tab (issue 43);
- sample views and artifacts hold generator output only: no synthetic record equals a
  training record;
- every view of real records is labelled as real data, not private.
"""

from __future__ import annotations

import gc
import re
import threading
import tomllib
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

from engine.core.config import RunConfig
from engine.data.catalog import load
from engine.runs.runner import execute

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")


def test_server_binds_to_localhost_by_default():
    cfg = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert cfg["server"]["address"] in ("localhost", "127.0.0.1")
    assert cfg["browser"]["gatherUsageStats"] is False


def _csv_bytes() -> bytes:
    rng = np.random.default_rng(0)
    rows = [f"{v:.3f},{2 * v + rng.normal():.3f},{'yes' if v > 0 else 'no'}"
            for v in rng.normal(size=60)]
    return ("a,b,label\n" + "\n".join(rows) + "\n").encode()


def test_uploads_live_in_the_owners_folder_of_the_store_and_outlive_the_session(runs_root):
    from engine.core import identity
    from engine.store import uploads

    folders = []
    for _ in range(2):  # two sessions, two participants
        at = AppTest.from_file(APP, default_timeout=60)
        at.query_params["dataset"] = "csv"
        at.run()
        at.file_uploader[0].set_value(("mine.csv", _csv_bytes(), "text/csv")).run()
        assert not at.exception and not at.error
        owner = identity.owner_key(runs_root, at.session_state["owner_session"])
        files = uploads.files_of(runs_root, owner)
        assert len(files) == 1 and files[0].read_bytes() == _csv_bytes()
        d = files[0].parent
        assert d.resolve().is_relative_to((runs_root / "uploads").resolve())
        assert not d.resolve().is_relative_to(ROOT.resolve())  # never in the repo
        # The folder name is neither the cookie nor the owner key.
        assert at.session_state["owner_session"] not in str(d) and owner not in str(d)
        assert oct(d.stat().st_mode & 0o777) == oct(0o700)
        folders.append(files[0])
        del at, files
    assert folders[0].parent != folders[1].parent  # one folder per participant
    gc.collect()
    # The sessions are gone; their files stay for the runs that may use them (attacks,
    # reruns) until the owner deletes them or their last run (tests/test_identity.py).
    assert all(f.exists() for f in folders)


def test_synthetic_outputs_contain_no_training_record(tmp_path):
    data = load("digits")
    cfg = RunConfig(dataset="digits", device="cpu", n_synthetic=300,
                    params={"n_features": 200, "epochs": 1, "batch_size": 100,
                            "sample_every": 5})
    samples = []
    for ev in execute(cfg, tmp_path, stop=threading.Event(), full_eval=False):
        if ev.samples is not None:
            samples.append(np.asarray(ev.samples[0]))
    assert samples, "no live samples were shown"
    with np.load(tmp_path / "synthetic.npz") as z:
        outputs = samples + [z["x"]]
    train = data.x_train.reshape(len(data.x_train), -1).astype(np.float32)
    for x in outputs:
        flat = x.reshape(len(x), -1).astype(np.float32)
        # exact equality with any training image, row by row
        eq = (flat[:, None, :] == train[None, :, :]).all(-1)
        assert not eq.any()
        # and not a near copy either (8x8 digits in [0,1]: real pairs are ≥ ~0.1 apart)
        d2 = ((flat[:, None, :] - train[None, :, :]) ** 2).sum(-1)
        assert d2.min() > 1e-6
    assert (tmp_path / "samples.png").exists()


REAL_VIEW = re.compile(r"x_train\[|y_train\[")


def test_every_real_data_view_in_the_pages_is_labelled_real():
    """Grep: each page line that shows training records sits next to REAL_NOTE."""
    for page in sorted([*(ROOT / "pages").glob("*.py"), *(ROOT / "ui").glob("*.py")]):
        lines = page.read_text().splitlines()
        for i, line in enumerate(lines):
            if REAL_VIEW.search(line) and ("st.image" in line or "marginal_bins" in line
                                           or "st.dataframe" in line or "st.table" in line):
                window = "\n".join(lines[max(0, i - 3): i + 12])
                assert "REAL_NOTE" in window, f"{page.name}:{i + 1} shows real records unlabelled"
    from ui.common import REAL_NOTE

    assert "real" in REAL_NOTE and "not private" in REAL_NOTE


def test_playground_peek_at_training_data_is_labelled(runs_root):
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    peek = [e for e in at.expander if "training data" in e.label]
    assert len(peek) == 1 and "real data — not private" in peek[0].label
    # the image inside it carries the label too, in its caption
    images = [c for c in peek[0].children.values() if type(c).__name__ == "Image"]
    assert images and all("real data — not private" in str(im.proto) for im in images)
