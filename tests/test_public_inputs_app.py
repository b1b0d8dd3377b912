"""The Playground states what is treated as public and warns about δ ≥ 1/n (AppTest)."""

from __future__ import annotations


import numpy as np

from apptest import open_app


def test_playground_warns_when_delta_is_not_below_one_over_n(runs_root):
    at = open_app({"dataset": "digits", "method": "dpmerf", "delta": "1e-3"})
    assert not at.exception
    warnings = [w.value for w in at.warning]  # the preview's "warning": a warning box
    assert any("not below 1/n = 1/1,437" in w for w in warnings), warnings
    at = open_app({"dataset": "digits", "method": "dpmerf", "delta": "1e-5"})
    assert not any("1/n" in w.value for w in [*at.warning, *at.caption])


def test_csv_upload_says_what_is_public_and_takes_public_lists(runs_root):
    rng = np.random.default_rng(0)
    rows = "\n".join(f"{rng.normal():.3f},{'rgb'[i % 3]},{'ab'[i % 2]}" for i in range(60))
    at = open_app({"dataset": "csv"})
    at.file_uploader[0].set_value(("f.csv", f"x,colour,y\n{rows}\n".encode(), "text/csv")).run()
    assert not at.exception and not at.error
    assert any("Treated as public" in c.value and "not private" in c.value for c in at.caption)
    at.text_area(key="pg_csv_public_cats").set_value("colour: r, g, b, violet").run()
    at.text_input(key="pg_csv_classes").set_value("a, b, c").run()
    assert not at.exception and not at.error
    at.text_area(key="pg_csv_public_cats").set_value("colour r g").run()
    assert any("one per line" in e.value for e in at.error)


def test_csv_upload_takes_public_kinds_and_bounds(runs_root):
    rng = np.random.default_rng(0)
    rows = "\n".join(f"{rng.normal():.3f},{'rgb'[i % 3]},{'ab'[i % 2]}" for i in range(60))
    at = open_app({"dataset": "csv"})
    at.file_uploader[0].set_value(("f.csv", f"x,colour,y\n{rows}\n".encode(), "text/csv")).run()
    at.text_area(key="pg_csv_schema").set_value('{"x": {"kind": "bounded", "bounds": [-5, 5]}}'
                                                ).run()
    assert not at.exception and not at.error
    at.text_area(key="pg_csv_schema").set_value('{"x": {"kind": "integr"}}').run()
    assert any("unknown kinds" in e.value for e in at.error)
