"""engine/ is layered: each package imports only packages on lower floors (and itself),
no method folder imports another, and no module stays at engine/'s root but __init__ and
__main__. A new module goes where its imports allow; a new package gets its floor here."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ROOT / "engine"

FLOORS = {  # package -> floor; a package imports from lower floors only
    "core": 0,
    "data": 1, "store": 1,
    # the accountant and noise need nothing below core; the ledger (privacy/ledger.py)
    # books charges in the run store
    "privacy": 2, "evaluation": 2,
    "methods": 3,
    "runs": 4, "audit": 4, "teaching": 4,
    "jobs": 5,
    # the app's one door (tests/test_facade.py); the command line beside it (`tune` drives
    # a study through the jobs, as a page does)
    "facade": 6, "cli": 6,
}
METHODS = ("dpmerf", "datalens", "marginals", "aim")


def _engine_imports(path: Path) -> set[tuple[str, ...]]:
    """Every engine module path a file imports (lazy imports too), as name tuples."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] == "engine":
                out.add(tuple(node.module.split(".")))
        elif isinstance(node, ast.Import):
            out |= {tuple(a.name.split(".")) for a in node.names if a.name.startswith("engine.")}
    return out


def test_only_init_and_main_at_the_root():
    assert sorted(p.name for p in ENGINE.glob("*.py")) == ["__init__.py", "__main__.py"]
    assert {p.name for p in ENGINE.iterdir() if p.is_dir() and p.name != "__pycache__"} == set(FLOORS)


def test_every_import_goes_down_a_floor_and_no_method_imports_another():
    wrong = []
    for path in ENGINE.rglob("*.py"):
        parts = path.relative_to(ENGINE).parts
        if len(parts) < 2:
            continue
        pkg = parts[0]
        method = parts[1] if pkg == "methods" and len(parts) > 2 else None
        for mod in _engine_imports(path):
            if len(mod) < 2:
                wrong.append(f"{path}: imports the bare package engine")
                continue
            target = mod[1]
            if target != pkg and FLOORS[target] >= FLOORS[pkg]:
                wrong.append(f"{path.relative_to(ROOT)} imports {'.'.join(mod)} (floor "
                             f"{FLOORS[target]}, not below {pkg}'s {FLOORS[pkg]})")
            if (method and target == "methods" and len(mod) > 2 and mod[2] in METHODS
                    and mod[2] != method):
                wrong.append(f"{path.relative_to(ROOT)}: method {method} imports {'.'.join(mod)}")
    assert not wrong, "\n".join(wrong)
