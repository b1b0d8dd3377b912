"""Rounds of the Learn page's membership game, kept so a room sees everyone's guesses
(engine/store/db.py GAME_SCHEMA, made on first use). Mixed into `engine.store.runs.RunStore`, which holds the connection (`_con`, `_exec`, `_write`).
"""

from __future__ import annotations

import time

from engine.store import db as store_db


class GameRoundsMixin:
    """Played rounds of the membership game."""

    def add_game_round(self, *, session: str, player: str, epsilon: float | None,
                       delta: float, member: bool, guess: bool, optimal: bool) -> None:
        """One played round (epsilon None = ∞), written once the guess is in."""
        with self._write:
            con = self._con()
            con.execute(store_db.GAME_SCHEMA)
            con.execute("INSERT INTO game_rounds VALUES (?,?,?,?,?,?,?,?)",
                        (session, " ".join(str(player).split())[:40], epsilon, delta,
                         int(member), int(guess), int(optimal), time.time()))
            con.commit()

    def game_rounds(self, *, epsilon: float | None, since: float = 0.0) -> list[dict]:
        """Rounds played at `epsilon` (None = ∞) since `since`, oldest first."""
        con = self._con()
        if not con.execute("SELECT 1 FROM sqlite_master WHERE name='game_rounds'").fetchone():
            return []
        return [dict(r) for r in con.execute(
            "SELECT * FROM game_rounds WHERE epsilon IS ? AND time >= ? ORDER BY time",
            (epsilon, since))]
