"""The web server reads constants and draws; it never trains. So no page or ui module
imports torch (≈ 1 s and hundreds of MB per server process), directly or through an
engine module, and the accountant (engine/privacy/accountant.py) imports none either."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imported_modules(path: Path) -> set[str]:
    """Top-level `import x` / `from x import y` targets of a file (y too: it may be a module)."""
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names |= {f"{node.module}.{a.name}" for a in node.names}
    return names


def test_pages_ui_and_the_accountant_import_no_torch():
    files = [*ROOT.glob("pages/*.py"), *ROOT.glob("ui/*.py"), ROOT / "app.py"]
    wanted = {"engine.privacy.accountant", "engine.methods.datalens.accounting"}
    for f in files:
        wanted |= {m for m in _imported_modules(f) if m.split(".")[0] in ("engine", "ui")}
    wanted |= {f"ui.{f.stem}" for f in ROOT.glob("ui/*.py")}
    code = ("import importlib, sys\n"
            f"for m in {sorted(wanted)!r}:\n"
            "    try:\n"
            "        importlib.import_module(m)\n"
            "    except ModuleNotFoundError as e:\n"
            "        if e.name != m:\n"
            "            raise  # a module on the way is missing: a stale name, not a skip\n"
            "        parent, _, name = m.rpartition('.')\n"
            "        assert hasattr(importlib.import_module(parent), name), f'{m}: no such module or name'\n"
            "    assert 'torch' not in sys.modules, f'{m} imports torch'\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
