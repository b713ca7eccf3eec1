"""A loaded log system and an open connection to one table's log: the core's typed
access to the ``LogSystem`` hooks (:mod:`tablelog.hookspecs`), with the fallbacks of the
optional ones. :mod:`tablelog.logs.discovery` finds and loads the log systems."""

from __future__ import annotations

import time
from typing import Any

import attrs
import pluggy

from tablelog import hookspecs
from tablelog.errors import PluginUnavailableError
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

#: How often :meth:`LogClient.wait_for_records` looks at the end positions while it waits,
#: for a log system without the ``wait_for_records`` hook: one ``end_positions`` call for
#: all the partitions per look, so that an idle reader's calls do not grow with them.
#: It is also the most that waiting adds to a record's latency there.
IDLE_LOOK_S = 0.1


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
