"""Plugin discovery: entry points, clear errors that say what to install."""

import subprocess
import sys
from pathlib import Path

import pytest

from tablelog.errors import PluginNotFoundError, PluginUnavailableError
from tablelog.logs import discovery
from tablelog.records import LogConfig, ProduceBatch, SeekSpec


def test_builtin_filesystem_log_is_discovered_through_the_entry_point_group() -> None:
    names = {item.name: item for item in discovery.installed_log_systems()}
    assert names["filesystem"].distribution == "tablelog"
    assert names["filesystem"].error is None
    assert discovery.load_log_system("filesystem").name == "filesystem"


def test_unknown_log_system_lists_the_installed_ones() -> None:
    with pytest.raises(PluginNotFoundError) as err:
        discovery.load_log_system("rabbitmq")
    message = str(err.value)
    assert "unknown log.system 'rabbitmq'" in message
    assert "filesystem" in message and "kafka" in message


def test_kafka_without_its_extra_says_what_to_pip_install() -> None:
    # Block the client library in a fresh interpreter, as if the extra were not installed.
    script = (
        "import sys; sys.modules['confluent_kafka'] = None\n"
        "from tablelog.logs import discovery\n"
        "try:\n    discovery.load_log_system('kafka')\n"
        "except Exception as err:\n    print(type(err).__name__, err)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.startswith("PluginUnavailableError")
    assert 'pip install "tablelog[kafka]"' in out


def test_plugin_missing_required_hooks_is_refused_with_their_names() -> None:
    class HalfPlugin:
        from tablelog.hookspecs import hookimpl

        @hookimpl
        def open_log(self, config):  # type: ignore[no-untyped-def]
            return object()

    discovery.register_log_system("half", HalfPlugin())
    try:
        with pytest.raises(PluginUnavailableError, match="does not implement the required hooks: close_log"):
            discovery.load_log_system("half")
    finally:
        discovery.unregister_log_system("half")


def test_cli_error_keeps_the_bracketed_extra_in_the_install_hint(tmp_path) -> None:  # type: ignore[no-untyped-def]
    script = (
        "import sys; sys.modules['confluent_kafka'] = None\n"
        "from tablelog.cli import main\n"
        "sys.argv = ['tablelog', 'create', '-w', sys.argv[1], 'db.t', '--schema', 'id bigint',\n"
        "            '-o', 'log.system=kafka', '-o', 'kafka.bootstrap.servers=127.0.0.1:1']\n"
        "main()\n"
    )
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True)
    assert result.returncode == 1
    assert 'pip install "tablelog[kafka]"' in result.stderr


def test_a_log_system_installed_while_the_process_runs_is_found_by_the_next_lookup(tmp_path) -> None:  # type: ignore[no-untyped-def]
    site = tmp_path / "site"
    site.mkdir()
    sys.path.insert(0, str(site))
    try:
        assert "tl_late" not in discovery.available_names()  # looked up (and remembered) before the install
        (site / "tl_late-0.1.dist-info").mkdir()
        (site / "tl_late-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: tl-late\nVersion: 0.1\n")
        (site / "tl_late-0.1.dist-info" / "entry_points.txt").write_text(
            "[tablelog.log_systems]\ntl_late = tablelog.logs.filesystem\n")
        assert "tl_late" in discovery.available_names()
    finally:
        sys.path.remove(str(site))
    assert "tl_late" not in discovery.available_names()


#: Options under which each shipped log system opens without I/O (nothing listens there).
_OPENS_OFFLINE = {
    "filesystem": {},
    "kafka": {"bootstrap.servers": "127.0.0.1:9"},
    "pulsar": {"service-url": "pulsar://127.0.0.1:9"},
}


@pytest.mark.parametrize("name", sorted(_OPENS_OFFLINE))
def test_a_shipped_log_systems_hooks_are_the_methods_of_its_connection_class_with_no_forwarder(
    name: str, tmp_path: Path
) -> None:
    system = discovery.load_log_system(name)
    plugin = system.pm.get_plugin(name)
    assert isinstance(plugin, type), f"the {name} entry point names {plugin!r}, not a class"
    for hook in system.implemented:
        (impl,) = [i for i in getattr(system.pm.hook, hook).get_hookimpls() if not (i.wrapper or i.hookwrapper)]
        own = getattr(plugin, hook)
        # What pluggy calls is the class's own function, not a module-level function calling it.
        assert getattr(impl.function, "__func__", impl.function) is getattr(own, "__func__", own), hook
    config = LogConfig(name, "db.t", "t", 1, True, _OPENS_OFFLINE[name], str(tmp_path))
    with system.open(config) as client:
        assert isinstance(client.connection, plugin)


def _site_with_entry_point(tmp_path: Path, name: str, value: str) -> Path:
    """A site directory (not on ``sys.path`` yet) with a distribution ``name`` whose
    ``tablelog.log_systems`` entry point ``name`` is ``value``."""
    site = tmp_path / "site"
    info = site / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[tablelog.log_systems]\n{name} = {value}\n")
    return site


_MODULE_STYLE_PLUGIN = '''
"""A log system as a module of @hookimpl functions (the style before plugin classes)."""
from tablelog.logs.filesystem import FileLog
from tablelog.plugin import hookimpl


@hookimpl
def open_log(config):
    return FileLog(config)


@hookimpl
def close_log(connection):
    FileLog.close_log(connection)


@hookimpl
def ensure_topic(connection):
    return FileLog.ensure_topic(connection)


@hookimpl
def produce(connection, batch):
    FileLog.produce(connection, batch)


@hookimpl
def flush(connection, timeout_s):
    return FileLog.flush(connection)


@hookimpl
def end_positions(connection, partitions):
    return FileLog.end_positions(connection, partitions)


@hookimpl
def seek(connection, partition, spec):
    return FileLog.seek(connection, partition, spec)


@hookimpl
def fetch(connection, partition, position, max_records, timeout_s):
    return FileLog.fetch(connection, partition, position, max_records, timeout_s)


@hookimpl
def commit(connection, committed):
    pass
'''


def test_a_module_of_hookimpl_functions_named_by_an_entry_point_still_loads(tmp_path: Path) -> None:
    site = _site_with_entry_point(tmp_path, "tl_modlog", "tl_modlog")
    (site / "tl_modlog.py").write_text(_MODULE_STYLE_PLUGIN)
    sys.path.insert(0, str(site))
    try:
        (listed,) = [item for item in discovery.installed_log_systems() if item.name == "tl_modlog"]
        assert (listed.distribution, listed.module, listed.error) == ("tl-modlog", "tl_modlog", None)
        config = LogConfig("tl_modlog", "db.t", "t", 1, True, {}, str(tmp_path / "wh"))
        with discovery.load_log_system("tl_modlog").open(config) as client:
            assert client.ensure_topic() == 1
            client.produce(ProduceBatch("tok", 0, [None, b"k"], [b"a", b"b"], 0))
            (produced,) = client.flush(5)
            fetched = client.fetch(0, client.seek(0, SeekSpec.earliest()), 10, 1)
        assert [r.value for r in fetched.records] == [b"a", b"b"] and produced.count == 2
    finally:
        sys.path.remove(str(site))
        sys.modules.pop("tl_modlog", None)


def test_an_entry_point_naming_a_class_its_module_lacks_is_listed_unavailable_and_refused_with_why(
    tmp_path: Path,
) -> None:
    site = _site_with_entry_point(tmp_path, "tl_gone", "tablelog.logs.filesystem:NoSuchLog")
    sys.path.insert(0, str(site))
    try:
        (listed,) = [item for item in discovery.installed_log_systems() if item.name == "tl_gone"]
        assert listed.module == "tablelog.logs.filesystem" and "NoSuchLog" in (listed.error or "")
        with pytest.raises(PluginUnavailableError, match="log.system 'tl_gone' is installed but cannot be loaded"):
            discovery.load_log_system("tl_gone")
    finally:
        sys.path.remove(str(site))
