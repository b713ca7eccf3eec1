"""pypaimon is used only inside ``tablelog.store``: the one place a new file system,
catalog or Paimon version touches."""

from __future__ import annotations

import ast
from pathlib import Path

import tablelog

CORE = Path(tablelog.__file__).parent


def paimon_uses(root: Path) -> list[str]:
    """``file:line what`` for every pypaimon import, and every use of a Paimon table
    object (``.paimon``), outside the store package."""
    store = root / "store"
    uses = []
    for path in sorted(root.rglob("*.py")):
        if store in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            what = next((f"imports {n}" for n in names if n.split(".")[0].startswith("pypaimon")), None)
            if isinstance(node, ast.Attribute) and node.attr == "paimon":
                what = "uses .paimon"
            if what:
                uses.append(f"{path.relative_to(root)}:{node.lineno} {what}")
    return uses


def test_only_the_store_package_calls_pypaimon() -> None:
    assert paimon_uses(CORE) == []
