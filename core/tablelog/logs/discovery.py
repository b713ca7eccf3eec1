"""Find log systems by name: entry points in the group ``tablelog.log_systems``.

An entry point names the plugin: a class whose methods are the hooks (the built-in
log systems: ``tablelog.logs.filesystem:FileLog``; each hook method takes the
connection, an instance of the class, as its first parameter, named ``connection``
as in the hook specs), or a module or object with ``@hookimpl`` functions. Each log
system gets its own pluggy plugin manager, so a hook call reaches the one
implementation the table's ``log.system`` names. Errors say what to install, the
way fsspec's known implementations do.

Hook wrappers (tracing, metrics) wrap the hook calls of every log system: objects or
modules with ``@hookimpl(wrapper=True)`` functions, registered with
:func:`register_hook_wrapper` or declared as entry points in the group
``tablelog.hook_wrappers``. They are added to each log system loaded afterwards.
"""

from __future__ import annotations

import importlib.metadata as metadata
import os
import sys
from collections.abc import Iterable
from typing import Any

import attrs
import pluggy

from tablelog import hookspecs
from tablelog.errors import PluginNotFoundError, PluginUnavailableError, TablelogError
from tablelog.logs.client import LogSystem
from tablelog.records import OptionSpec
from tablelog.redaction import declare_secret_keys, is_secret

ENTRY_POINT_GROUP = "tablelog.log_systems"
WRAPPER_ENTRY_POINT_GROUP = "tablelog.hook_wrappers"

#: Log systems that ship with tablelog behind an extra: name -> what to install.
KNOWN_EXTRAS = {
    "kafka": 'pip install "tablelog[kafka]"',
    "pulsar": 'pip install "tablelog[pulsar]"',
}

#: Hooks every log system must implement (marked ``@required`` in tablelog.hookspecs);
#: the others (option_specs, prefetch, fetch_values, wait_for_records, delete_before) are optional.
REQUIRED_HOOKS = hookspecs.required_hooks()

_registered: dict[str, Any] = {}

# Option prefixes already looked at by learn_declared_secrets (a log system whose
# declared secrets are known, or a prefix that names none): each is looked up once,
# since finding the installed log systems scans every distribution's metadata.
_prefixes_seen: set[str] = set()


def register_log_system(name: str, plugin: Any) -> None:
    """Register ``plugin`` (a module or object with hook implementations) as ``name``
    without packaging it: for tests and embedding. Entry points are the normal way."""
    _registered[name] = plugin
    _prefixes_seen.discard(name)


def unregister_log_system(name: str) -> None:
    _registered.pop(name, None)
    _prefixes_seen.discard(name)


# Hook wrappers registered in this process, and those of the entry points (loaded once).
_wrappers: list[Any] = []
_entry_point_wrappers: list[Any] | None = None


def register_hook_wrapper(wrapper: Any) -> None:
    """Wrap the hook calls of every log system loaded from now on with the
    ``@hookimpl(wrapper=True)`` functions of ``wrapper`` (a module or object): each is
    named after the hook it wraps, takes some of its arguments, and ``yield`` s to the
    call (the result, or the hook's exception, comes back out of the ``yield``).
    Connections opened before keep the hooks they had."""
    if not any(w is wrapper for w in _wrappers):
        _wrappers.append(wrapper)


def unregister_hook_wrapper(wrapper: Any) -> None:
    _wrappers[:] = [w for w in _wrappers if w is not wrapper]


def _hook_wrappers() -> list[Any]:
    """The registered wrappers, after those the ``tablelog.hook_wrappers`` entry points name."""
    global _entry_point_wrappers
    if _entry_point_wrappers is None:
        loaded = []
        for ep in sorted(metadata.entry_points(group=WRAPPER_ENTRY_POINT_GROUP), key=lambda ep: ep.name):
            try:
                loaded.append(ep.load())
            except (ImportError, AttributeError) as err:
                raise PluginUnavailableError(
                    f"hook wrapper {ep.name!r} ({ep.value}, entry point group "
                    f"{WRAPPER_ENTRY_POINT_GROUP!r}) cannot be loaded: {err}"
                ) from err
        _entry_point_wrappers = loaded
    return [*_entry_point_wrappers, *_wrappers]


@attrs.frozen
class Installed:
    """One log system as ``tablelog plugins`` lists it."""

    name: str
    distribution: str
    version: str
    module: str  # the entry point's module (the plugin is that module, or a class or object in it)
    error: str | None = None  # why it cannot be loaded (missing dependency...)


def _entry_points() -> dict[str, metadata.EntryPoint]:
    """The log systems' entry points. Finding them reads every installed distribution's
    metadata, which costs each reader and write task that opens a log more than its
    first records: they are found again only when ``sys.path`` or the modification time
    of one of its entries changed (an install or uninstall adds or removes a directory
    there), as Python's own path finder caches a directory's listing."""
    global _entry_points_found
    stamp = _path_stamp()
    found = _entry_points_found
    if found is None or found[0] != stamp:
        found = _entry_points_found = (stamp, {ep.name: ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)})
    return dict(found[1])


_entry_points_found: tuple[tuple[tuple[str, int], ...], dict[str, metadata.EntryPoint]] | None = None


def _path_stamp() -> tuple[tuple[str, int], ...]:
    stamp = []
    for entry in sys.path:
        try:
            stamp.append((entry, os.stat(entry or ".").st_mtime_ns))
        except OSError:  # not there (yet): found when it is
            stamp.append((entry, -1))
    return tuple(stamp)


def installed_log_systems() -> list[Installed]:
    """Every log system an entry point declares, with its distribution and whether it loads."""
    result = []
    for name, ep in sorted(_entry_points().items()):
        dist = ep.dist
        error = None
        try:
            ep.load()
        except (ImportError, AttributeError) as err:
            error = f"{err}; {KNOWN_EXTRAS.get(name, 'install its dependencies')}"
        result.append(
            Installed(
                name=name,
                distribution=dist.name if dist else "?",
                version=dist.version if dist else "?",
                module=ep.module,
                error=error,
            )
        )
    for name, plugin in sorted(_registered.items()):
        module = getattr(plugin, "__name__", type(plugin).__name__)
        result.append(Installed(name, "(registered in process)", "-", module))
    return result


def available_names() -> list[str]:
    return sorted({*_entry_points(), *_registered})


def known_names() -> list[str]:
    """The installed log systems and those that ship behind an extra (:data:`KNOWN_EXTRAS`):
    the option prefixes tablelog accepts (``kafka.*`` before ``tablelog[kafka]`` is installed)."""
    return sorted({*available_names(), *KNOWN_EXTRAS})


def client_logger_names() -> tuple[str, ...]:
    """The loggers of the installed log systems' client libraries: ``<package>.client`` of
    each entry point's top-level package (``tablelog_kafka.client``), by convention."""
    packages = {ep.value.split(":")[0].split(".")[0] for ep in _entry_points().values()}
    return tuple(sorted(f"{package}.client" for package in packages if package != "tablelog"))


def _load_plugin(name: str) -> Any:
    if name in _registered:
        return _registered[name]
    ep = _entry_points().get(name)
    if ep is None:
        installed = ", ".join(available_names()) or "none"
        hint = KNOWN_EXTRAS.get(name, f"install a package that provides the {name!r} log system")
        raise PluginNotFoundError(
            f"unknown log.system {name!r}; installed log systems: {installed}. To use {name!r}: {hint}"
        )
    try:
        return ep.load()
    # AttributeError: an entry point naming a class its module does not have (another
    # version of the distribution is importable than the one whose metadata is installed).
    except (ImportError, AttributeError) as err:
        hint = KNOWN_EXTRAS.get(name, "install its dependencies")
        raise PluginUnavailableError(
            f"log.system {name!r} is installed but cannot be loaded ({err}); {hint}"
        ) from err


def load_log_system(name: str) -> LogSystem:
    """The log system ``name`` (the ``log.system`` value), ready to open."""
    plugin = _load_plugin(name)
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    pm.register(plugin, name=name)
    for number, wrapper in enumerate(_hook_wrappers()):
        pm.register(wrapper, name=f"hook-wrapper-{number}")
    pm.check_pending()
    implemented = frozenset(
        hook for hook in hookspecs.hook_names()
        if any(not (i.wrapper or i.hookwrapper) for i in getattr(pm.hook, hook).get_hookimpls())
    )
    system = LogSystem(name, pm, implemented)
    # Even a plugin that fails the next checks keeps its secrets out of the error messages.
    specs = system.option_specs()
    declare_secret_keys(spec.key for spec in specs if spec.secret)
    missing = [h for h in REQUIRED_HOOKS if h not in implemented]
    if missing:
        raise PluginUnavailableError(
            f"log system {name!r} ({getattr(plugin, '__name__', plugin)!r}) does not implement "
            f"the required hooks: {', '.join(missing)}"
        )
    _check_declarations(name, specs)
    return system


def _check_declarations(name: str, specs: list[OptionSpec]) -> None:
    """Refuse ``names_topic`` and ``defines_table`` declarations the core could not honour."""
    def refuse(key: str, why: str) -> PluginUnavailableError:
        return PluginUnavailableError(f"log system {name!r} declares option {key!r} {why}; fix its option_specs()")

    naming = [spec.key for spec in specs if spec.names_topic and spec.key.startswith(name + ".")]
    if len(naming) > 1:
        raise refuse(naming[1], f"as naming the topic, as well as {naming[0]!r}: one option names the topic")
    for spec in specs:
        if spec.names_topic and spec.default is not None:
            raise refuse(spec.key, "as naming the topic, with a default: every table would share that topic; "
                                   "without the option the topic is derived from the table name")
        if spec.names_topic and not spec.defines_table:
            raise refuse(spec.key, "as naming the topic but not defining the table: the topic always defines it")
        if spec.defines_table and (spec.secret or is_secret(spec.key)):
            raise refuse(spec.key, "as defining the table, but it is a secret: secrets are never stored, "
                                   "so there is no value to compare")


def declared_options(name: str) -> list[OptionSpec]:
    """The options log system ``name`` declares with its prefix (another name's keys, of a
    plugin registered under two names, are not its options); none when it is not installed
    or cannot be loaded (using it fails later, with the reason). Kept per plugin object:
    loading a log system costs far more than finding its plugin, and a table's topic is
    asked for often."""
    try:
        plugin = _load_plugin(name)
        known = _declared.get(name)
        if known is None or known[0] is not plugin:
            known = _declared[name] = (plugin, load_log_system(name).option_specs())
    except TablelogError:
        return []
    return [spec for spec in known[1] if spec.key.startswith(name + ".")]


_declared: dict[str, tuple[Any, list[OptionSpec]]] = {}


def learn_declared_secrets(keys: Iterable[str]) -> None:
    """Load the installed log systems that own these option keys (by prefix), so that
    the keys they declare secret count as secrets (``is_secret``) before any value is
    stored, shown or put in an error message."""
    owners = {key.strip().lower().split(".", 1)[0] for key in keys if "." in key} - _prefixes_seen
    if not owners:
        return
    _prefixes_seen.update(owners)
    for name in sorted(owners & set(available_names())):
        try:
            load_log_system(name)
        except TablelogError:
            continue  # not loadable: using it fails later, with the reason
