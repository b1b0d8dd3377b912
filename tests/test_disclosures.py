"""What metrics.json says is not private, and that docs/privacy.md says the same: the
disclosures list against `engine.runs.runner.disclosures`, and the audit table against the
releases a run lists in metrics.json (issue 28)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from engine.audit import lower_bound as audit
from engine.runs import runner
from engine.core.config import RunConfig
from engine.data.catalog import load

# The privacy statement in full lives in docs/privacy.md (the README points there).
PRIVACY_DOC = (Path(__file__).resolve().parents[1] / "docs" / "privacy.md").read_text()


def _readme_not_private_keys() -> set[str]:
    """The backticked keys at the start of each item of the "What is not." list."""
    block = PRIVACY_DOC[PRIVACY_DOC.index("**What is not.**"):]
    block = block[:block.index("\n\n", block.index("\n- "))]
    keys = set()
    for item in re.findall(r"^- (.+?):", block, flags=re.M):
        keys |= set(re.findall(r"`([^`]+)`", item))
    return keys


def test_readme_disclosures_list_is_exactly_what_metrics_json_can_say():
    assert _readme_not_private_keys() == set(runner.NOT_PRIVATE_KEYS)


@pytest.mark.parametrize("dataset", ["digits", "breast_cancer"])
def test_disclosures_only_use_the_listed_keys(dataset):
    data = load(dataset)
    out = runner.disclosures(data, {"logreg": 0.5})["not private"]
    assert set(out) <= set(runner.NOT_PRIVATE_KEYS)


@pytest.mark.parametrize("dataset,key,says", [
    ("digits", "training images (Playground)", "real training images"),
    ("breast_cancer", "real column histograms (Playground)", "real training records"),
])
def test_metrics_json_lists_the_real_data_the_playground_shows(tmp_path, dataset, key, says):
    config = RunConfig(method="marginals", dataset=dataset, epsilon=1.0)
    list(runner.execute(config, tmp_path, full_eval=False))
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    note = metrics["disclosures"]["not private"][key]
    assert note.startswith("NOT private") and says in note


# Each release a run lists under privacy.releases, and the audit that runs it.
AUDITED_RELEASES = {
    ("dpmerf", "mean embedding"): ("DP-MERF mean embedding", "DP-MERF mixed tabular"),
    ("dpmerf", "class counts"): ("class counts",),
    ("dpmerf", "numeric bounds histogram"): ("numeric bounds histogram",),
    ("datalens", "teacher votes (one per synthetic record per step)"): ("DataLens train",),
    ("marginals", "class counts"): ("marginals train",),
    ("marginals", "column histograms"): ("marginals train",),
    ("aim", "numeric bounds histogram"): ("numeric bounds histogram",),
    ("aim", "marginal"): ("AIM train",),
    # Audited against the whole run's claim with the selections replayed; the selection's
    # own Gaussian-DP charge is checked on its exact trade-off curve (tests/test_aim.py).
    ("aim", "selection (exponential mechanism)"): ("AIM train",),
}


def _release_names(method: str) -> set[str]:
    """The release names a run of `method` writes into metrics.json, read from the plan
    its `train` uses (no training)."""
    from engine.methods.dpmerf import method as dpmerf
    from engine.methods.marginals import method as marginals

    cfg = RunConfig(method=method, dataset="breast_cancer", epsilon=1.0)
    if method == "dpmerf":
        names = set()
        for dataset, labels in (("breast_cancer", "counts"), ("digits", "balanced")):
            data = load(dataset)
            params = dpmerf.Params.for_data(data)
            from dataclasses import replace

            report, _ = dpmerf._calibrate(cfg, data, replace(params, labels=labels))
            names |= {r.name for r in report.releases}
        return names
    if method == "marginals":
        report = marginals._calibrate(cfg, marginals.Params(), load("breast_cancer"))
        return {r.name for r in report.releases}
    if method == "aim":
        from engine.methods.aim import method as aim

        return set(aim.RELEASE_NAMES)
    from engine.methods.datalens import accounting as datalens_accounting

    return {datalens_accounting.VOTES}


@pytest.mark.parametrize("method", list(audit.method_audits()))
def test_every_release_in_metrics_json_has_an_audit_and_a_readme_row(method):
    names = _release_names(method)
    assert names, method
    for name in names:
        audits = AUDITED_RELEASES[(method, name)]
        assert set(audits) <= set(audit.method_audits()[method])
    table = PRIVACY_DOC[PRIVACY_DOC.index("## Privacy audit"):]
    for name in audit.method_audits()[method]:
        assert f"| {name} |" in table, f"docs/privacy.md's audit table has no row for {name}"
