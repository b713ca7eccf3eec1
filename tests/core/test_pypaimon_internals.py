"""tablelog calls pypaimon internals (compaction, conditional commits, delta reads): the
installed pypaimon must have every one, its version must be one tested, and no module
but ``tablelog.store.pypaimon_internals`` may call a private name of pypaimon's."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import tomllib

from tablelog.store import pypaimon_internals
from tablelog.store.pypaimon_internals import (
    INTERNALS,
    TESTED_VERSIONS,
    Internal,
    missing_internals,
    version_problems,
)

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "core" / "tablelog"
#: Private names of the standard library and of other libraries tablelog may use.
OTHER_LIBRARIES = {"_exit", "_getframe", "_asdict", "_replace", "_fields", "_make", "_value_",
                   "_active_spark_context"}


def test_the_installed_pypaimon_has_every_internal_tablelog_calls() -> None:
    missing = missing_internals()
    assert missing == [], (
        "the installed pypaimon lacks internals tablelog calls; pin pypaimon to a tested version "
        "or port tablelog/store/pypaimon_internals.py:\n  " + "\n  ".join(missing))


def test_the_installed_pypaimon_and_pypaimon_rust_are_tested_versions() -> None:
    assert version_problems() == []


def test_the_dependency_pins_are_the_tested_versions() -> None:
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    for name, (low, high) in TESTED_VERSIONS.items():
        (pin,) = [d for d in dependencies if re.match(rf"{re.escape(name)}\b(?!-)", d)]
        assert pin.replace(" ", "") == f"{name}>={low},<{high}", pin


def test_a_missing_internal_is_named_with_the_reason_tablelog_needs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    gone = Internal("pypaimon.write.file_store_commit:FileStoreCommit._commit_that_moved", "a reason given")
    monkeypatch.setattr(pypaimon_internals, "INTERNALS", (*INTERNALS, gone))
    assert missing_internals() == [
        "pypaimon.write.file_store_commit:FileStoreCommit._commit_that_moved (used because: a reason given)"]


def _defined_private_names() -> set[str]:
    """Every ``_name`` tablelog defines: functions, methods, attributes, module globals."""
    names = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
            elif isinstance(node, ast.arg) or isinstance(node, ast.keyword) and node.arg:
                names.add(node.arg)
    return {n for n in names if n.startswith("_")}


def test_no_module_but_the_internals_module_uses_a_private_name_of_pypaimon() -> None:
    ours = _defined_private_names() | OTHER_LIBRARIES
    internals = {i.path.rsplit(".", 1)[-1] for i in INTERNALS if i.path.rsplit(".", 1)[-1].startswith("_")}
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "pypaimon_internals.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Attribute) or not node.attr.startswith("_") or node.attr.startswith("__"):
                continue
            if node.attr in internals or node.attr not in ours:
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: .{node.attr}")
    assert offenders == [], "call pypaimon's private names through tablelog.store.pypaimon_internals:\n" + \
        "\n".join(offenders)
