"""The ``pulsar.*`` options: declared once, validated before any I/O, mapped to client kwargs.

Options arrive with the ``pulsar.`` prefix removed. Every key is mapped explicitly
to a ``pulsar.Client`` / ``create_producer`` / ``create_reader`` argument; an
unknown key is an :class:`~tablelog.errors.OptionError` that lists the supported
keys. Secret values (``auth-params``, ``token``; see
:func:`tablelog.plugin.is_secret`) never appear in a repr, a log line or an
error message.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from tablelog.plugin import (
    InvalidValue,
    LogConfig,
    OptionError,
    OptionSpec,
    invalid_value,
    is_secret,
    parse_bool,
    parse_int,
    redact,
)

PREFIX = "pulsar."

#: Names of the compression codecs ``compression-type`` accepts (pulsar.CompressionType members).
COMPRESSION_TYPES = {"none": "NONE", "lz4": "LZ4", "zlib": "ZLib", "zstd": "ZSTD", "snappy": "SNAPPY"}

#: The largest batch the position encoding can address (see positions.BATCH_BITS).
MAX_BATCH_MESSAGES = 16_382


def _text(value: str) -> str:
    return value


def _int(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    def convert(value: str) -> int:
        return parse_int(value, minimum, maximum)

    return convert


def _compression(value: str) -> str:
    text = value.strip().lower()
    if text not in COMPRESSION_TYPES:
        raise InvalidValue("allowed: " + ", ".join(repr(k) for k in COMPRESSION_TYPES))
    return COMPRESSION_TYPES[text]


def _service_url(value: str) -> str:
    text = value.strip()
    if not text.startswith(("pulsar://", "pulsar+ssl://")):
        raise InvalidValue("expected a Pulsar service URL such as 'pulsar://host:6650' or 'pulsar+ssl://host:6651'")
    return text


@attrs.frozen
class _Key:
    """One supported option: where its value goes and how it is converted."""

    key: str  # without the prefix
    doc: str
    target: str  # "client", "producer", "reader", "auth", "plugin"
    kwarg: str  # the keyword argument of that target
    convert: Callable[[str], Any] = _text
    required: bool = False
    default: str | None = None


_KEYS: tuple[_Key, ...] = (
    _Key("service-url", "Pulsar service URL, `pulsar://host:6650` or `pulsar+ssl://host:6651` (required).",
         "plugin", "service_url", _service_url, required=True),
    _Key("topic", "Topic; a bare name means `persistent://public/default/<name>`; partition N of the "
         "table is the topic `<topic>-partition-N`. Default: derived from the table name.",
         "plugin", "topic"),
    # authentication
    _Key("auth-plugin", "Authentication plugin of the Pulsar C++ client (`token`, `tls`, `basic`, `oauth2`, "
         "or a class/library name), used with `pulsar.auth-params`.", "auth", "plugin"),
    _Key("auth-params", "Parameters string of `pulsar.auth-plugin` (secret).", "auth", "params"),
    _Key("token", "JWT for token authentication (secret); shorthand for auth-plugin `token`.", "auth", "token"),
    # TLS
    _Key("tls-trust-certs-file-path", "CA certificates file for TLS.", "client", "tls_trust_certs_file_path"),
    _Key("tls-allow-insecure-connection", "Accept untrusted TLS certificates (`true`/`false`).",
         "client", "tls_allow_insecure_connection", parse_bool, default="false"),
    _Key("tls-validate-hostname", "Check the broker's TLS host name (`true`/`false`).",
         "client", "tls_validate_hostname", parse_bool, default="false"),
    _Key("tls-certificate-file-path", "Client certificate for TLS authentication.",
         "client", "tls_certificate_file_path"),
    _Key("tls-private-key-file-path", "Client private key file for TLS authentication.",
         "client", "tls_private_key_file_path"),
    # client tuning
    _Key("operation-timeout-seconds", "Time-out of client operations (lookups, producer and reader creation).",
         "client", "operation_timeout_seconds", _int(1), default="30"),
    _Key("connection-timeout-ms", "How long to wait for a TCP connection to the broker, also while it refuses "
         "connections (a broker restarting).",
         "client", "connection_timeout_ms", _int(1), default="10000"),
    _Key("io-threads", "Client I/O threads.", "client", "io_threads", _int(1), default="1"),
    _Key("listener-name", "Advertised listener name to connect through.", "client", "listener_name"),
    # producer tuning
    _Key("send-timeout-ms", "Producer send time-out; a flush fails earlier when its own time-out passes.",
         "producer", "send_timeout_millis", _int(0), default="30000"),
    _Key("compression-type", "`none`, `lz4`, `zlib`, `zstd` or `snappy`.",
         "producer", "compression_type", _compression, default="none"),
    _Key("max-pending-messages", "Producer queue length; produce blocks while it is full.",
         "producer", "max_pending_messages", _int(1), default="10000"),
    _Key("batching-enabled", "Batch records into one broker entry (`true`/`false`).",
         "producer", "batching_enabled", parse_bool, default="true"),
    _Key("batching-max-messages", f"Records per batch (at most {MAX_BATCH_MESSAGES}, the position encoding's limit).",
         "producer", "batching_max_messages", _int(1, MAX_BATCH_MESSAGES), default="1000"),
    _Key("batching-max-allowed-size-in-bytes", "Bytes per batch.",
         "producer", "batching_max_allowed_size_in_bytes", _int(1), default="131072"),
    _Key("batching-max-publish-delay-ms", "How long a batch waits to fill.",
         "producer", "batching_max_publish_delay_ms", _int(0), default="10"),
    # reader tuning
    _Key("receiver-queue-size", "Records a reader prefetches.", "reader", "receiver_queue_size", _int(1),
         default="1000"),
)

_BY_KEY = {k.key: k for k in _KEYS}
SUPPORTED_KEYS = tuple(k.key for k in _KEYS)


def option_specs() -> list[OptionSpec]:
    """The options of the pulsar log system, full keys with the ``pulsar.`` prefix."""
    return [
        OptionSpec(
            key=PREFIX + k.key,
            doc=k.doc,
            required=k.required,
            default=k.default,
            secret=is_secret(k.key),
            names_topic=k.key == "topic",
        )
        for k in _KEYS
    ]


_TOPIC_FORMS = "expected 'name', 'tenant/namespace/name' or 'persistent://tenant/namespace/name'"


def resolve_topic(topic: str) -> str:
    """A full topic name: ``name`` -> ``persistent://public/default/name``,
    ``tenant/ns/name`` -> ``persistent://tenant/ns/name``; full names stay."""
    text = topic.strip()
    if "://" in text:
        scheme, rest = text.split("://", 1)
        if scheme not in ("persistent", "non-persistent") or len(rest.split("/")) != 3 or not all(rest.split("/")):
            raise invalid_value(PREFIX + "topic", topic, _TOPIC_FORMS)
        if scheme == "non-persistent":
            raise invalid_value(
                PREFIX + "topic", topic, "a non-persistent topic loses records; use a persistent:// topic"
            )
        return text
    parts = text.split("/")
    if len(parts) == 1 and parts[0]:
        return f"persistent://public/default/{parts[0]}"
    if len(parts) == 3 and all(parts):
        return f"persistent://{text}"
    raise invalid_value(PREFIX + "topic", topic, _TOPIC_FORMS)


@attrs.frozen(repr=False)
class PulsarConfig:
    """The validated options of one table's Pulsar log."""

    service_url: str
    topic: str  # full name of the base topic; partition N is f"{topic}-partition-{N}"
    partitions: int
    auto_register: bool
    client_kwargs: Mapping[str, Any]
    producer_kwargs: Mapping[str, Any]
    reader_kwargs: Mapping[str, Any]
    auth_plugin: str | None
    auth_params: str | None  # secret
    token: str | None  # secret
    options: Mapping[str, str]  # as given (secrets included), for diagnostics only through redact()

    def __repr__(self) -> str:
        return (
            f"PulsarConfig(service_url={self.service_url!r}, topic={self.topic!r}, "
            f"partitions={self.partitions}, auto_register={self.auto_register}, "
            f"options={redact(self.options)!r})"
        )

    __str__ = __repr__

    def partition_topic(self, partition: int) -> str:
        return f"{self.topic}-partition-{partition}"

    @property
    def operation_timeout_s(self) -> int:
        """pulsar.operation-timeout-seconds: how long one of the client's round trips waits."""
        return int(self.client_kwargs.get("operation_timeout_seconds", 30))

    def authentication(self) -> Any:
        """The ``pulsar.Authentication`` object for the configured credentials, or None."""
        import pulsar

        if self.token is not None:
            return pulsar.AuthenticationToken(self.token)
        if self.auth_plugin is not None:
            return pulsar.Authentication(self.auth_plugin, self.auth_params or "")
        return None


def parse_config(config: LogConfig) -> PulsarConfig:
    """Validate ``config.options`` (no I/O). Raises OptionError naming the ``pulsar.`` key."""
    raw = {str(k).strip().lower(): str(v) for k, v in config.options.items()}
    values: dict[str, Any] = {}
    targets: dict[str, dict[str, Any]] = {"client": {}, "producer": {}, "reader": {}, "auth": {}, "plugin": {}}
    for key, value in raw.items():
        spec = _BY_KEY.get(key)
        if spec is None:
            hint = difflib.get_close_matches(key, SUPPORTED_KEYS, n=1, cutoff=0.6)
            raise OptionError(
                f"unknown option {PREFIX + key!r} for log.system 'pulsar'"
                + (f"; did you mean {PREFIX + hint[0]!r}?" if hint else "")
                + "; supported: "
                + ", ".join(PREFIX + k for k in SUPPORTED_KEYS)
            )
        try:
            converted = spec.convert(value)
        except InvalidValue as err:
            raise invalid_value(PREFIX + key, value, str(err)) from None
        values[key] = converted
        targets[spec.target][spec.kwarg] = converted
    for spec in _KEYS:
        if spec.required and spec.key not in values:
            raise OptionError(f"missing required option {PREFIX + spec.key!r} for log.system 'pulsar' "
                              "(for example pulsar.service-url = pulsar://localhost:6650)")
        if spec.key not in values and spec.default is not None and spec.target != "plugin":
            targets[spec.target].setdefault(spec.kwarg, spec.convert(spec.default))
    auth = targets["auth"]
    if "token" in auth and "plugin" in auth:
        raise OptionError("options 'pulsar.token' and 'pulsar.auth-plugin' exclude each other; set one")
    if "params" in auth and "plugin" not in auth:
        raise OptionError("option 'pulsar.auth-params' needs 'pulsar.auth-plugin'")
    if config.partitions < 1:
        raise OptionError(f"the table needs at least 1 log partition, got {config.partitions}")
    topic_option = values.get("topic")
    topic = resolve_topic(config.topic or topic_option or config.table)
    return PulsarConfig(
        service_url=values["service-url"],
        topic=topic,
        partitions=config.partitions,
        auto_register=config.auto_register,
        client_kwargs=dict(targets["client"]),
        producer_kwargs=dict(targets["producer"]),
        reader_kwargs=dict(targets["reader"]),
        auth_plugin=auth.get("plugin"),
        auth_params=auth.get("params"),
        token=auth.get("token"),
        options=dict(raw),
    )
