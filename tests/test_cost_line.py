"""The Playground's cost line: figures from the method's preview, and a long run's warning
naming the knobs the method itself says make it faster (DataLens has no epochs)."""

import pytest
from streamlit.testing.v1 import AppTest

from engine.methods.preview import MEASURING, Cost, cost_line

# what these tests measure is measured here, cold (tests/conftest.py: cold_cache)
pytestmark = pytest.mark.usefixtures("cold_cache")


def _draw(cost: Cost) -> AppTest:
    def script(cost):
        from ui.cost import draw_cost

        draw_cost(cost)
    return AppTest.from_function(script, args=(cost,)).run()


def test_a_long_run_warns_with_the_methods_own_knobs():
    at = _draw(Cost(seconds=1141.0, per_step_s=7.6, unit="iteration",
                    faster_with="fewer teachers, or a lower max_steps (fewer iterations)"))
    (warning,) = at.warning
    assert "19 min" in warning.value and "fewer teachers" in warning.value
    assert "epochs" not in warning.value  # DP-MERF's knob, not DataLens's


def test_a_short_run_has_no_warning():
    at = _draw(Cost(seconds=12.0, per_step_s=0.05))
    assert not at.warning and "12 s" in at.markdown[0].value and "50 ms each" in at.markdown[0].value


def test_a_cost_being_measured_says_so_and_names_no_time():
    cost = Cost(basis=MEASURING, steps=240, memory_gb=1.7)
    assert cost.measuring
    line = cost_line(cost)
    assert MEASURING in line and "240 steps" in line and "1.7 GB" in line and " s " not in line
    at = _draw(cost)
    assert not at.warning and MEASURING in at.markdown[0].value


def test_both_methods_name_their_own_faster_knobs(digits):
    from engine.core.config import RunConfig

    from engine.runs.runner import preview

    for method, knob in (("dpmerf", "epochs"), ("datalens", "teachers")):
        assert knob in preview(RunConfig(method=method, dataset="digits"), digits).cost.faster_with
