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


def table_file_uses(root: Path) -> list[str]:
    """``file:line what`` for every reach into the table files outside the store package
    other than through :class:`tablelog.store.TableFiles`: an import of the module of
    its implementation, the implementation's name, or a table's ``.store``."""
    store = root / "store"
    uses = []
    for path in sorted(root.rglob("*.py")):
        if store in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            what = None
            if isinstance(node, ast.ImportFrom) and node.module == "tablelog.store.table":
                what = "imports tablelog.store.table"
            elif isinstance(node, ast.alias) and node.name == "PaimonTable":
                what = "imports PaimonTable"
            elif isinstance(node, ast.Name) and node.id == "PaimonTable":
                what = "names PaimonTable"
            elif isinstance(node, ast.Attribute) and node.attr in ("store", "PaimonTable"):
                what = f"uses .{node.attr}"
            if what:
                uses.append(f"{path.relative_to(root)}:{getattr(node, 'lineno', '?')} {what}")
    return uses


def test_outside_the_store_the_table_files_are_reached_only_through_their_interface() -> None:
    assert table_file_uses(CORE) == []


def test_the_table_files_check_finds_a_reach_around_the_interface(tmp_path: Path) -> None:
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "table.py").write_text("class PaimonTable: ...\n")
    (tmp_path / "figures.py").write_text(
        "from tablelog.store.table import PaimonTable\n"
        "def latest(t):\n    return t.store.latest_snapshot()\n"
    )
    assert table_file_uses(tmp_path) == [
        "figures.py:1 imports tablelog.store.table",
        "figures.py:1 imports PaimonTable",
        "figures.py:3 uses .store",
    ]
