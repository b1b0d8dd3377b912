"""`python -m engine risk`: what an ε means, printed (engine/privacy/risk.py's bound and its
figures), and with --game the membership game played at that ε (engine/teaching/game.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from engine.teaching import game
from engine.core.errors import InputError
from engine.core.jsonsafe import dumps
from engine.privacy.risk import eps_text, for_epsilon, for_gaussian, for_report, in_words, summary


def figures_for(*, epsilon: float | None = None, delta: float = 0.0, mu: float | None = None,
                run_dir=None, prior: float = 0.01) -> dict:
    """What `python -m engine risk` prints: the curve's description and its figures."""
    if run_dir is not None:
        path = Path(run_dir) / "metrics.json"
        if not path.is_file():
            raise InputError(f"no metrics.json in {run_dir}: is it a finished run's folder?")
        t = for_report(json.loads(path.read_text()).get("privacy"))
    elif mu is not None:
        t = for_gaussian(mu, epsilon=math.nan if epsilon is None else epsilon, delta=delta)
    elif epsilon is not None:
        t = for_epsilon(epsilon, delta)
    else:
        raise InputError("give --epsilon (with --delta), --mu, or --run RUN_DIR.")
    return {"epsilon": t.epsilon, "delta": t.delta, "mu": t.mu, "curve": t.source,
            **summary(t, prior=prior)}


def main(args) -> int:
    """`python -m engine risk`: print the bound's figures (three decimals) or --json."""
    def num(text, what):
        if text is None:
            return None
        try:
            return float(text)
        except ValueError:
            raise InputError(f"{what} must be a number. Got {text!r}.") from None

    out = figures_for(epsilon=num(args.epsilon, "--epsilon"), delta=num(args.delta, "--delta"),
                      mu=num(args.mu, "--mu"), run_dir=args.run,
                      prior=num(args.prior, "--prior"))
    if args.game:
        out["game"] = _game(out, int(args.game))
    if args.json:
        print(dumps(out))
        return 0
    print(f"curve: {out['curve']}")
    if not math.isnan(out["epsilon"]):
        print(f"  {in_words(out['epsilon'], out['delta'])}")
    for key in ("max advantage", "best accuracy", "TPR at 1% FPR", "TPR at 0.1% FPR"):
        print(f"  {key:18s} {out[key]:.3f}")
    print(f"  {'posterior':18s} {out['posterior']:.3f}  (from a prior of {out['prior']:g})")
    if g := out.get("game"):
        print(f"membership game, {g['rounds']:,} rounds at ε = {eps_text(g['epsilon'])}, "
              f"δ = {g['delta']:g} (noisy count, Δ = 1, σ = {g['sigma']:.4g}):")
        print(f"  optimal attacker   FPR {g['fpr']:.3f} [{g['fpr_ci'][0]:.3f}, "
              f"{g['fpr_ci'][1]:.3f}], TPR {g['tpr']:.3f} [{g['tpr_ci'][0]:.3f}, "
              f"{g['tpr_ci'][1]:.3f}] (95 % Clopper–Pearson)")
        print(f"  at that FPR: the mechanism's curve allows TPR {g['curve_tpr']:.3f}, "
              f"the (ε, δ) bound {g['bound_tpr']:.3f}; inside both: "
              f"{'yes' if g['inside'] else 'NO - a bug in the mechanism or the accounting'}")
    return 0


def _game(out: dict, rounds: int) -> dict:
    """`--game ROUNDS`: the membership game's optimal attacker at the given ε."""
    if rounds < 2 or math.isnan(out["epsilon"]):
        raise InputError("--game needs --epsilon and at least 2 rounds.")
    delta = out["delta"] if out["delta"] > 0 else game.GAME_DELTA  # a Gaussian needs δ > 0
    g = game.Game(out["epsilon"], delta)
    p = game.simulate(out["epsilon"], rounds, delta=delta)
    if p is None:
        raise InputError("every round dealt the same membership; play more rounds.")
    return {"rounds": rounds, "epsilon": g.epsilon, "delta": delta, "sigma": g.sigma,
            "fpr": p.fpr, "tpr": p.tpr, "fpr_ci": list(p.fpr_ci), "tpr_ci": list(p.tpr_ci),
            "curve_tpr": float(g.curve.tpr(p.fpr)), "bound_tpr": float(g.bound.tpr(p.fpr)),
            "inside": p.inside(g.curve) and p.inside(g.bound)}
