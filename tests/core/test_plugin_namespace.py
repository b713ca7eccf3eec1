"""The plugin authors' namespace: one import (``tablelog.plugin``) for the plugins,
``tablelog.testing`` for their tests; every hook marked required or optional in one
place; one set of option-parsing helpers with one message for a bad value."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import tablelog
import tablelog.plugin
from tablelog import hookspecs
from tablelog.errors import OptionError
from tablelog.logs import discovery
from tablelog.plugin import bool_option, int_option, parse_int, seconds_option
from tablelog.records import LogConfig

ROOT = Path(__file__).resolve().parents[2]
PLUGIN_PACKAGES = [
    ROOT / "plugins" / "kafka" / "tablelog_kafka",
    ROOT / "plugins" / "pulsar" / "tablelog_pulsar",
    ROOT / "examples" / "redis-streams" / "tablelog_redis",
]
EXAMPLE_TESTS = ROOT / "examples" / "redis-streams" / "tests"
CORE = Path(tablelog.__file__).resolve().parent


def _tablelog_imports(source: Path) -> Iterator[tuple[int, str]]:
    """(line, what) for every import of ``tablelog`` or a module below it in ``source``,
    and every ``from tablelog import name``, as ``tablelog.name``."""
    for node in ast.walk(ast.parse(source.read_text(), str(source))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "tablelog" or alias.name.startswith("tablelog."):
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "tablelog":
                for alias in node.names:
                    yield node.lineno, f"tablelog.{alias.name}"
            elif node.module.startswith("tablelog."):
                yield node.lineno, node.module


def _attributes_of_tablelog(source: Path) -> Iterator[tuple[int, str]]:
    """(line, name) for every ``tablelog.<name>`` in ``source``."""
    for node in ast.walk(ast.parse(source.read_text(), str(source))):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "tablelog":
            yield node.lineno, node.attr


@pytest.mark.parametrize("package", PLUGIN_PACKAGES, ids=lambda p: p.name)
def test_a_plugin_imports_nothing_from_tablelog_but_tablelog_plugin(package: Path) -> None:
    sources = sorted(package.glob("*.py"))
    assert sources, f"no sources in {package}"
    outside = [
        f"{source.relative_to(ROOT)}:{line} imports {module}"
        for source in sources
        for line, module in _tablelog_imports(source)
        if module != "tablelog.plugin"
    ]
    assert outside == []


@pytest.mark.parametrize(
    "source",
    [CORE / "testing" / "memory_log.py", *sorted((CORE / "logs" / "filesystem").glob("*.py"))],
    ids=lambda p: str(p.relative_to(CORE)),
)
def test_the_built_in_log_systems_import_nothing_from_tablelog_but_tablelog_plugin(
    source: Path,
) -> None:
    outside = [
        f"{source.relative_to(ROOT)}:{line} imports {module}"
        for line, module in _tablelog_imports(source)
        if module != "tablelog.plugin"
    ]
    assert outside == []


def test_the_example_plugins_tests_use_only_tablelog_plugin_tablelog_testing_and_the_user_api() -> None:
    sources = sorted(EXAMPLE_TESTS.glob("*.py"))
    assert sources
    public = set(tablelog.__all__)
    outside = [
        f"{source.relative_to(ROOT)}:{line} imports {module}"
        for source in sources
        for line, module in _tablelog_imports(source)
        if module not in ("tablelog", "tablelog.plugin", "tablelog.testing")
        and not module.startswith("tablelog.testing.")
        and module.removeprefix("tablelog.") not in public
    ]
    outside += [
        f"{source.relative_to(ROOT)}:{line} uses tablelog.{name}"
        for source in sources
        for line, name in _attributes_of_tablelog(source)
        if name not in public
    ]
    assert outside == []


def test_tablelog_plugin_offers_every_name_it_lists() -> None:
    missing = [name for name in tablelog.plugin.__all__ if not hasattr(tablelog.plugin, name)]
    assert missing == []


def test_every_hook_is_marked_required_or_optional_and_its_docstring_says_which() -> None:
    names = hookspecs.hook_names()
    assert set(names) == {
        "option_specs", "open_log", "close_log", "ensure_topic", "produce", "flush",
        "end_positions", "seek", "fetch", "prefetch", "fetch_values", "wait_for_records", "delete_before",
        "commit",
    }
    for name in names:
        spec = getattr(hookspecs, name)
        word = "Required." if getattr(spec, hookspecs.REQUIRED_MARK) else "Optional (without it: "
        assert spec.__doc__.startswith(word), name


def test_the_registry_requires_exactly_the_hooks_marked_required() -> None:
    assert hookspecs.required_hooks() == discovery.REQUIRED_HOOKS
    assert set(hookspecs.hook_names()) - set(discovery.REQUIRED_HOOKS) == {
        "option_specs", "prefetch", "fetch_values", "wait_for_records", "delete_before"
    }


# ---------------------------------------------------------------------- option parsing


def test_an_integer_option_out_of_range_names_the_full_key_the_value_and_the_range() -> None:
    with pytest.raises(OptionError) as raised:
        int_option({"batch-size": "0"}, "batch-size", 10, minimum=1, maximum=99, prefix="mylog.")
    assert str(raised.value) == (
        "invalid value '0' for option 'mylog.batch-size': expected an integer >= 1 and <= 99"
    )
    with pytest.raises(OptionError, match="invalid value 'ten' for option 'mylog.batch-size'"):
        int_option({"batch-size": "ten"}, "batch-size", 10, minimum=1, prefix="mylog.")


def test_an_option_that_is_not_given_gets_its_default() -> None:
    assert int_option({}, "batch-size", 10, minimum=1) == 10
    assert bool_option({}, "tls", True) is True
    assert seconds_option({}, "timeout-ms", 1500) == 1.5
    assert seconds_option({"timeout-ms": " 250 "}, "timeout-ms", 1500) == 0.25


def test_a_bad_boolean_option_says_what_is_allowed() -> None:
    assert bool_option({"tls": "Yes"}, "tls", False) is True
    with pytest.raises(OptionError) as raised:
        bool_option({"tls": "maybe"}, "tls", False, prefix="mylog.")
    assert str(raised.value) == "invalid value 'maybe' for option 'mylog.tls': allowed: 'true', 'false'"


def test_a_bad_value_of_a_secret_option_is_never_shown() -> None:
    with pytest.raises(OptionError) as raised:
        int_option({"password": "hunter2"}, "password", 0, minimum=0, prefix="mylog.")
    assert "hunter2" not in str(raised.value)
    assert "'******'" in str(raised.value)


def test_parse_int_accepts_surrounding_blanks_and_ints() -> None:
    assert parse_int(" 42 ", 0) == 42
    assert parse_int(7, 0) == 7


def test_tablelog_and_both_shipped_plugins_word_a_bad_integer_option_the_same_way() -> None:
    from tablelog.options import TableOptions
    from tablelog_kafka.config import parse_settings as parse_kafka
    from tablelog_pulsar.config import parse_config as parse_pulsar

    messages = []
    with pytest.raises(OptionError) as raised:
        TableOptions.parse({"log.flush-timeout-ms": "0"})
    messages.append(str(raised.value))
    kafka = LogConfig("kafka", "db.t", "t", 1, True, {"bootstrap.servers": "h:9092", "admin-timeout-ms": "0"})
    with pytest.raises(OptionError) as raised:
        parse_kafka(kafka)
    messages.append(str(raised.value))
    pulsar = LogConfig("pulsar", "db.t", "t", 1, True, {"service-url": "pulsar://h:6650", "io-threads": "0"})
    with pytest.raises(OptionError) as raised:
        parse_pulsar(pulsar)
    messages.append(str(raised.value))
    assert messages == [
        "invalid value '0' for option 'log.flush-timeout-ms': expected an integer >= 1",
        "invalid value '0' for option 'kafka.admin-timeout-ms': expected an integer >= 1",
        "invalid value '0' for option 'pulsar.io-threads': expected an integer >= 1",
    ]


def test_the_plugin_guide_documents_every_name_of_tablelog_plugin() -> None:
    guide = (ROOT / "docs" / "plugins.md").read_text()
    missing = [name for name in tablelog.plugin.__all__ if f"`{name}" not in guide]
    assert missing == [], f"docs/plugins.md does not document {missing}"
