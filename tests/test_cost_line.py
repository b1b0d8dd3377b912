"""The Playground's cost line: figures from the method's preview, and a long run's warning
naming the knobs the method itself says make it faster (DataLens has no epochs)."""

from streamlit.testing.v1 import AppTest


def _draw(preview: dict) -> AppTest:
    def script(preview):
        from ui.cost import draw_cost

        draw_cost(preview)
    return AppTest.from_function(script, args=(preview,)).run()


def test_a_long_run_warns_with_the_methods_own_knobs():
    at = _draw({"estimated seconds": 1141.0, "estimated s / iteration": 7.6,
                "faster with": "fewer teachers, or a lower max_steps (fewer iterations)"})
    (warning,) = at.warning
    assert "19 min" in warning.value and "fewer teachers" in warning.value
    assert "epochs" not in warning.value  # DP-MERF's knob, not DataLens's


def test_a_short_run_has_no_warning():
    at = _draw({"estimated seconds": 12.0, "estimated s / step": 0.05})
    assert not at.warning and "12 s" in at.markdown[0].value


def test_both_methods_name_their_own_faster_knobs(digits):
    from engine.config import RunConfig
    from engine.registry import get_method, make_params

    for method, knob in (("dpmerf", "epochs"), ("datalens", "teachers")):
        config = RunConfig(method=method, dataset="digits")
        preview = get_method(method).privacy_preview(
            config, make_params(method, digits, config.params), digits)
        assert knob in preview["faster with"]
