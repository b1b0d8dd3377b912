"""The privacy budget ledger: what every run has spent on each dataset, composed exactly.

Every run on the same records spends budget; a run's own ε says nothing about the runs
before it. The ledger keeps one row per run that touched a dataset (in the run store's
runs.db, tables `ledger_charges` and `ledger_caps`, engine/store/db.py) and composes
them with the accountant (engine/privacy/accountant.py).

* **Identity.** A dataset is its records: a built-in name (digits, breast_cancer, ...),
  or the SHA-256 of a user's CSV / NPZ file. The 80/20 split is drawn from the run's
  seed, so different seeds train on different but overlapping parts of the same file;
  a record can be in every one of them, so the ledger charges the file as a whole.
  Built-in datasets are public; they are treated as if private, for teaching.
* **Composition.** Every release in this project is a Gaussian mechanism, and Gaussian
  mechanisms compose exactly (Gaussian DP: μ² = Σ count·(Δ/σ)²) into one Gaussian
  mechanism, whatever the order or adaptivity. The total is that mechanism's ε at the
  ledger's δ (`privacy.composed_epsilon` over (noise multiplier, count) pairs), never
  a sum of ε's. A run without noise (ε = ∞) makes the total ∞.
* **The ledger's δ.** The composed mechanism has a whole (ε, δ) curve; the ledger
  reports ε at one δ: the one its data owner set with the cap, else `DEFAULT_DELTA`.
  That is an exact statement about the composition, not a sum of the runs' δ's.
* **When.** A run is charged when it starts using the data (`book`, before training):
  with the noise its target (ε, δ) implies — the largest the accountant allows, so the
  charge is an upper bound for every method — and its actual releases replace that
  when it ends (`settle`). A run that is killed keeps its planned charge. Deleting a
  run does not touch the ledger.
* **Caps.** A data owner (an instructor in the app) may cap a dataset's total; a run that
  would pass it is refused before its data is read (`check`, called by runner.prepare
  and the app's submit path), and again atomically when it is charged.
* **Gallery runs** (engine/runs/gallery.py) are not charged to a store they are imported
  into: their releases were made once, when the gallery was built, and charged to the
  ledger of the store that built them (`python -m engine gallery` runs through the
  runner like any command-line run).

Privacy assumption: each listed release is a Gaussian mechanism with the stated L2
sensitivity (tests/test_sensitivity*.py), and no run touches the records outside the
runner (the ledger cannot see code that bypasses it).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sqlite3
import time
import uuid
from contextlib import closing
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from engine.store import db as store_db
from engine.store import uploads
from engine.core.config import FILE_DATASETS, PUBLIC_DATASETS, SAME_RECORDS, RunConfig
from engine.core.errors import InputError
from engine.core.jsonsafe import dumps, jsonable
# The pure accounting (what a run is charged, how rows compose) lives in ledger_math.
from engine.privacy.charges import (INFINITE_WORDS, Mechanisms, compose_rows,  # noqa: F401
                                   epsilon_words, from_releases, planned, planned_row,
                                   search_row, total_epsilon)

DEFAULT_DELTA = 1e-5
PUBLIC_NOTE = "public data, treated as private for teaching"


# ------------------------------------------------------------------ what is charged


@dataclass(frozen=True)
class DatasetId:
    key: str  # "digits", "csv:1f2e3d4c5b6a7988"
    label: str  # in words
    public: bool  # a built-in public dataset (treated as private)


@lru_cache(maxsize=64)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:  # the bytes are hashed, never parsed or released
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def dataset_id(config: RunConfig) -> DatasetId | None:
    """The records a run touches; None when its file cannot be read (the loader then
    refuses the run with its own message) or its records are declared public
    (PUBLIC_DATASETS, or an upload its owner marked public: no charge, no cap).
    digits_private is charged as digits: its records are half of digits' (SAME_RECORDS)."""
    if declared_public(config):
        return None  # declared public: nothing to charge, nothing to cap
    if config.dataset not in FILE_DATASETS:
        key = SAME_RECORDS.get(config.dataset, config.dataset)
        return DatasetId(key, f"{key} ({PUBLIC_NOTE})", True)
    path = Path(str((config.data_options or {}).get("path", "")))
    try:
        st = path.stat()
        digest = _sha256(str(path.resolve()), st.st_size, st.st_mtime_ns)
    except OSError:
        return None
    name = re.sub(r"^[0-9a-f]{12}-", "", path.name)  # the Playground's upload prefix
    return DatasetId(f"{config.dataset}:{digest[:16]}",
                     f"{name} ({config.dataset} file, sha256 {digest[:12]})", False)


def declared_public(config: RunConfig) -> bool:
    """Are the run's records declared public: a built-in stand-in (PUBLIC_DATASETS), or
    a user's file its uploader marked public (engine/store/uploads.mark_public)?"""
    if config.dataset in PUBLIC_DATASETS:
        return True
    return config.dataset in FILE_DATASETS and \
        uploads.is_public((config.data_options or {}).get("path"))


# ------------------------------------------------------------------------- the ledger


@dataclass(frozen=True)
class Forecast:
    """A dataset's ledger now and with one more run (what the Playground shows)."""

    dataset: DatasetId
    delta: float
    runs: int
    spent: float
    after: float
    cap: float | None

    @property
    def refused(self) -> str | None:
        if self.cap is None or self.after <= self.cap * (1 + 1e-9):
            return None
        return (f"Refused before reading the data: {self.dataset.label} has spent "
                f"ε = {epsilon_words(self.spent)} over {self.runs} run(s) and this run would "
                f"bring it to ε = {epsilon_words(self.after)} (at δ = {self.delta:g}), past "
                f"its cap of {self.cap:g} set by the data owner.")

    def words(self) -> str:
        head = (f"{self.dataset.label}: spent ε = {epsilon_words(self.spent)} over "
                f"{self.runs} run(s) (at δ = {self.delta:g}); this run brings it to "
                f"ε = {epsilon_words(self.after)}")
        if self.cap is not None:
            head += f" of its cap {self.cap:g}"
        if math.isinf(self.spent):
            head += f". ε = ∞: {INFINITE_WORDS}"
        elif math.isinf(self.after):
            head += ". This run adds no noise, so afterwards the records have no guarantee"
        return head + "."


class Ledger:
    """The ledger of one run store (its runs.db); every method opens its own short
    connection, so threads and processes may share it."""

    def __init__(self, root: str | Path | None = None) -> None:
        from engine.store.runs import default_root

        self.root = Path(root) if root is not None else default_root()
        self.root.mkdir(parents=True, exist_ok=True)
        self.db_path = self.root / "runs.db"

    def _con(self) -> sqlite3.Connection:
        con = store_db.connect(self.db_path)
        con.executescript(store_db.LEDGER_SCHEMA)
        if "search" not in {r[1] for r in con.execute("PRAGMA table_info(ledger_charges)")}:
            con.execute("ALTER TABLE ledger_charges ADD COLUMN search TEXT")  # an early ledger
        return con

    # ------------------------------------------------------------------ reads
    def _delta(self, con, key: str) -> tuple[float, float | None]:
        row = con.execute("SELECT cap, delta FROM ledger_caps WHERE dataset=?", (key,)).fetchone()
        return (row["delta"], row["cap"]) if row else (DEFAULT_DELTA, None)

    def _rows(self, con, key: str | None = None) -> list[sqlite3.Row]:
        if key is None:
            return con.execute("SELECT * FROM ledger_charges ORDER BY created").fetchall()
        return con.execute("SELECT * FROM ledger_charges WHERE dataset=? ORDER BY created",
                           (key,)).fetchall()

    def _forecast(self, con, ds: DatasetId, more: list[dict]) -> Forecast:
        delta, cap = self._delta(con, ds.key)
        rows = [dict(r) for r in self._rows(con, ds.key)]
        return Forecast(ds, delta, len(rows), compose_rows(rows, delta=delta),
                        compose_rows(rows + more, delta=delta), cap)

    def forecast(self, config: RunConfig, *, pending: Iterable[RunConfig] = ()) -> Forecast | None:
        """This dataset's total now and after `config` (and `pending`: runs queued, or
        claimed but not yet charged, on the same records: Ledger.uncharged); None when the
        dataset cannot be identified."""
        ds = dataset_id(config)
        if ds is None:
            return None
        more = [planned_row(c) for c in (config, *pending) if dataset_id(c) == ds]
        with closing(self._con()) as con:
            return self._forecast(con, ds, more)

    def uncharged(self, runs: Iterable[Any]) -> list[RunConfig]:
        """The configs of `runs` (a store's queued and running records) that have no charge
        booked yet. A run books its charge when its trainer starts, a moment after the
        worker claims it; counted as pending until then, it is never missed by a cap
        check made in between (the check at booking refuses it anyway: this is so the
        refusal comes at submit, where a user or a study can act on it)."""
        with closing(self._con()) as con:
            booked = {r[0] for r in con.execute("SELECT run_id FROM ledger_charges")}
        return [r.config for r in runs if r.run_id not in booked]

    def check(self, config: RunConfig, *, pending: Iterable[RunConfig] = ()) -> None:
        """Refuse (InputError, one line) a run that would take its dataset past its cap.
        Reads the file's bytes for its fingerprint only; loads no data."""
        f = self.forecast(config, pending=pending)
        if f is not None and f.refused:
            raise InputError(f.refused)

    def over_cap(self, key: str) -> str | None:
        """A sentence when `key`'s cap is below what it has already spent (set that way
        by an instructor): every new run on it is refused; reusing finished runs is not."""
        for d in self.datasets():
            if d["dataset"] == key and d["cap"] is not None \
                    and d["epsilon"] > d["cap"] * (1 + 1e-9):
                return (f"The cap {d['cap']:g} is below what {d['label']} has already spent "
                        f"(ε = {epsilon_words(d['epsilon'])} at δ = {d['delta']:g}): every new "
                        "run on it is refused from now on. Train still hands back a finished "
                        "run asked for with exactly the same settings, at no cost.")
        return None

    def datasets(self) -> list[dict[str, Any]]:
        """Every dataset on the ledger with its runs, total ε at its δ, and cap."""
        with closing(self._con()) as con:
            rows = self._rows(con)
            caps = {r["dataset"]: r for r in con.execute("SELECT * FROM ledger_caps")}
            out = []
            for key in sorted({r["dataset"] for r in rows} | set(caps)):
                mine = [r for r in rows if r["dataset"] == key]
                delta, cap = self._delta(con, key)
                eps = compose_rows(mine, delta=delta)
                public = bool(mine[0]["public"]) if mine else ":" not in key
                label = mine[0]["label"] if mine else (f"{key} ({PUBLIC_NOTE})" if public else key)
                out.append({
                    "dataset": key, "label": label, "public_treated_as_private": public,
                    "delta": delta, "epsilon": eps, "cap": cap,
                    "in_words": INFINITE_WORDS if math.isinf(eps) else None,
                    "sweeps": _sweeps(mine, delta),
                    "runs": [_run_row(r) for r in mine]})
            return out

    # ----------------------------------------------------------------- writes
    def book(self, config: RunConfig, *, run_id: str, source: str, sweep: str | None = None,
             charge_id: str | None = None, search: dict | None = None) -> str | None:
        """Charge a run that is about to use its data, with its planned mechanism;
        refused (InputError) past the cap. Check and insert are one transaction, so two
        runs starting together cannot both slip under it. Returns the charge id.

        A private search (`search`: {"candidate": [[z, n], ...], "mean", "shape"}) starts
        with no candidate charged; `add_candidate` charges each one as it starts."""
        ds = dataset_id(config)
        if ds is None:
            return None
        charge_id = charge_id or run_id
        mechs = () if search else planned(config)
        more = [search_row(search)] if search else [planned_row(config)]
        with closing(self._con()) as con:
            con.execute("BEGIN IMMEDIATE")
            try:
                f = self._forecast(con, ds, more)
                if f.refused:
                    raise InputError(f.refused)
                con.execute(
                    "INSERT OR REPLACE INTO ledger_charges (id, dataset, label, public, run_id, "
                    "source, sweep, method, epsilon, delta, state, mechanisms, search, created) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (charge_id, ds.key, ds.label, int(ds.public), run_id, source, sweep,
                     config.method, config.epsilon if config.private else None, config.delta,
                     "planned", dumps([list(m) for m in mechs]),
                     dumps(search) if search else None, time.time()))
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
        return charge_id

    def add_candidate(self, charge_id: str) -> int:
        """A private search starts one more candidate: charge it (in full, until the
        search's own bound is the smaller). Returns how many have started."""
        with closing(self._con()) as con:
            con.execute("BEGIN IMMEDIATE")
            row = con.execute("SELECT mechanisms, search FROM ledger_charges WHERE id=?",
                              (charge_id,)).fetchone()
            mechs = json.loads(row["mechanisms"]) + json.loads(row["search"])["candidate"]
            con.execute("UPDATE ledger_charges SET mechanisms=? WHERE id=?",
                        (dumps(mechs), charge_id))
            con.execute("COMMIT")
        return len(mechs) // max(1, len(json.loads(row["search"])["candidate"]))

    def settle(self, charge_id: str, report: dict) -> None:
        """Replace a run's planned charge by its actual releases (privacy report)."""
        mechs = from_releases(report)
        if mechs is None:
            return
        with closing(self._con()) as con:
            con.execute("UPDATE ledger_charges SET state='final', mechanisms=?, settled=? "
                        "WHERE id=?", (dumps([list(m) for m in mechs]), time.time(),
                                       charge_id))
            con.commit()

    def summary_for(self, charge_id: str) -> dict[str, Any]:
        """For metrics.json: the dataset's ledger total including this run."""
        with closing(self._con()) as con:
            row = con.execute("SELECT * FROM ledger_charges WHERE id=?", (charge_id,)).fetchone()
            if row is None:
                return {}
            ds = DatasetId(row["dataset"], row["label"], bool(row["public"]))
            f = self._forecast(con, ds, [])
        return jsonable({"dataset": ds.key, "label": ds.label, "delta": f.delta,
                         "epsilon_total": f.spent, "runs": f.runs, "cap": f.cap,
                         "note": "total over every run on these records, composed exactly "
                                 "(Gaussian DP) at the ledger's delta"
                                 + (f"; {INFINITE_WORDS}" if math.isinf(f.spent) else "")})

    def set_cap(self, key: str, cap: float | None, *, delta: float | None = None,
                by: str = "") -> str:
        """Set (or with cap=None clear) a dataset's cap, and its ledger δ. `key` is a
        dataset key or an unambiguous prefix of one already on the ledger."""
        key = self.resolve(key)
        if cap is not None and not (cap > 0):
            raise InputError(f"a cap must be a number > 0 (or 'none'). Got {cap!r}.")
        if delta is not None and not 0 < delta < 1:
            raise InputError(f"the ledger's delta must be in (0, 1). Got {delta!r}.")
        with closing(self._con()) as con:
            old_delta, _ = self._delta(con, key)
            con.execute("INSERT OR REPLACE INTO ledger_caps VALUES (?,?,?,?,?)",
                        (key, cap, delta if delta is not None else old_delta, by, time.time()))
            con.commit()
        return key

    def resolve(self, text: str) -> str:
        text = text.strip()
        if not text:
            raise InputError("name a dataset, e.g. digits or csv:1f2e3d4c.")
        with closing(self._con()) as con:
            keys = {r[0] for r in con.execute("SELECT DISTINCT dataset FROM ledger_charges")}
        if text in keys or ":" not in text:
            return text
        hits = sorted(k for k in keys if k.startswith(text))
        if len(hits) != 1:
            raise InputError(f"{text!r} matches {len(hits)} datasets on the ledger; give more "
                             "of its fingerprint (python -m engine ledger lists them).")
        return hits[0]


def _run_row(r: sqlite3.Row) -> dict[str, Any]:
    mechs = [tuple(m) for m in json.loads(r["mechanisms"])]
    return {"charge": r["id"], "run_id": r["run_id"], "source": r["source"],
            "sweep": r["sweep"], "method": r["method"],
            "epsilon_target": math.inf if r["epsilon"] is None else r["epsilon"],
            "delta": r["delta"], "state": r["state"],
            "mechanisms": [list(m) for m in mechs], "created": r["created"],
            "search": json.loads(r["search"]) if r["search"] else None}


def _sweeps(rows: list[sqlite3.Row], delta: float) -> list[dict[str, Any]]:
    """Per sweep: its runs and their composed ε at the ledger's δ."""
    out = []
    for name in sorted({r["sweep"] for r in rows if r["sweep"]}):
        mine = [r for r in rows if r["sweep"] == name]
        out.append({"sweep": name, "runs": len(mine), "epsilon": compose_rows(mine, delta=delta)})
    return out


# ----------------------------------------------------------------- the runner's side


def root_for(out_dir: str | Path) -> Path | None:
    """The run store an output folder belongs to: a run's folder inside a store (the
    app's jobs) is charged there; any other folder (the CLI's --out) to the default
    store ($DPSYNTH_RUNS / $DPSYNTH_HOME), so both land on the same ledger."""
    out = Path(out_dir).resolve()
    return out.parent if (out.parent / "runs.db").exists() else None


def sweep_of(root: Path, run_id: str) -> str | None:
    """The sweep of a run in the store at `root` (None: no such run, or no sweep)."""
    with closing(store_db.connect(Path(root) / "runs.db")) as con:
        row = con.execute("SELECT sweep FROM runs WHERE id=?", (run_id,)).fetchone()
    return row["sweep"] if row is not None else None


def book_run(config: RunConfig, out_dir: str | Path) -> tuple[Ledger, str | None]:
    """Charge a run about to train into `out_dir` (runner.execute): (ledger, charge id)."""
    out = Path(out_dir).resolve()
    root = root_for(out)
    led = Ledger(root)
    if root is not None:
        with closing(store_db.connect(led.db_path)) as con:
            row = con.execute("SELECT sweep FROM runs WHERE id=?", (out.name,)).fetchone()
        if row is not None:
            return led, led.book(config, run_id=out.name, source="app", sweep=row["sweep"])
    charge = f"cli-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
    return led, led.book(config, run_id=str(out), source="cli", charge_id=charge)
