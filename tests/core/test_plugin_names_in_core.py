"""Core names the log systems that ship behind an extra in one place:
``discovery.KNOWN_EXTRAS`` (what to pip install). Everything else asks discovery
(``known_names``, ``client_logger_names``), so a new plugin needs no core change.
The demos are the exception: they show the shipped systems with their options."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import tablelog

CORE = Path(tablelog.__file__).parent
ALLOWED = {"logs/discovery.py", "demo_pipeline.py", "cli/demo.py"}
_PLUGIN_NAME = re.compile(r"^(tablelog_)?(kafka|pulsar)(\.|$)")


def _docstrings(tree: ast.AST) -> set[int]:
    bodies = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, bodies) and node.body and isinstance(node.body[0], ast.Expr)
    }


def plugin_names_in_code(root: Path) -> list[str]:
    """``file:line 'text'`` of every string constant (docstrings aside) that names a
    shipped log system, its option prefix or its package, outside the allowed modules."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).as_posix() in ALLOWED:
            continue
        tree = ast.parse(path.read_text(), str(path))
        docstrings = _docstrings(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
                    and _PLUGIN_NAME.match(node.value)):
                found.append(f"{path.relative_to(root)}:{node.lineno} {node.value!r}")
    return found


def test_core_names_the_shipped_log_systems_only_in_the_registry() -> None:
    assert plugin_names_in_code(CORE) == []
