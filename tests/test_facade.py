"""The app's one door to the engine (engine/facade): app.py, ui/ and pages/ import the
engine only through it; a Train parses ε and δ once, where the page's text becomes a
RunConfig; the web server loads no data for a Train (its one load is the Playground's
cached preview data). Membership attacks as worker jobs: tests/test_attacks.py."""

import ast
import json
import os
import threading
from pathlib import Path

from apptest import open_app
from conftest import HANG_S
from engine.core import config as config_module
from engine.core.config import RunConfig

ROOT = Path(__file__).resolve().parents[1]
DOOR = "engine.facade"


def _past_the_door(path: Path, root: Path = ROOT) -> list[str]:
    """Engine imports of a file that do not go through the facade (lazy ones too)."""
    wrong = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "engine":  # from engine import x: only the facade itself
                wrong += [f"from engine import {a.name}" for a in node.names if a.name != "facade"]
            elif node.module.startswith("engine.") and not (
                    node.module == DOOR or node.module.startswith(DOOR + ".")):
                wrong.append(f"from {node.module} import ...")
        elif isinstance(node, ast.Import):
            wrong += [f"import {a.name}" for a in node.names
                      if (a.name == "engine" or a.name.startswith("engine."))
                      and not (a.name == DOOR or a.name.startswith(DOOR + "."))]
    return [f"{path.relative_to(root)}: {w}" for w in wrong]


def test_the_door_test_sees_every_kind_of_import(tmp_path):
    f = tmp_path / "page.py"
    f.write_text("import engine.data.catalog\nfrom engine import store\n"
                 "def draw():\n    from engine.jobs.manager import JobManager\n"
                 "    import engine\n"
                 "from engine.facade import RunConfig\nimport engine.facade\n"
                 "from engine import facade\n")
    assert len(_past_the_door(f, tmp_path)) == 4


def test_pages_and_ui_import_the_engine_only_through_the_facade():
    files = [ROOT / "app.py", *ROOT.glob("pages/*.py"), *ROOT.glob("ui/*.py")]
    assert len(files) > 20
    wrong = [w for f in files for w in _past_the_door(f)]
    assert not wrong, "\n".join(wrong)


def _spy_everywhere(monkeypatch, original, spy) -> None:
    """Put `spy` wherever a loaded module holds `original` (a page's `from x import f`
    keeps its own reference; lazy imports later read the defining module's, patched too)."""
    import sys

    for mod in list(sys.modules.values()):
        for name, value in list(getattr(mod, "__dict__", {}).items()):
            if value is original:
                monkeypatch.setattr(mod, name, spy)


def _counting(monkeypatch, original) -> list:
    calls = []

    def spy(*a, **kw):
        calls.append(threading.current_thread().name)
        return original(*a, **kw)

    _spy_everywhere(monkeypatch, original, spy)
    return calls


def test_a_train_parses_epsilon_and_delta_once_per_script_run(runs_root, monkeypatch):
    at = open_app({"dpmerf_n_features": "500", "dpmerf_epochs": "1"})
    assert not at.exception
    eps_calls = _counting(monkeypatch, config_module.parse_epsilon)
    delta_calls = _counting(monkeypatch, config_module.parse_delta)
    at.run()  # a plain redraw of the settings: the preview's config, parsed once
    assert (len(eps_calls), len(delta_calls)) == (1, 1)
    eps_calls.clear(), delta_calls.clear()
    at.button(key="pg_train").click().run()
    assert not at.exception and at.session_state["pg_run"]
    # The click is two script runs (the click's, which submits, then the redraw with the
    # run queued: st.rerun), each building the page's config from its text once. The
    # submission, the queue, the store and the worker parse nothing: the config carries
    # floats (RunConfig.validate checks numbers, from_dict reads stored ones).
    assert (len(eps_calls), len(delta_calls)) == (2, 2)


def test_stored_configs_are_read_and_checked_without_the_parser(monkeypatch):
    def refuse(value):
        raise AssertionError(f"parsed again: {value!r}")

    monkeypatch.setattr(config_module, "parse_epsilon", refuse)
    monkeypatch.setattr(config_module, "parse_delta", refuse)
    for eps in (1.0, float("inf")):
        cfg = RunConfig(epsilon=eps)
        assert RunConfig.from_dict(json.loads(cfg.to_json())).validate() == cfg


def test_the_server_loads_no_data_for_a_train(runs_root, monkeypatch):
    """The loader spied in this process (the web server's: AppTest runs the app here;
    the worker, the trainers and the cost probe are processes of their own)."""
    import streamlit as st

    from engine.data import catalog, user_csv, user_npz

    st.cache_resource.clear()  # the Playground's dataset cache is per server process
    loads = []
    for name, loader in list(catalog.DATASETS.items()):
        def spy(*a, _name=name, _loader=loader, **kw):
            loads.append((_name, os.getpid(), threading.current_thread().name))
            return _loader(*a, **kw)
        monkeypatch.setitem(catalog.DATASETS, name, spy)
    file_loads = [*_counting(monkeypatch, user_csv.load_csv),
                  *_counting(monkeypatch, user_npz.load_npz)]
    at = open_app({"dpmerf_n_features": "500", "dpmerf_epochs": "1"})
    assert not at.exception
    # The Playground's defaults, knob bounds, preview and peek come from the dataset's
    # public shape, read in a child process (engine/data/view.py): nothing here.
    assert loads == [] and file_loads == [], loads
    at.run()
    at.button(key="pg_train").click().run()
    assert not at.exception
    rid = at.session_state["pg_run"]
    from ui.common import _jobs_for

    assert _jobs_for(str(Path(runs_root).resolve())).wait(rid, timeout=HANG_S).terminal
    at.run()
    assert not at.exception
    assert loads == [] and file_loads == [], loads  # the trainer loaded it, in its process
