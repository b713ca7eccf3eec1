"""Two structural rules of the code, checked on its syntax trees and line counts.

**The log format is one interface.** A table's format is a
:class:`~tablelog.formats.codec.RecordCodec` chosen once (:func:`tablelog.formats.record_codec`);
no module outside ``tablelog/formats/`` asks which one it has: no ``.batched`` flag, no
comparison of a ``log.format`` value, no use of an implementation class. A reader whose
algorithm depends on what a record is asks the format that question by name
(``rows_per_record_vary``).

**Small modules.** No module of the core, the plugins or the example plugin is longer
than :data:`MAX_LINES` unless its docstring says why (a line ``Long because: ...``).
:data:`SPLIT_PENDING` lists the modules whose split another part of issue 27 does.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "core" / "tablelog"
PACKAGES = [CORE, *sorted(ROOT.glob("plugins/*/tablelog_*")), *sorted(ROOT.glob("examples/*/tablelog_*"))]

#: What only the formats package may name: the implementations and the format values.
_IMPLEMENTATIONS = {"JsonCodec", "ArrowCodec"}
_IMPLEMENTATION_MODULES = {"tablelog.formats.json_codec", "tablelog.formats.arrow_codec"}
_FORMAT_VALUES = {"arrow", "debezium-json"}  # not "json": the CLI's --format json is no log format
_FORMAT_ATTRIBUTES = {"log_format", "value_format"}

MAX_LINES = 350
REASON = "Long because:"
#: Modules over the limit whose split is pending, by path under the repository (none now:
#: keep it so).
SPLIT_PENDING: dict[str, str] = {}


def _asks_for_the_format(node: ast.AST) -> str | None:
    """What ``node`` does that only the formats package may do, or None."""
    if isinstance(node, ast.Attribute) and node.attr == "batched":
        return "reads .batched"
    if isinstance(node, ast.Name) and node.id in _IMPLEMENTATIONS:
        return f"names {node.id}"
    if isinstance(node, ast.Attribute) and node.attr in _IMPLEMENTATIONS:
        return f"names {node.attr}"
    if isinstance(node, ast.ImportFrom) and not node.level:
        module = node.module or ""
        imported = {module, *(f"{module}.{alias.name}" for alias in node.names)}
        if imported & _IMPLEMENTATION_MODULES:
            return f"imports {sorted(imported & _IMPLEMENTATION_MODULES)[0]}"
    if isinstance(node, ast.Import):
        found = {alias.name for alias in node.names} & _IMPLEMENTATION_MODULES
        if found:
            return f"imports {sorted(found)[0]}"
    if isinstance(node, ast.Compare):
        for operand in [node.left, *node.comparators]:
            if isinstance(operand, ast.Attribute) and isinstance(operand.value, ast.Name) \
                    and operand.value.id == "LogFormat":
                return f"compares LogFormat.{operand.attr}"
            if isinstance(operand, ast.Attribute) and operand.attr in _FORMAT_ATTRIBUTES:
                return f"compares .{operand.attr}"
            if isinstance(operand, ast.Constant) and operand.value in _FORMAT_VALUES:
                return f"compares {operand.value!r}"
    return None


def format_questions(roots: list[Path]) -> list[str]:
    """``file:line what`` for every place outside a ``formats`` package that asks which
    log format it has."""
    found = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if "formats" in path.relative_to(root).parts[:-1]:
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                what = _asks_for_the_format(node)
                if what:
                    found.append(f"{path.relative_to(root.parent)}:{getattr(node, 'lineno', 0)} {what}")
    return found


def long_modules(roots: list[Path], base: Path, limit: int = MAX_LINES) -> dict[str, int]:
    """The modules over ``limit`` lines whose docstring gives no reason, by path under ``base``."""
    found = {}
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            text = path.read_text()
            lines = len(text.splitlines())
            if lines > limit and REASON not in (ast.get_docstring(ast.parse(text)) or ""):
                found[path.relative_to(base).as_posix()] = lines
    return found


def test_no_module_outside_the_formats_package_asks_which_log_format_it_has() -> None:
    assert format_questions(PACKAGES) == []


def test_no_module_is_over_350_lines_without_a_reason() -> None:
    long = long_modules(PACKAGES, ROOT)
    unexplained = {path: lines for path, lines in long.items() if path not in SPLIT_PENDING}
    assert unexplained == {}, f"over {MAX_LINES} lines: split them, or say why in a '{REASON}' docstring line"
    done = sorted(set(SPLIT_PENDING) - set(long))
    assert done == [], f"no longer over {MAX_LINES} lines: remove them from SPLIT_PENDING"


def test_the_checks_find_what_they_look_for(tmp_path: Path) -> None:
    root = tmp_path / "pkg"
    (root / "formats").mkdir(parents=True)
    (root / "reader.py").write_text(
        "from tablelog.formats.arrow_codec import ArrowCodec\n"
        "if codec.batched: pass\n"
        "if options.log_format is LogFormat.ARROW: pass\n"
        "if options.get('log.format') == 'arrow': pass\n"
        "if isinstance(codec, JsonCodec): pass\n"
        "if output_format == 'json': pass\n"
    )
    (root / "formats" / "choice.py").write_text("if codec.value_format is LogFormat.ARROW: pass\n")
    assert format_questions([root]) == [
        "pkg/reader.py:1 imports tablelog.formats.arrow_codec",
        "pkg/reader.py:2 reads .batched",
        "pkg/reader.py:3 compares .log_format",
        "pkg/reader.py:4 compares 'arrow'",
        "pkg/reader.py:5 names JsonCodec",
    ]
    (root / "long.py").write_text("x = 1\n" * 400)
    (root / "explained.py").write_text('"""A module.\n\nLong because: one table of cases.\n"""\n' + "x = 1\n" * 400)
    assert long_modules([root], tmp_path) == {"pkg/long.py": 400}
