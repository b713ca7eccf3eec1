"""Plugin discovery: entry points, clear errors that say what to install."""

import subprocess
import sys

import pytest

from tablelog.errors import PluginNotFoundError, PluginUnavailableError
from tablelog.logs import discovery


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
