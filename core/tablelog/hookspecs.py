"""The LogSystem hooks: what a log system (Kafka, Pulsar, the built-in file log, a
third-party plugin) implements so that tablelog can double-write a table's changelog.

A log system is a class whose ``@hookimpl`` methods are the hooks, and whose instances
are the connections ``open_log`` returns (``open_log`` a classmethod, ``option_specs``
a staticmethod; the other methods name their first parameter ``connection``, as the
specs below do, since pluggy passes arguments by name), or a module (or object) with
``@hookimpl`` functions. It is published under the entry-point group
``tablelog.log_systems``; the entry-point name is the value users put in ``log.system``.
Each log system gets a plugin manager of its own, so a hook call reaches exactly one
implementation (plus any hook wrappers someone registers for tracing or metrics:
:func:`tablelog.logs.discovery.register_hook_wrapper`, or an entry point in the group
``tablelog.hook_wrappers``).

The lifecycle, as the core drives it::

    conn = open_log(config)                 # once per process and table
    ensure_topic(conn)                      # writers, before the first produce
    produce(conn, batch) ...                # many, asynchronous
    flush(conn, timeout_s) -> ranges        # durable: only now may a commit reference them
    ... table snapshot committed by the core ...
    commit(conn, committed)                 # after the snapshot, idempotent
    end_positions / seek / fetch            # readers
    prefetch / fetch_values                 # readers, optional: faster reads
    wait_for_records(conn, positions, t)    # idle eventual readers, optional: one wait for all partitions
    delete_before(conn, positions)          # optional: retention the core drives
    close_log(conn)

Visibility is decided by the table snapshot, never by the log system: a plugin
needs no broker transactions. It must keep per-partition order and carry each
record's writer token and sequence number (``ProduceBatch.token``/``first_seq``)
so that ``fetch`` can return them.

Every hook raises only :class:`tablelog.errors.LogSystemError` subclasses for
conditions of the log; programming errors may raise anything. The same condition
gets the same error class from every hook:

* the log cannot be reached (connection refused, no broker up, authentication or
  TLS failed, a storage path that cannot be accessed):
  :class:`~tablelog.errors.LogUnavailableError`, naming the address where the
  plugin knows it, from whichever hook found out (``flush`` included);
* a missing topic or partition: :class:`~tablelog.errors.TopicError`, naming it;
* records the log refused or did not acknowledge in time while reachable:
  :class:`~tablelog.errors.ProduceError`, naming topic and partition;
* a position the log does not have: :class:`~tablelog.errors.PositionOutOfRangeError`.

Required and optional hooks: each spec is marked ``@required`` or ``@optional(...)``
(which also starts its docstring with "Required." or "Optional (without it: ...).").
A log system must implement every required hook (:func:`required_hooks`, checked
when it is loaded); the optional ones have a fallback in the core. The conformance
suite (:class:`tablelog.testing.LogSystemConformance`) checks these contracts.

Long because: the hook specs are one flat module, as the design asks (like datasette's
``hookspecs.py``), each hook with the docstring that is its contract.
"""

# mypy: disable-error-code="empty-body"

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

import pluggy

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

PROJECT = "tablelog"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

#: What ``open_log`` returns and every other hook receives: the plugin's own state.
Connection = Any

_Spec = TypeVar("_Spec", bound=Callable[..., Any])

#: The attribute that marks a hook spec required (True) or optional (False).
REQUIRED_MARK = "tablelog_required"


def required(spec: _Spec) -> _Spec:
    """Mark a hook spec required: a log system without it is refused when loaded."""
    setattr(spec, REQUIRED_MARK, True)
    spec.__doc__ = "Required. " + (spec.__doc__ or "")
    return spec


def optional(fallback: str) -> Callable[[_Spec], _Spec]:
    """Mark a hook spec optional; ``fallback`` says what the core does without it."""

    def mark(spec: _Spec) -> _Spec:
        setattr(spec, REQUIRED_MARK, False)
        spec.__doc__ = f"Optional (without it: {fallback}). " + (spec.__doc__ or "")
        return spec

    return mark


def hook_names() -> tuple[str, ...]:
    """Every hook a log system may implement, in the order they are declared here."""
    module = sys.modules[__name__]
    return tuple(name for name, value in vars(module).items() if hasattr(value, REQUIRED_MARK))


def required_hooks() -> tuple[str, ...]:
    """The hooks every log system must implement (marked ``@required``)."""
    module = sys.modules[__name__]
    return tuple(name for name in hook_names() if getattr(getattr(module, name), REQUIRED_MARK))


@optional("no declared options")
@hookspec(firstresult=True)
def option_specs() -> list[OptionSpec]:
    """Declare the options this log system understands (full keys, with prefix).

    Used to check required options before anything is written, to list them in
    ``tablelog options`` and the docs. An option with a ``default`` that the user
    does not give reaches ``open_log`` with that default (as ``LogConfig.options``
    does: prefix removed), so the default shown is the one used. Keys with the
    system's prefix that are not declared still reach the plugin (they are client
    settings). ``names_topic`` marks the option naming where a topic's records are
    stored (each further stream of the table, such as the projection stream, gets it
    with the stream's suffix), ``defines_table`` the options the table's records depend
    on (refused when a table is opened with another value). Must not do I/O.
    """


@required
@hookspec(firstresult=True)
def open_log(config: LogConfig) -> Connection:
    """Connect to the log for one table and return a connection object.

    Must validate ``config.options`` and raise
    :class:`~tablelog.errors.OptionError` naming the key for a missing or
    malformed one, before any network I/O. May connect lazily. The connection is
    used by one thread at a time. Raises
    :class:`~tablelog.errors.LogUnavailableError` when the log cannot be reached
    within the configured time-out.
    """


@required
@hookspec
def close_log(connection: Connection) -> None:
    """Release the connection. Records produced but not flushed may be lost.

    Idempotent: closing twice is allowed.
    """


@required
@hookspec(firstresult=True)
def ensure_topic(connection: Connection) -> int:
    """Make sure the topic exists with at least ``config.partitions`` partitions.

    Creates a missing topic with exactly ``config.partitions`` partitions when
    ``config.auto_register`` is true. A log that cannot tell a missing topic from
    an empty one may keep its own metadata record (the Pulsar plugin does). Returns the topic's partition count.
    Raises :class:`~tablelog.errors.TopicError` when the topic is missing and may
    not be created, or has fewer partitions than the table needs (the message
    names both counts). Raises :class:`~tablelog.errors.LogUnavailableError`, not
    ``TopicError``, when the log cannot be reached: an outage is not a missing topic.
    Idempotent.
    """


@required
@hookspec(firstresult=True)
def produce(connection: Connection, batch: ProduceBatch) -> None:
    """Send ``batch`` to partition ``batch.partition``, asynchronously.

    Records keep their order within the partition and carry ``batch.token`` and
    their sequence numbers so that ``fetch`` returns them. Nothing is durable
    when this returns; a delivery error may be raised here or by the next
    ``flush``, with the classes ``flush`` uses. May block while the client's
    buffer is full.
    """


@required
@hookspec(firstresult=True)
def flush(connection: Connection, timeout_s: float) -> list[ProducedRange]:
    """Wait until every record produced since the last ``flush`` is durable.

    Durable means acknowledged by the log as the client's strongest setting
    allows (Kafka ``acks=all``): a commit may now reference these records.
    Returns one :class:`~tablelog.records.ProducedRange` per (token, partition)
    produced since the last flush, with the first and last position and the
    count, and ``contiguous=True`` only where the plugin knows that no other
    record lies between first and last (readers then trust every record there
    without reading its token; when unsure, leave it False).

    Raises, and then the caller commits nothing for this attempt:

    * :class:`~tablelog.errors.LogUnavailableError` when the records are not durable
      because the log could not be reached (no broker up, connection refused,
      authentication failed) within ``timeout_s``: an outage, worth retrying later;
    * :class:`~tablelog.errors.ProduceError` naming topic and partition when the log
      was reachable and any record failed (refused, too large, a missing partition)
      or was not acknowledged within ``timeout_s``.

    The time-out is best effort where the storage cannot be interrupted (an ``fsync``).
    """


@required
@hookspec(firstresult=True)
def end_positions(connection: Connection, partitions: list[int]) -> dict[int, int]:
    """Return each partition's end position: the position the next record
    will get (an exclusive upper bound of the positions written so far), one entry per
    requested partition.

    A partition the topic does not have (or a missing topic) raises
    :class:`~tablelog.errors.TopicError` naming the partition: never a made-up 0, which
    would let a reader or a commit treat a missing partition as an empty one.
    """


@required
@hookspec(firstresult=True)
def seek(connection: Connection, partition: int, spec: SeekSpec) -> int:
    """Resolve ``spec`` to a concrete position to ``fetch`` from.

    ``EARLIEST``: the first position still in the log. ``LATEST``: the end
    position. ``TIMESTAMP``: the first record with timestamp >= the given
    epoch-millis, or the end position when there is none (never the start of
    the partition). ``POSITION``: the position itself, unchanged, when it is the
    position of a record the log still holds or the end position (a reader that
    saved the end waits there for the next record); anything else raises
    :class:`~tablelog.errors.PositionOutOfRangeError`: a position below the earliest
    (negative, or removed by retention), past the end, or between records.
    A partition the topic does not have raises :class:`~tablelog.errors.TopicError`.
    """


@required
@hookspec(firstresult=True)
def fetch(
    connection: Connection, partition: int, position: int, max_records: int, timeout_s: float
) -> FetchResult:
    """Return up to ``max_records`` records of ``partition`` at positions >= ``position``,
    in log order, waiting at most ``timeout_s`` for the first one. Records a
    broker redelivers are the plugin's to drop: positions only grow.

    An empty result is not an error (nothing new yet). Raises
    :class:`~tablelog.errors.PositionOutOfRangeError` when ``position`` is before
    the earliest record the log still holds (retention, a lost topic), past the
    end, or not the position of a record. Never returns a torn or corrupt record
    as data: the records before it are returned, and a fetch that starts at it
    raises :class:`~tablelog.errors.CorruptRecordError` naming the position.
    """


@optional("no hint")
@hookspec(firstresult=True)
def prefetch(connection: Connection, positions: dict[int, int]) -> None:
    """A hint: ``fetch`` (or ``fetch_values``) will soon be called for each of these
    partitions at these positions.

    A transactional reader gives it at the start of every snapshot, then reads
    the partitions one after the other. A log client that fetches ahead can
    start on all of them at once instead of paying a round trip per partition
    switch (the Kafka plugin assigns and positions every partition). Ignoring
    the hint is always correct; it must not raise for a position that turns out
    not to exist (the fetch will report that) and must not return records.
    """


@optional("the core calls ``fetch``")
@hookspec(firstresult=True)
def fetch_values(
    connection: Connection, partition: int, position: int, max_records: int, timeout_s: float
) -> ValuesResult:
    """Like ``fetch``, but return only each record's value and position.

    The reader calls it only for spans of the log it knows hold committed records
    and nothing else (a committed range whose count equals its length), where the
    token, sequence number, key and timestamp of every record are not needed, and
    reading them is most of a client's per-record cost (Kafka headers). Same
    positions, order, waiting, errors and redelivery rules as ``fetch``. A log
    system without it is read with ``fetch``.
    """


@optional(
    "an idle reader of several partitions asks ``end_positions`` of all of them at once, "
    "every ``tablelog.logs.client.IDLE_LOOK_S`` (0.1 s)"
)
@hookspec(firstresult=True)
def wait_for_records(connection: Connection, positions: dict[int, int], timeout_s: float) -> list[int]:
    """Wait at most ``timeout_s`` until at least one partition of ``positions`` has a record
    at or after its position; return every such partition (``[]`` when the time ran out).
    ``timeout_s=0`` looks without waiting.

    An eventual reader of several partitions calls it with all of them, then fetches only
    the ones returned: one call waits on all of them, so that an idle reader costs the log
    one call per ``poll``, however many partitions it reads (Redis ``XREAD BLOCK`` on several
    streams, a Kafka consumer assigned to every partition, a database's ``LISTEN``).
    It must not take records away from ``fetch``: a record it received while waiting is
    returned by the next ``fetch`` at that position (keep it for that fetch). A position
    at the end of its partition is the usual case. A partition whose position the log no
    longer holds or never held (deleted, past the end) may be returned, so that ``fetch``
    reports it: this hook never raises :class:`~tablelog.errors.PositionOutOfRangeError`.
    Other errors as ``fetch`` (an unreachable log, a missing partition).
    """


@optional("the log keeps records until its own retention removes them")
@hookspec(firstresult=True)
def delete_before(connection: Connection, positions: dict[int, int]) -> dict[int, int]:
    """Delete, in each partition of ``positions``, records before its position, at the
    grain the log deletes at: whole units (the file log's segment files, never the one
    writers append to) or single records (a database table, Kafka's ``DeleteRecords``);
    never a record at or after the position. Return, for those partitions, the earliest
    position the log still holds (what ``seek`` to the earliest returns from then on).

    The core calls it after commits with, per partition, the earliest position still
    needed: by a retained snapshot (or registered reader), and by every write attempt
    not committed yet whose writer is live (it holds a lease naming the log's end
    before its first produce, refreshed at its flushes, for ``log.writer.expiration-time``).
    So a log may delete at any grain: it is never asked to delete records a live writer
    flushed and may still commit. That rests on positions growing with time: a record
    produced after ``end_positions`` returned E lies at or after E. For a log with its
    own retention (a broker's time or size limits) leave it out: its writers then write
    no leases. A fetch of a deleted position raises
    :class:`~tablelog.errors.PositionOutOfRangeError`. Idempotent; safe while other
    processes append and read.
    """


@required
@hookspec
def commit(connection: Connection, committed: CommittedLog) -> None:
    """A no-op is a valid implementation. Called after the table snapshot
    ``committed.snapshot_id`` is durable.

    Visibility is already decided by the snapshot; use this for bookkeeping
    (markers, retention hints). When it is called, the commit has happened: if the
    hook raises, ``Table.commit`` still succeeds, logs the error (table, snapshot,
    error) and reports it in ``CommitResult.hook_error``. There is no durable record
    of a hook having run, so the core calls it again, with the same ``committed``
    (read back from the snapshot), every time a commit of the same writer and
    commit identifier is replayed: a caller's retry after a failed hook, an engine
    re-running a batch after a crash between the snapshot and its own commit log.
    It is not called again otherwise: a hook that failed and is never replayed
    stays undone, so it must be bookkeeping a later snapshot's call can make up for.

    Must therefore be idempotent: any number of calls for the same snapshot, from
    any process, possibly after later snapshots' calls, have the effect of one.
    """
