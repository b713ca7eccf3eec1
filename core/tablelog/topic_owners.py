"""A table's topic: the option that names it, the config of the table's further streams
(one topic each), and one topic, one table: the check ``create_table`` makes before a
table takes a topic.

Two tables writing one topic would each hand their readers the other's records
(eventual readers leave them out by the table tag in their writer tokens, see
:mod:`tablelog.identity`, but one table per topic is what the product promises).
Within a warehouse every table is visible, so a topic already used there is refused.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from tablelog.errors import OptionError, TablelogError
from tablelog.formats.projection import TOPIC_SUFFIX
from tablelog.logs import discovery
from tablelog.options import TableOptions, split_system_options
from tablelog.records import LogConfig
from tablelog.store import Warehouse, parse_identifier


def topic_option(system: str) -> str:
    """The option that names the topic of ``system``'s tables: the one its plugin declares
    with ``OptionSpec(names_topic=True)``, else ``<system>.topic``."""
    declared = [spec.key for spec in discovery.declared_options(system) if spec.names_topic]
    return declared[0] if declared else f"{system}.topic"


def default_topic(identifier: str, system: str, system_options: Mapping[str, str]) -> str:
    """The topic option's value (:func:`topic_option`), else ``db.name``."""
    db, name = parse_identifier(identifier)
    return system_options.get(topic_option(system)) or f"{db}.{name}"


def stream_config(config: LogConfig, suffix: str) -> LogConfig:
    """The config of a further stream of the table whose log ``config`` opens (the
    projection stream): its topic is the table topic's with ``suffix``, and so is the
    option naming the topic, where given, so that a plugin that takes its storage from
    the option gives each stream its own."""
    topic = config.topic + suffix
    key = topic_option(config.system).removeprefix(config.system + ".")
    options = {**config.options, key: topic} if key in config.options else config.options
    return attrs.evolve(config, topic=topic, options=options)


def refuse_shared_topic(
    wh: Warehouse, identifier: str, system: str, system_options: Mapping[str, str], topic: str
) -> None:
    """Refuse ``topic``, of the table to create, when another table of the warehouse uses it,
    naming that table and the option that chooses another topic."""
    location = log_location(wh, identifier, system, system_options, topic)
    for other in wh.tables():
        if other == identifier:  # its own log, being attached or moved
            continue
        try:
            properties = wh.open(other).properties
        except (TablelogError, OSError, RuntimeError, ValueError):
            continue  # a table that cannot be opened writes to no topic
        if properties.get("log.system") != system:
            continue
        other_options = {k: v for k, v in properties.items() if k.startswith(system + ".")}
        if log_location(wh, other, system, other_options) == location:
            raise OptionError(
                f"table {identifier!r}: {system} topic {topic!r} "
                f"is already the log of table {other!r} in this warehouse; two tables on one topic "
                f"would read each other's records. Choose another topic with option '{topic_option(system)}'"
            )


def log_location(
    wh: Warehouse, identifier: str, system: str, system_options: Mapping[str, str], topic: str | None = None
) -> tuple[str, ...]:
    """Where a table's log is: the system, the topic (``topic``: known already), and what
    addresses the log (the values of the system's required options, such as Kafka's
    bootstrap servers; the file log's directory). Tables on two clusters may use one topic name."""
    topic = default_topic(identifier, system, system_options) if topic is None else topic
    if system == "filesystem":
        from tablelog.logs.filesystem.location import topic_directory

        config = LogConfig(system, identifier, topic, 1, False, split_system_options(system, system_options), wh.path)
        return (system, str(topic_directory(config).resolve()))
    required = sorted(spec.key for spec in discovery.load_log_system(system).option_specs() if spec.required)
    return (system, topic, *(str(system_options.get(key)) for key in required))


def check_system_options(options: TableOptions, system_options: Mapping[str, str]) -> None:
    """Refuse a log system's options that lack one it requires, naming it."""
    system = discovery.load_log_system(options.log_system)
    for spec in system.option_specs():
        if spec.required and spec.key not in system_options:
            raise OptionError(
                f"log.system={options.log_system!r} needs option {spec.key!r}: {spec.doc}"
            )


def register_topic(
    wh: Warehouse, identifier: str, options: TableOptions, system_options: dict[str, str], topic: str,
    *, create: bool,
) -> None:
    """Open the log, which validates its options (topic name...), and with ``create``
    create the table's topic now: a wrong option or address fails before the table
    exists, and readers can start before the first write."""
    system = options.log_system
    config = LogConfig(
        system=system,
        table=identifier,
        topic=topic,
        partitions=options.log_partition_count,
        auto_register=True,
        options=split_system_options(system, system_options),
        warehouse=wh.path,
    )
    system_plugin = discovery.load_log_system(system)
    with system_plugin.open(config) as log:
        if create:
            log.ensure_topic()
    if create and options.log_arrow_projection:
        with system_plugin.open(stream_config(config, TOPIC_SUFFIX)) as log:
            log.ensure_topic()
