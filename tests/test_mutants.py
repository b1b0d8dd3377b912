"""bench/mutants.py, the mutation table of the privacy tests: every patch still applies
(a renamed line would plant nothing), the list covers every method, every audit and the
ledger and noise, and one mutant runs end to end in a scratch copy and is caught. The
whole table runs in CI (.ci/run) and fails on a survivor."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import mutants  # noqa: E402
from engine.audit import lower_bound as audit  # noqa: E402
from engine.methods.registry import METHODS  # noqa: E402


@pytest.mark.parametrize("mutant", mutants.MUTANTS, ids=[m.id for m in mutants.MUTANTS])
def test_every_mutant_applies_exactly_once(mutant):
    assert mutants.check_applies(mutant) != (ROOT / mutant.path).read_text()


def test_the_list_covers_every_method_audit_ledger_and_noise():
    ids = [m.id for m in mutants.MUTANTS]
    assert len(ids) >= 20 and len(set(ids)) == len(ids)
    tests = " ".join(t for m in mutants.MUTANTS for t in m.tests)
    for method, names in audit.method_audits().items():
        assert method in METHODS
        for name in names:
            if name == "numeric bounds histogram" and method == "aim":
                continue  # AIM's bounds: the dpmerf audit of dp_bounds, and a mutant of its own
            assert f"[{method}: {name}]" in tests, f"no mutant exercises the audit {name!r}"
    paths = {m.path for m in mutants.MUTANTS}
    assert {"engine/privacy/ledger.py", "engine/privacy/charges.py", "engine/privacy/noise.py"} <= paths
    for method in ("dpmerf", "datalens", "marginals", "aim"):
        assert any(m.id.startswith(method) for m in mutants.MUTANTS), method


def test_bench_tiny_configuration_catches_one_mutant(capsys):
    assert mutants.main(["--only", "noise-uniform-reaches-1"]) == 0
    out = capsys.readouterr().out
    assert "caught" in out and "1 of 1 mutants caught" in out
