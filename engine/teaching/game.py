"""The membership game (Learn page, workshops): play the attacker against a real DP release.

The scene: a survey of `PEOPLE` people, one yes/no question; the released statistic is
how many said yes, with Gaussian noise. The target said yes. Each round the game secretly
picks "in" (the target took part) or "out" (the target was *replaced* by someone who said
no — the project's replace-one neighbour relation, so the number of people stays
public). The attacker knows everyone else's answers (the worst case DP covers), so the
two worlds differ by exactly the sensitivity: Δ = 1 for the count.

The release runs through the real mechanism code: `engine.privacy.accountant.calibrate_releases` for
σ at the chosen (ε, δ) and `engine.privacy.noise.gaussian_noise` for the noise. The optimal
attacker is the likelihood-ratio test on the same release (Neyman–Pearson): with
Gaussian noise it says "in" when the count exceeds the known others' count by more than
Δ/2, which lands on the mechanism's own curve at its maximum-advantage point,
(FPR, TPR) = (Φ(−μ/2), Φ(μ/2)), μ = Δ/σ. At ε = ∞ (σ = 0) it wins every round.

Privacy assumption: none is claimed for real people — the survey is made up; the game
shows what the mechanism's ε allows, and its points must stay inside `engine.privacy.risk`'s bound
(within their Clopper–Pearson intervals).
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np

from engine.privacy import accountant as privacy
from engine.privacy import risk
from engine.privacy.audit_stats import clopper_pearson_upper
from engine.core.errors import InputError

PEOPLE = 20              # the target plus 19 others whose answers the attacker knows
SENSITIVITY = 1.0        # replace-one: a "yes" replaced by a "no" moves the count by 1
GAME_DELTA = 1e-5        # the δ every game is played at (well below 1/PEOPLE)
CONFIDENCE = 0.95        # two-sided Clopper–Pearson intervals on FPR and TPR, as drawn
FLAG_CONFIDENCE = 0.999  # a point is called outside its bound only beyond this interval


@lru_cache(maxsize=64)
def _report(epsilon: float, delta: float) -> dict:
    return privacy.calibrate_releases(
        epsilon=epsilon, delta=delta,
        releases=[privacy.Release("count of yes answers", SENSITIVITY)]).to_dict()


@dataclass(frozen=True)
class Game:
    """One game's mechanism: the calibrated release and the curves it must stay under."""

    epsilon: float
    delta: float = GAME_DELTA

    def __post_init__(self):
        if not self.epsilon > 0:
            raise InputError(f"epsilon must be > 0 (or inf). Got {self.epsilon!r}.")

    @property
    def report(self) -> dict:
        """The accountant's privacy report for the count (the one methods write)."""
        return _report(float(self.epsilon), float(self.delta))

    @property
    def sigma(self) -> float:
        return float(self.report["releases"][0]["sigma"])

    @property
    def curve(self) -> risk.Tradeoff:
        """The mechanism's own (Gaussian) curve, μ from the accountant."""
        return risk.for_report(self.report)

    @property
    def bound(self) -> risk.Tradeoff:
        """The (ε, δ) bound any mechanism with this claim stays under."""
        return risk.for_epsilon(self.epsilon, self.delta)

    def deal(self, n: int = 1) -> Rounds:
        """n fresh rounds: secret memberships, the others' known answers, the releases."""
        member = np.array([secrets.randbelow(2) == 1 for _ in range(n)], dtype=bool)
        # The others' answers are the scene, not DP noise: any source will do.
        others = np.random.default_rng(secrets.randbits(63)).binomial(PEOPLE - 1, 0.5, size=n)
        count = others + member  # in: the target's "yes" counts; out: its stand-in's "no"
        from engine.privacy.noise import gaussian_noise  # torch: only when a game is played

        noise = np.asarray(gaussian_noise((n,), self.sigma), dtype=float)
        return Rounds(member=member, others=others, release=count + noise)


@dataclass(frozen=True)
class Rounds:
    """Dealt rounds (arrays of one length). `member` is the secret; the player sees
    `others` (the count without the target) and `release` (the noisy count)."""

    member: np.ndarray
    others: np.ndarray
    release: np.ndarray

    def optimal_guess(self) -> np.ndarray:
        """The likelihood-ratio test: "in" when the release sits nearer others + Δ."""
        return self.release - self.others > SENSITIVITY / 2


@dataclass(frozen=True)
class Point:
    """An attacker's (FPR, TPR) over played rounds, with two-sided Clopper–Pearson
    intervals at `confidence`."""

    tp: int
    fp: int
    rounds_in: int
    rounds_out: int
    confidence: float = CONFIDENCE

    @property
    def fpr(self) -> float:
        return self.fp / self.rounds_out

    @property
    def tpr(self) -> float:
        return self.tp / self.rounds_in

    @property
    def fpr_ci(self) -> tuple[float, float]:
        return _interval(self.fp, self.rounds_out, self.confidence)

    @property
    def tpr_ci(self) -> tuple[float, float]:
        return _interval(self.tp, self.rounds_in, self.confidence)

    def inside(self, curve: risk.Tradeoff, *, confidence: float = FLAG_CONFIDENCE) -> bool:
        """Whether some point of the interval box (at `confidence`, stricter than the
        drawn one so that a chance excursion is not called a bug) lies on or under the
        curve: a point above the bound beyond its interval is a bug in the mechanism or
        the accounting."""
        fpr_hi = _interval(self.fp, self.rounds_out, confidence)[1]
        tpr_lo = _interval(self.tp, self.rounds_in, confidence)[0]
        return tpr_lo <= float(curve.tpr(fpr_hi)) + 1e-12


def _interval(k: int, n: int, confidence: float) -> tuple[float, float]:
    a = (1 - confidence) / 2
    return 1.0 - clopper_pearson_upper(n - k, n, a), clopper_pearson_upper(k, n, a)


def point(member, guess, *, confidence: float = CONFIDENCE) -> Point | None:
    """The (FPR, TPR) of `guess` against the truth; None until both kinds were played."""
    member, guess = np.asarray(member, dtype=bool), np.asarray(guess, dtype=bool)
    n_in, n_out = int(member.sum()), int((~member).sum())
    if n_in == 0 or n_out == 0:
        return None
    return Point(int((guess & member).sum()), int((guess & ~member).sum()), n_in, n_out,
                 confidence)


def simulate(epsilon: float, rounds: int, *, delta: float = GAME_DELTA,
             confidence: float = CONFIDENCE) -> Point | None:
    """The optimal attacker's point over `rounds` fresh rounds (tests, the CLI)."""
    dealt = Game(epsilon, delta).deal(rounds)
    return point(dealt.member, dealt.optimal_guess(), confidence=confidence)


def room(rows: list[dict], alias: Callable[[str], str] | None = None) -> dict:
    """The room view's numbers from stored rounds (`RunStore.game_rounds`): each
    session's point, and the optimal attacker's over every round played.

    A player is named by the name they chose, else by `alias(session)` (a short public
    name, engine/identity.alias), else "player N". The stored session (an owner key) is
    never part of the result: what a room view shows must not identify a browser."""
    by_session: dict[str, list[dict]] = {}
    for r in rows:
        by_session.setdefault(r["session"], []).append(r)
    players = []
    for i, (session, rs) in enumerate(by_session.items()):
        p = point([r["member"] for r in rs], [r["guess"] for r in rs])
        tag = alias(session) if alias is not None else f"player {i + 1}"
        players.append({"tag": tag, "player": rs[-1]["player"] or f"anonymous {tag}",
                        "rounds": len(rs), "point": p})
    return {"players": players,
            "optimal": point([r["member"] for r in rows], [r["optimal"] for r in rows]),
            "rounds": len(rows)}


def epsilon_key(epsilon: float) -> float | None:
    """ε as the store keeps it: NULL for ∞, as the runs table does."""
    return None if math.isinf(epsilon) else float(epsilon)
