"""`python -m engine attack RUN_DIR`: measure membership attacks on a finished run.

Prints a cost preview, progress, and per attack the ROC-AUC and TPR at 1 % FPR with
their intervals next to the DP bound's TPR at the same FPR; `--json` prints attack.json's
content instead. Exit status 1 (and a loud line on stderr) when a measured point lies
outside the bound beyond its interval: that is a bug in the code or in the accounting.
NOT PRIVATE: the figures use the run's training records (see engine/audit/membership_run.py).
"""

from __future__ import annotations

import sys

from engine.core.errors import InputError
from engine.core.jsonsafe import dumps


def table(result: dict) -> list[str]:
    """The result as printed lines (the bench prints the same)."""
    bounds = result["bounds"]
    lines = [f"{'attack':16s} {'ROC-AUC [95% CI]':22s} {'TPR@1%FPR [95% CI]':24s} "
             + " ".join(f"{'bound ' + k:>14s}" for k in bounds)]
    for name, a in result["attacks"].items():
        lo, hi = a["auc_ci"]
        tlo, thi = a["tpr_at_1pct_fpr_ci"]
        lines.append(f"{name:16s} {a['auc']:.3f} [{lo:.3f}, {hi:.3f}]   "
                     f"{a['tpr_at_1pct_fpr']:.3f} [{tlo:.3f}, {thi:.3f}]     "
                     + " ".join(f"{b['tpr_at_1pct_fpr']:14.3f}" for b in bounds.values()))
    lines.append("(the FPR reached is an estimate too: the check compares each TPR's lower limit "
                 "with the bound at the FPR's upper limit, 99 % jointly per attack)")
    return lines


def main(args) -> int:
    from tqdm import tqdm

    from engine.audit import membership_run as attack_run

    if args.folds < 2:
        raise InputError(f"--folds must be at least 2 (one fold is the reference). Got {args.folds}.")
    run, config, metrics, data = attack_run.load_run(args.run_dir)
    n_syn = metrics.get("n_synthetic") or len(attack_run.read_synthetic(run, data)[1])
    print(attack_run.preview_line(attack_run.data_sizes(data, n_syn, folds=args.folds)),
          file=sys.stderr)
    print("NOTE: NOT private - this reads the run's training records; the result is a "
          "diagnostic for the data owner, written to attack.json, not part of the release.",
          file=sys.stderr)
    with tqdm(total=args.folds, desc="attack", unit="fold", file=sys.stderr) as bar:
        def progress(done, total, message):
            bar.set_postfix_str(message[:60])
            bar.update(done - bar.n)

        result = attack_run.attack_run(run, folds=args.folds, seed=args.seed, progress=progress)
    if args.json:
        print(dumps(result, indent=1, sort_keys=True))
    else:
        g = result["game"]
        print(f"{config['method']} on {config['dataset']}, epsilon {config['epsilon']}, "
              f"delta {config['delta']}: {g['members']:,} members vs {g['non-members']:,} "
              f"non-members, {result['seconds']:.1f} s")
        print("\n".join(table(result)))
        for key, b in result["bounds"].items():
            print(f"bound {key}: {b['source']}; largest AUC {b['auc_max']:.3f}")
        print(f"written to {run / attack_run.FILE} (NOT private: keep it with the private data)")
    if not result["inside_bound"]:
        for v in result["violations"]:
            print(f"BOUND VIOLATED: {v}", file=sys.stderr)
        print("A measured attack beats the DP bound beyond its interval: a bug in the code or "
              "in the accounting.", file=sys.stderr)
        return 1
    return 0
