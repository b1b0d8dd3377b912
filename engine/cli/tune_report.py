"""The end of `python -m engine tune`: the Pareto trials of a two-objective study and the
knob importance by the evaluator asked for, in lines (stderr) and as JSON fields."""

from __future__ import annotations

from typing import Any, Callable


def epsilon_words(spec) -> str:
    """'at ε = 1' or, with ε searched, 'with ε searched in [0.3, 3] (log)'."""
    from engine.runs.study_objectives import searched_epsilon

    knob = searched_epsilon(spec.knobs)
    if knob is None:
        return f"at ε = {spec.base.epsilon:g}"
    return "with ε searched " + knob.words().split(" ", 1)[1] + " (each trial at its own)"


def report(study, res, evaluator: str, say: Callable[[str], None]) -> dict[str, Any]:
    """Say the Pareto trials and the importances; return them for --json."""
    from engine.jobs.study_importance import EVALUATOR_TITLES, importances
    from engine.runs.study_objectives import searched_epsilon

    spec = res.spec
    out: dict[str, Any] = {}
    if spec.second:
        front = res.pareto
        say(f"Pareto front ({spec.objective} against {spec.second}, {len(front)} of "
            f"{len([t for t in res.trials if t.state == 'COMPLETE'])} finished trial(s)): "
            + "; ".join(f"trial {t.number} {t.value:.4f} at {t.second:.4g}" for t in front))
    if searched_epsilon(spec.knobs) is not None:
        say("the trials ran at different ε: a better score at a larger ε was bought with "
            "more privacy, so the best trial is not a like-for-like winner")
    done = len([t for t in res.trials if t.state == "COMPLETE"])
    imp = importances(study, spec, evaluator)
    if imp:
        say(f"knob importance by {EVALUATOR_TITLES[evaluator]}, from {done} finished "
            f"trial(s){' (rough below about 20)' if done < 20 else ''}: "
            + ", ".join(f"{k} {v:.2f}" for k, v in imp.items()))
    out["importance"] = {"evaluator": evaluator, "trials": done, "values": imp}
    return out
