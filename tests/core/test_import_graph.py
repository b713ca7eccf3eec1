"""The core modules depend on each other one way: no import cycle.

What counts as an import: every ``import`` and ``from ... import`` statement of a
module in ``core/tablelog``, wherever it stands: at module level, inside a
function, or under ``if TYPE_CHECKING:``. A function-local import is a dependency
that only waits until the function is called, and a ``TYPE_CHECKING`` import still
ties a module to the other's names; both only hide a cycle from the interpreter's
import order (that is how ``table`` <-> ``reader``/``writer``/``log_pool`` went
unnoticed). ``from a.b import c`` is an edge to the module ``a.b.c`` when ``c`` is a
module, else to ``a.b``. The parent packages Python imports first are not edges: a
package's ``__init__`` that re-exports its submodules is a facade above them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import tablelog

CORE = Path(tablelog.__file__).parent


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def core_modules(root: Path) -> dict[str, Path]:
    return {module_name(path, root): path for path in sorted(root.rglob("*.py"))}


def imported_modules(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The core modules ``name`` imports anywhere in its source."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                found.add(submodule if submodule in modules else base)
    return {m for m in found if m in modules and m != name}


def module_graph(root: Path) -> dict[str, list[str]]:
    """Each core module and the core modules it imports."""
    modules = core_modules(root)
    return {name: sorted(imported_modules(name, path, modules)) for name, path in modules.items()}


def room_graph(root: Path) -> dict[str, list[str]]:
    """The same between the rooms of the core: its packages (``tablelog.store``,
    ``tablelog.cli``, …) and its top-level modules, each one node."""
    def room(name: str) -> str:
        return ".".join(name.split(".")[:2])

    edges: dict[str, set[str]] = {}
    for name, imported in module_graph(root).items():
        edges.setdefault(room(name), set()).update(room(m) for m in imported if room(m) != room(name))
    return {name: sorted(others) for name, others in edges.items()}


def import_cycle(root: Path, graph: dict[str, list[str]] | None = None) -> list[str] | None:
    """One cycle of the core's import graph (default: its modules') as a path ``[a, b, ..., a]``, or None."""
    graph = module_graph(root) if graph is None else graph
    state: dict[str, str] = {}  # "open" while on the current path, then "done"
    path: list[str] = []

    def visit(name: str) -> list[str] | None:
        state[name] = "open"
        path.append(name)
        for other in graph[name]:
            if state.get(other) == "open":
                return [*path[path.index(other):], other]
            if other not in state and (cycle := visit(other)) is not None:
                return cycle
        path.pop()
        state[name] = "done"
        return None

    for name in graph:
        if name not in state and (cycle := visit(name)) is not None:
            return cycle
    return None


def test_the_core_modules_import_each_other_without_a_cycle() -> None:
    cycle = import_cycle(CORE)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_core_packages_import_each_other_one_way() -> None:
    # A package is a layer: an arrow back up (the dashboard taking the CLI's JSON helpers
    # while the CLI draws the dashboard's figures) makes two layers one.
    cycle = import_cycle(CORE, room_graph(CORE))
    assert cycle is None, "import cycle between packages: " + " -> ".join(cycle or [])


def test_function_local_and_type_checking_imports_count_as_edges(tmp_path: Path) -> None:
    root = tmp_path / "pkg"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "top.py").write_text("def f():\n    from pkg.low import g\n")
    (root / "low.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import top\n")
    assert import_cycle(root) == ["pkg.low", "pkg.top", "pkg.low"]


PLUGINS = Path(__file__).resolve().parents[2] / "plugins"


def test_the_shipped_plugins_import_their_own_modules_without_a_cycle() -> None:
    for package in sorted(p for p in PLUGINS.glob("*/*") if (p / "__init__.py").exists()):
        cycle = import_cycle(package)
        assert cycle is None, f"import cycle in {package.name}: " + " -> ".join(cycle or [])
