"""Fault injection is test-only code that production code does not know about: the
``testing.*`` options exist only in :mod:`tablelog.spark.faults` (the ``tablelog-faults``
data source, which wraps the sink's writers from the outside), and no other module of
tablelog imports it or names one of its options, but the test kit and the demo."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import tablelog

CORE = Path(tablelog.__file__).parent
FAULTS = "tablelog.spark.faults"
#: Modules that may name fault injection, and why.
ALLOWED = {
    "spark/faults.py": "the fault injector itself",
    "spark/demo_pipeline.py": "the demo shows a task attempt that dies after producing, on purpose",
}
KIT = "testing/"  # the test kit: its Spark scenarios inject faults
#: A ``testing.*`` option key (not ``tablelog.testing.…``, the kit's module names).
TESTING_OPTION = re.compile(r"(?<![\w.])testing\.[a-z]")


def imported_modules(node: ast.AST, package: list[str]) -> list[str]:
    """The modules (and ``from`` names) an import statement in ``package`` names."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = package[: len(package) - node.level + 1] if node.level else []
    module = ".".join([*base, *([node.module] if node.module else [])])
    return [module, *(f"{module}.{alias.name}" for alias in node.names)]


def fault_injection_uses(root: Path) -> list[str]:
    """``file:line what`` for every import of the fault injector and every string naming
    it or a ``testing.*`` option, outside the fault injector, the kit and the demo."""
    uses = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith(KIT) or relative in ALLOWED:
            continue
        package = ["tablelog", *path.relative_to(root).parent.parts]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            what = next((f"imports {name}" for name in imported_modules(node, package)
                         if name == FAULTS or name.startswith(FAULTS + ".")), None)
            text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""
            if FAULTS in text or TESTING_OPTION.search(text):
                what = f"names {text[:60]!r}"
            if what:
                uses.append(f"{relative}:{getattr(node, 'lineno', '?')} {what}")
    return uses


def test_no_production_module_imports_the_fault_injector_or_names_a_testing_option() -> None:
    assert fault_injection_uses(CORE) == []


def test_the_boundary_check_finds_an_import_and_an_option_name(tmp_path: Path) -> None:
    (tmp_path / "spark").mkdir()
    (tmp_path / "spark" / "sink.py").write_text(
        "from . import faults\nfrom tablelog.spark.faults import at\nKEY = 'testing.fail-mid-write'\n"
        "DOC = 'see tablelog.testing.spark_scenarios'\n")
    assert fault_injection_uses(tmp_path) == [
        "spark/sink.py:1 imports tablelog.spark.faults",
        "spark/sink.py:2 imports tablelog.spark.faults",
        "spark/sink.py:3 names 'testing.fail-mid-write'",
    ]
