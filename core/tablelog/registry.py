"""Find log systems by name: entry points in the group ``tablelog.log_systems``.

Each log system gets its own pluggy plugin manager, so a hook call reaches the one
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
import time
from collections.abc import Iterable
from typing import Any

import attrs
import pluggy

from tablelog import hookspecs
from tablelog.errors import PluginNotFoundError, PluginUnavailableError, TablelogError
from tablelog.options import declare_secret_keys, is_secret
from tablelog.records import (
    CommittedLog,
    FetchResult,
    LogConfig,
    OptionSpec,
    ProduceBatch,
    ProducedRange,
    SeekSpec,
    ValuesResult,
)

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

#: How often :meth:`LogClient.wait_for_records` looks at the end positions while it waits,
#: for a log system without the ``wait_for_records`` hook: one ``end_positions`` call for
#: all the partitions per look, so that an idle reader's calls do not grow with them.
#: It is also the most that waiting adds to a record's latency there.
IDLE_LOOK_S = 0.1

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
            except ImportError as err:
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
    module: str
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
        except ImportError as err:
            error = f"{err}; {KNOWN_EXTRAS.get(name, 'install its dependencies')}"
        result.append(
            Installed(
                name=name,
                distribution=dist.name if dist else "?",
                version=dist.version if dist else "?",
                module=ep.value,
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
    except ImportError as err:
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


@attrs.define
class LogSystem:
    """A loaded log system: typed access to its hooks."""

    name: str
    pm: pluggy.PluginManager
    #: The hooks the log system implements itself (hook wrappers not counted).
    implemented: frozenset[str] = frozenset(hookspecs.hook_names())

    def option_specs(self) -> list[OptionSpec]:
        if "option_specs" not in self.implemented:
            return []
        return list(self.pm.hook.option_specs() or [])

    def with_defaults(self, config: LogConfig) -> LogConfig:
        """``config`` with the declared default of every option it does not set
        (``OptionSpec.default``; keys without the prefix, as ``LogConfig.options``)."""
        prefix = self.name + "."
        defaults = {
            spec.key[len(prefix):]: spec.default
            for spec in self.option_specs()
            if spec.default is not None and spec.key.startswith(prefix)
        }
        missing = {key: value for key, value in defaults.items() if key not in config.options}
        return attrs.evolve(config, options={**missing, **config.options}) if missing else config

    def open(self, config: LogConfig) -> LogClient:
        """Open the log; the plugin receives its declared defaults for options not given."""
        config = self.with_defaults(config)
        connection = self.pm.hook.open_log(config=config)
        if connection is None:
            raise PluginUnavailableError(f"log system {self.name!r} returned no connection")
        return LogClient(self, config, connection)


@attrs.define
class LogClient:
    """An open connection to one table's log; each method calls one hook."""

    system: LogSystem
    config: LogConfig
    connection: Any
    closed: bool = False

    @property
    def _hook(self) -> Any:
        return self.system.pm.hook

    def ensure_topic(self) -> int:
        return int(self._hook.ensure_topic(connection=self.connection))

    def produce(self, batch: ProduceBatch) -> None:
        self._hook.produce(connection=self.connection, batch=batch)

    def flush(self, timeout_s: float) -> list[ProducedRange]:
        return list(self._hook.flush(connection=self.connection, timeout_s=timeout_s) or [])

    def end_positions(self, partitions: list[int]) -> dict[int, int]:
        return dict(self._hook.end_positions(connection=self.connection, partitions=partitions))

    def seek(self, partition: int, spec: SeekSpec) -> int:
        return int(self._hook.seek(connection=self.connection, partition=partition, spec=spec))

    def fetch(self, partition: int, position: int, max_records: int, timeout_s: float) -> FetchResult:
        result: FetchResult = self._hook.fetch(
            connection=self.connection,
            partition=partition,
            position=position,
            max_records=max_records,
            timeout_s=timeout_s,
        )
        return result

    def prefetch(self, positions: dict[int, int]) -> None:
        if positions and "prefetch" in self.system.implemented:
            self._hook.prefetch(connection=self.connection, positions=positions)

    @property
    def fetches_values(self) -> bool:
        """Whether the log system implements the optional ``fetch_values`` hook."""
        return "fetch_values" in self.system.implemented

    def fetch_values(self, partition: int, position: int, max_records: int, timeout_s: float) -> ValuesResult:
        """``fetch_values`` where the log system has it, else ``fetch`` without the metadata."""
        if self.fetches_values:
            result: ValuesResult = self._hook.fetch_values(
                connection=self.connection, partition=partition, position=position,
                max_records=max_records, timeout_s=timeout_s,
            )
            return result
        fetched = self.fetch(partition, position, max_records, timeout_s)
        return ValuesResult(
            [r.value for r in fetched.records], [r.position for r in fetched.records], fetched.next_position
        )

    @property
    def waits_for_records(self) -> bool:
        """Whether the log system implements the optional ``wait_for_records`` hook."""
        return "wait_for_records" in self.system.implemented

    def wait_for_records(self, positions: dict[int, int], timeout_s: float) -> list[int]:
        """The partitions of ``positions`` that have a record at or after their position,
        sorted, once one has or ``timeout_s`` passed (``[]``). Without the hook: the end
        positions of all of them, looked at every :data:`IDLE_LOOK_S`; a partition whose
        end is not its position is returned (a record is there, or the position is not in
        the log and ``fetch`` reports it)."""
        if not positions:
            time.sleep(max(0.0, timeout_s))
            return []
        if self.waits_for_records:
            ready = self._hook.wait_for_records(
                connection=self.connection, positions=positions, timeout_s=max(0.0, timeout_s))
            return sorted(p for p in set(ready or ()) if p in positions)
        deadline = time.monotonic() + timeout_s
        partitions = sorted(positions)
        while True:
            ends = self.end_positions(partitions)
            ready = [p for p in partitions if ends[p] != positions[p]]
            remaining = deadline - time.monotonic()
            if ready or remaining <= 0:
                return ready
            time.sleep(min(IDLE_LOOK_S, remaining))

    @property
    def deletes_before(self) -> bool:
        """Whether the log system implements the optional ``delete_before`` hook."""
        return "delete_before" in self.system.implemented

    def delete_before(self, positions: dict[int, int]) -> dict[int, int] | None:
        """``delete_before`` where the log system has it (the earliest positions it now
        holds); None where its own retention decides."""
        if not positions or not self.deletes_before:
            return None
        result: dict[int, int] = self._hook.delete_before(connection=self.connection, positions=positions)
        return result

    def commit(self, committed: CommittedLog) -> None:
        self._hook.commit(connection=self.connection, committed=committed)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._hook.close_log(connection=self.connection)

    def __enter__(self) -> LogClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
