"""Mutation testing of the privacy tests: plant one-line privacy bugs, one at a time, and
see which test catches each.

Every mutant is a one-line patch to the engine (the text it replaces must occur exactly
once, so a renamed line makes the bench fail loudly instead of silently planting
nothing). Each is applied to a scratch copy of the working tree, the tests that should
catch it run there (`pytest -x`), and a table says which test failed first, or that the
bug SURVIVED. Exit status 1 when a mutant survives, when a test run errors before any
test fails, or when a patch no longer applies. CI runs the whole table (.ci/run);
tests/test_mutants.py runs one mutant and checks that every patch still applies.

    .venv/bin/python bench/mutants.py [--only ID ...] [--jobs 2] [--list] [--markdown]

The list covers every release in docs/privacy.md's release list (DP-MERF embedding,
mixed tabular embedding, class counts and numeric bounds; DataLens vote sums and its
stopping rule; the marginals baseline's histograms and counts; AIM's measurements,
selections and bounds), the ledger and the noise sampler. Each says what it would leak
if it shipped.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutant:
    id: str
    path: str  # relative to the repository root
    old: str  # the exact text replaced (must occur once)
    new: str
    leak: str  # what the bug would leak if it shipped
    tests: tuple[str, ...]  # pytest node ids or files that should catch it


def _audit(method: str, release: str) -> str:
    return f"tests/test_audit.py::test_every_registered_method_is_audited_and_passes[{method}: {release}]"


def _noise(method: str) -> str:
    return f"tests/test_release_noise.py::{{}}[{method}]"


def _noise_checks(method: str) -> tuple[str, ...]:
    return tuple(_noise(method).format(t) for t in (
        "test_the_noise_has_the_stated_variance_on_every_coordinate",
        "test_the_noise_is_uncorrelated_across_coordinates_and_rows",
        "test_no_coordinate_comes_out_exact_more_often_than_the_noise_allows",
        "test_every_released_value_lies_on_its_public_grid"))


CONTRACT = "tests/test_method_contract.py::test_a_tiny_run_ends_with_a_result_within_budget_and_its_noise_accounted[{}]"
EMBEDDING = _audit("dpmerf", "DP-MERF mean embedding")
MIXED = _audit("dpmerf", "DP-MERF mixed tabular")
COUNTS = _audit("dpmerf", "class counts")
BOUNDS = _audit("dpmerf", "numeric bounds histogram")
DL_TRAIN = _audit("datalens", "DataLens train")
DL_VOTES = _audit("datalens", "DataLens votes + stopping rule")
MARGINALS = _audit("marginals", "marginals train")
AIM = _audit("aim", "AIM train")
AIM_SELECTION = "tests/test_audit.py::test_aim_selection_sensitivity_holds_and_is_attained"
LEDGER = "tests/test_ledger.py"
NOISE = "tests/test_noise.py"

MUTANTS = [
    # --- the five that survived every test in the review of issue 39
    Mutant("marginals-shared-noise-row", "engine/methods/marginals/method.py",
           "hist = hist + _noise(hist.shape, sigma_hist)",
           "hist = hist + _noise((1, hist.shape[1]), sigma_hist)",
           "one noise row for every class: the differences between class rows come out exact",
           (*_noise_checks("marginals"), MARGINALS)),
    Mutant("aim-selection-sensitivity-halved", "engine/methods/aim/method.py",
           "sens = MARGINAL_L1_SENSITIVITY * max(pool.values())",
           "sens = MARGINAL_L1_SENSITIVITY * max(pool.values()) / 2",
           "each selection is 2ε_t-bounded-range where ε_t is charged (true ε 1.10 for 0.99)",
           (AIM_SELECTION, AIM)),
    Mutant("aim-noise-only-on-nonzero-cells", "engine/methods/aim/method.py",
           "return x + gaussian_noise(x.shape, sigma, dtype=torch.float64).numpy()",
           "return x + gaussian_noise(x.shape, sigma, dtype=torch.float64).numpy() * (x > 0)",
           "every empty cell of a measured marginal released as exactly 0",
           (AIM, *_noise_checks("aim"))),
    Mutant("dpmerf-embedding-not-snapped", "engine/methods/dpmerf/method.py",
           '"mean embedding": snap(emb.cpu(), std) + gaussian_noise(',
           '"mean embedding": emb.cpu() + gaussian_noise(',
           "the embedding's low bits survive the noise: floating-point residuals tell the "
           "datasets apart",
           _noise_checks("dpmerf")),
    Mutant("dpmerf-counts-with-embedding-sigma", "engine/methods/dpmerf/method.py",
           '_noisy_counts(y_train, n_classes, sigma["class counts"])',
           '_noisy_counts(y_train, n_classes, sigma["mean embedding"])',
           "class counts with the embedding's tiny σ (true ε ≈ 3,500 for 1 on breast_cancer)",
           (COUNTS, *_noise_checks("dpmerf"))),
    # --- the two caught only by chance before
    Mutant("marginals-noise-only-on-nonempty-cells", "engine/methods/marginals/method.py",
           "hist = hist + _noise(hist.shape, sigma_hist)",
           "hist = hist + _noise(hist.shape, sigma_hist) * (hist > 0)",
           "every empty histogram cell released as exactly 0",
           (*_noise_checks("marginals"), MARGINALS)),
    Mutant("dpmerf-sigma-for-another-delta", "engine/methods/dpmerf/method.py",
           "report = calibrate_releases(epsilon=config.epsilon, delta=config.delta,",
           "report = calibrate_releases(epsilon=config.epsilon, delta=1e-3,",
           "σ calibrated for δ = 1e-3 where the run targets 1e-5",
           (CONTRACT.format("dpmerf"), EMBEDDING)),
    # --- the project's own planted bugs (tests/test_audit.py PLANTED), as source patches
    Mutant("dpmerf-sigma-halved", "engine/methods/dpmerf/method.py",
           'std = sigma["mean embedding"]', 'std = sigma["mean embedding"] / 2',
           "the embedding gets half its noise", (EMBEDDING,)),
    Mutant("dpmerf-sensitivity-understated", "engine/methods/dpmerf/features.py",
           "EMBEDDING_SENSITIVITY = 2.0 ", "EMBEDDING_SENSITIVITY = 1.0 ",
           "σ calibrated for half the embedding's true sensitivity", (EMBEDDING,)),
    Mutant("dpmerf-feature-norm-2", "engine/methods/dpmerf/features.py",
           "return torch.cat([torch.cos(proj), torch.sin(proj)], dim=1) * scale",
           "return torch.cat([torch.cos(proj), torch.sin(proj)], dim=1) * scale * 2",
           "features of norm 2: the embedding moves twice as far as claimed", (EMBEDDING,)),
    Mutant("dpmerf-mixed-sensitivity-understated", "engine/methods/dpmerf/features.py",
           "HETEROGENEOUS_SENSITIVITY = 2.0 * math.sqrt(2.0)",
           "HETEROGENEOUS_SENSITIVITY = math.sqrt(2.0)",
           "mixed tabular embedding under-noised by 2", (MIXED,)),
    Mutant("dpmerf-counts-sensitivity-understated", "engine/methods/dpmerf/features.py",
           "COUNTS_SENSITIVITY = math.sqrt(2.0)", "COUNTS_SENSITIVITY = math.sqrt(2.0) / 2",
           "class counts under-noised by 2", (COUNTS,)),
    Mutant("dpmerf-reweighted-by-true-counts", "engine/methods/dpmerf/method.py",
           "emb, label_probs = _post_process(out, m, n_classes)",
           "emb, label_probs = _post_process({**out, \"class counts\": "
           "torch.bincount(y_train, minlength=n_classes).double()}, m, n_classes)",
           "the generator's targets and labels follow the exact class counts",
           (COUNTS,)),
    Mutant("bounds-sensitivity-understated", "engine/privacy/dp_bounds.py",
           "return math.sqrt(2.0 * n_numeric)", "return math.sqrt(2.0 * n_numeric) / 2",
           "the numeric-bounds histogram under-noised by 2", (BOUNDS,)),
    Mutant("bounds-sigma-halved", "engine/privacy/dp_bounds.py",
           "return counts + gaussian_noise(counts.shape, noise_std, dtype=torch.float64)",
           "return counts + gaussian_noise(counts.shape, noise_std / 2, dtype=torch.float64)",
           "the numeric-bounds histogram gets half its noise", (BOUNDS,)),
    Mutant("bounds-release-sigma-halved", "engine/privacy/dp_bounds.py",
           "noisy = noisy_histogram(x_num[:, cols], noise_std=noise_std, edges=edges,",
           "noisy = noisy_histogram(x_num[:, cols], noise_std=noise_std / 2, edges=edges,",
           "every private bounds release (DP-MERF's and AIM's) with half the noise charged",
           (BOUNDS, CONTRACT.format("aim"), "tests/test_dpmerf.py")),
    Mutant("bounds-mass-counted-twice", "engine/privacy/dp_bounds.py",
           "off_mass = idx[:, j] if mass is None else idx[x_num[:, j] != mass, j]",
           "off_mass = idx[:, j] if mass is None else np.concatenate([idx[:, j], "
           "idx[x_num[:, j] == mass, j]])",
           "a record at its column's point mass lands in two cells, not none",
           ("tests/test_sensitivity.py::test_bounds_histogram_sensitivity",)),
    Mutant("dpmerf-bounds-sigma-halved", "engine/methods/dpmerf/method.py",
           'noise_std=sigma["numeric bounds histogram"],',
           'noise_std=sigma["numeric bounds histogram"] / 2,',
           "DP-MERF's private bounds released with half the noise charged",
           ("tests/test_method_contract.py::"
            "test_every_other_dataset_it_takes_draws_only_the_noise_it_reports[dpmerf]",)),
    Mutant("aim-bounds-sigma-halved", "engine/methods/aim/method.py",
           "noise_std=budget.bounds_sigma,", "noise_std=budget.bounds_sigma / 2,",
           "AIM's private bounds released with half the noise charged",
           (CONTRACT.format("aim"),)),
    Mutant("datalens-vote-sigma-halved", "engine/methods/datalens/votes.py",
           "noisy = total + gaussian_noise(total.shape, sigma, device=total.device)",
           "noisy = total + gaussian_noise(total.shape, sigma / 2, device=total.device)",
           "every vote sum gets half its noise", (DL_TRAIN,)),
    Mutant("datalens-votes-doubled", "engine/methods/datalens/step.py",
           "return topk_sto_sign(descent, top_k, c_eff, gen=gen)",
           "return 2 * topk_sto_sign(descent, top_k, c_eff, gen=gen)",
           "each teacher's vote moves twice the stated 2√k", (DL_TRAIN,)),
    Mutant("datalens-record-in-two-teachers", "engine/methods/datalens/votes.py",
           "return perm[: n_teachers * size].reshape(n_teachers, size)",
           "return np.concatenate([perm[:1], perm[: n_teachers * size - 1]])"
           ".reshape(n_teachers, size)",
           "one record in two teachers' parts (the official code's defect)", (DL_VOTES, DL_TRAIN)),
    Mutant("datalens-one-extra-step", "engine/methods/datalens/accounting.py",
           "    return lo\n", "    return lo + 1\n",
           "one iteration past the budget", (DL_VOTES, DL_TRAIN)),
    Mutant("datalens-sensitivity-understated", "engine/methods/datalens/accounting.py",
           "return 2.0 * math.sqrt(top_k)", "return math.sqrt(top_k)",
           "the stopping rule counts half each vote's sensitivity: many more steps",
           (DL_TRAIN, DL_VOTES)),
    Mutant("marginals-sigma-halved", "engine/methods/marginals/method.py",
           "return gaussian_noise(shape, std, dtype=torch.float64).numpy()",
           "return gaussian_noise(shape, std / 2, dtype=torch.float64).numpy()",
           "histograms and counts get half their noise", (MARGINALS,)),
    Mutant("marginals-sensitivity-understated", "engine/methods/marginals/method.py",
           "HISTOGRAM_SENSITIVITY = math.sqrt(2.0)", "HISTOGRAM_SENSITIVITY = math.sqrt(2.0) / 2",
           "histograms calibrated for half their sensitivity", (MARGINALS,)),
    Mutant("marginals-counts-not-noised", "engine/methods/marginals/method.py",
           "counts = counts + _noise(counts.shape, sigma_counts)", "counts = counts",
           "the class counts released exactly", (MARGINALS, *_noise_checks("marginals"))),
    Mutant("aim-selection-epsilon-doubled", "engine/methods/aim/method.py",
           "cl = keys[_select(quality, eps_t, sens)]",
           "cl = keys[_select(quality, 2 * eps_t, sens)]",
           "each selection run at twice the ε it is charged",
           ("tests/test_audit.py::test_aim_charges_the_selections_it_runs", AIM)),
    Mutant("dpmerf-noise-shared-across-classes", "engine/methods/dpmerf/method.py",
           "gaussian_noise(emb.shape, std,", "gaussian_noise((*emb.shape[:-1], 1), std,",
           "one noise column for every class: the differences between class embeddings "
           "come out exact", (*_noise_checks("dpmerf"), COUNTS)),
    Mutant("datalens-noise-shared-across-records", "engine/methods/datalens/votes.py",
           "noisy = total + gaussian_noise(total.shape, sigma, device=total.device)",
           "noisy = total + gaussian_noise(total.shape[-1:], sigma, device=total.device)",
           "one noise vector for every synthetic record of a step: averaging the batch's "
           "votes removes it", (*_noise_checks("datalens"), DL_TRAIN)),
    Mutant("aim-sigma-halved", "engine/methods/aim/method.py",
           "return x + gaussian_noise(x.shape, sigma, dtype=torch.float64).numpy()",
           "return x + gaussian_noise(x.shape, sigma / 2, dtype=torch.float64).numpy()",
           "every marginal measured with half its noise", (AIM,)),
    # --- the ledger
    Mutant("ledger-counts-collapsed", "engine/privacy/charges.py",
           "merged[float(z)] += int(n)", "merged[float(z)] = int(n)",
           "runs with the same noise charged once: a dataset's total understated", (LEDGER,)),
    Mutant("ledger-planned-charge-halved", "engine/privacy/charges.py",
           "return ((privacy.calibrate_noise_multiplier(epsilon=config.epsilon, delta=config.delta), 1),)",
           "return ((2 * privacy.calibrate_noise_multiplier(epsilon=config.epsilon, delta=config.delta), 1),)",
           "a run charged far less than it spends before it ends (the cap lets it through)",
           (LEDGER,)),
    Mutant("ledger-misses-a-claimed-run", "engine/privacy/ledger.py",
           "return [r.config for r in runs if r.run_id not in booked]",
           "return [r.config for r in runs if r.run_id not in booked and r.status.value == 'queued']",
           "a run claimed but not yet booked is left out of the cap check at submit",
           (LEDGER,)),
    Mutant("ledger-cap-checked-before-the-run", "engine/privacy/ledger.py",
           "if self.cap is None or self.after <= self.cap * (1 + 1e-9):",
           "if self.cap is None or self.spent <= self.cap * (1 + 1e-9):",
           "a run that takes its dataset past the cap is let through", (LEDGER,)),
    Mutant("upload-public-without-its-mark", "engine/store/uploads.py",
           "return p.parent.parent.name == UPLOADS and _mark(p).is_file()",
           "return p.parent.parent.name == UPLOADS",
           "every participant's upload counts as marked public: runs on private files are "
           "never charged or capped, and any upload can be tuned on",
           ("tests/test_public_file.py::test_a_file_not_marked_public_is_refused_with_the_fix",
            "tests/test_public_file.py::test_a_public_file_is_never_charged_and_the_private_run_once")),
    # --- the noise itself
    Mutant("noise-seeded", "engine/privacy/noise.py",
           'key=int.from_bytes(os.urandom(16), "little")', "key=0",
           "every draw the same: the noise is public and subtracts out",
           (f"{NOISE}::test_noise_is_never_seeded_and_zero_std_is_zeros",)),
    Mutant("noise-uniform-reaches-1", "engine/privacy/noise.py",
           "return np.minimum(u + 2.0 ** -193, 1.0 - 2.0 ** -53)", "return u + 2.0 ** -193",
           "a uniform of exactly 1 (about 2^-54 a value) crashes a release mid-run",
           (f"{NOISE}::test_extreme_words_give_a_uniform_strictly_inside_0_1",)),
    Mutant("noise-half-width", "engine/privacy/noise.py",
           "return torch.from_numpy((k * g).reshape(shape))",
           "return torch.from_numpy((k * g / 2).reshape(shape))",
           "every release of every method gets half its noise",
           (f"{NOISE}::test_noise_is_on_its_public_grid_and_integer_releases_are_exact",
            _noise("dpmerf").format("test_the_noise_has_the_stated_variance_on_every_coordinate"))),
]


# ------------------------------------------------------------------ running them


def _tree_files() -> list[str]:
    """The working tree as CI would see it: tracked and untracked-but-not-ignored files."""
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    return [f for f in out.splitlines() if (ROOT / f).is_file()]


def _scratch(files: list[str]) -> Path:
    dest = Path(tempfile.mkdtemp(prefix="mutants-"))
    for f in files:
        (dest / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, dest / f)
    return dest


def check_applies(m: Mutant, root: Path = ROOT) -> str:
    """The mutated text of `m.path`; ValueError when the patch does not apply exactly once."""
    text = (root / m.path).read_text()
    found = text.count(m.old)
    if found != 1:
        raise ValueError(f"{m.id}: the text to replace occurs {found} times in {m.path} "
                         "(the line moved or changed: update the mutant).")
    return text.replace(m.old, m.new)


_FAILED = re.compile(r"^(?:FAILED|ERROR) (.+?)(?: - .*)?$", re.M)  # node ids hold spaces


def run_one(m: Mutant, scratch: Path, timeout: float) -> dict:
    """Apply `m` in `scratch`, run its tests, restore the file: a row of the table."""
    target = scratch / m.path
    original = target.read_text()
    target.write_text(check_applies(m, scratch))
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
             "-o", "addopts=", "--timeout", str(int(timeout)), *m.tests],
            cwd=scratch, capture_output=True, text=True, timeout=timeout + 60)
        out, code = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired:
        out, code = "", -1
    finally:
        target.write_text(original)
    caught_by = _FAILED.search(out)
    if code == 1 and caught_by:
        verdict, by = "caught", caught_by.group(1)
    elif code == 0:
        verdict, by = "SURVIVED", ""
    else:  # collection error, timeout, a crash: not a test catching it
        verdict, by = "ERROR", (out.strip().splitlines() or ["timed out"])[-1][:120]
    return {"id": m.id, "where": m.path, "leak": m.leak, "verdict": verdict, "by": by,
            "seconds": time.perf_counter() - t0}


def _short(node: str) -> str:
    return node.replace("tests/", "").replace("test_every_registered_method_is_audited_and_passes",
                                              "audit")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", default=None, help="mutant ids to run")
    ap.add_argument("--jobs", type=int, default=1, help="mutants run at once (scratch copies)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per mutant")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--markdown", action="store_true", help="print the table as markdown")
    args = ap.parse_args(argv)
    chosen = [m for m in MUTANTS if args.only is None or m.id in args.only]
    unknown = set(args.only or ()) - {m.id for m in MUTANTS}
    if unknown:
        print(f"no such mutant: {', '.join(sorted(unknown))} (see --list)")
        return 2
    if args.list:
        for m in chosen:
            print(f"{m.id:40s} {m.path:30s} {m.leak}")
        return 0
    for m in chosen:
        check_applies(m)  # fail before any copying when a patch has rotted

    files = _tree_files()
    scratches = [_scratch(files) for _ in range(max(1, min(args.jobs, len(chosen))))]
    t0 = time.perf_counter()
    try:
        def work(i_m):
            i, m = i_m
            row = run_one(m, scratches[i % len(scratches)], args.timeout)
            print(f"  {row['verdict']:8s} {m.id} ({row['seconds']:.0f} s)", flush=True)
            return row
        # Mutant i runs in scratch i % jobs; a pool of `jobs` threads keeps them apart.
        with ThreadPoolExecutor(len(scratches)) as pool:
            lanes = [[(i, m) for i, m in enumerate(chosen) if i % len(scratches) == k]
                     for k in range(len(scratches))]
            rows_by_lane = list(pool.map(lambda lane: [work(x) for x in lane], lanes))
        order = {m.id: i for i, m in enumerate(chosen)}
        rows = sorted((r for lane in rows_by_lane for r in lane), key=lambda r: order[r["id"]])
    finally:
        for s in scratches:
            shutil.rmtree(s, ignore_errors=True)

    print()
    if args.markdown:
        print("| mutant | where | what it would leak | verdict | caught by |")
        print("|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['id']} | {r['where']} | {r['leak']} | {r['verdict']} | {_short(r['by'])} |")
    else:
        for r in rows:
            print(f"{r['verdict']:8s} {r['id']:40s} {_short(r['by'])}")
    bad = [r for r in rows if r["verdict"] != "caught"]
    print(f"\n{len(rows) - len(bad)} of {len(rows)} mutants caught in "
          f"{time.perf_counter() - t0:.0f} s" + (f"; NOT caught: {', '.join(r['id'] for r in bad)}"
                                                 if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
