"""The ``redis.*`` options and the redis-py client built from them. No I/O here.

``LogConfig.options`` arrives with the ``redis.`` prefix removed. The keys in
:data:`OWN_KEYS` configure the plugin; every other key is a redis-py connection
setting (``redis.socket-timeout=5`` -> ``socket_timeout=5.0``), converted the way
redis-py converts URL query arguments, so ``redis.ssl-ca-certs``,
``redis.client-name``, ``redis.health-check-interval`` ... all work.

Secrets: ``redis.password`` is a secret by its name (:func:`tablelog.plugin.is_secret`),
so tablelog never stores, logs or shows it; give it again when opening the
table. ``redis.url`` is stored with the table, so it must not carry a password:
:func:`parse_settings` refuses one (with the URL redacted in the message).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping

import attrs

from tablelog.plugin import (
    REDACTED,
    LogConfig,
    OptionError,
    OptionSpec,
    int_option,
    invalid_value,
    redact,
    shown_value,
)

PREFIX = "redis."

URL = "url"
TOPIC = "topic"
PASSWORD = "password"
WAIT_REPLICAS = "wait-replicas"
WAIT_TIMEOUT_MS = "wait-timeout-ms"
TIMESTAMP_SKEW_MS = "timestamp-skew-ms"
PIPELINE_SIZE = "pipeline-size"

#: Keys that configure the plugin, not the redis-py client.
OWN_KEYS = frozenset(
    {URL, TOPIC, PASSWORD, WAIT_REPLICAS, WAIT_TIMEOUT_MS, TIMESTAMP_SKEW_MS, PIPELINE_SIZE}
)

#: redis-py settings the plugin sets unless the user does.
CLIENT_DEFAULTS = {
    # An unreachable server fails within this (LogUnavailableError), not the OS's minutes.
    "socket_connect_timeout": "10",
}

SCHEMES = ("redis", "rediss", "unix")


def option_specs() -> list[OptionSpec]:
    """The options this log system documents (full keys)."""
    p = PREFIX
    return [
        OptionSpec(
            p + URL,
            "Server URL: `redis://[user@]host:port/db`, `rediss://...` for TLS, "
            "`unix:///path/redis.sock?db=0`. Without a password: give it as `redis.password`.",
            required=True,
        ),
        OptionSpec(
            p + TOPIC, "Topic; partition n is the stream `<topic>:<n>`. Default: the table name.", names_topic=True
        ),
        OptionSpec(p + PASSWORD, "Password (AUTH); never stored, logged or shown.", secret=True),
        OptionSpec(
            p + WAIT_REPLICAS,
            "`flush` waits (WAIT) until this many replicas have the records; `0`: the primary's "
            "acknowledgement (and its AOF fsync policy) is the durability.",
            default="0",
        ),
        OptionSpec(p + WAIT_TIMEOUT_MS, "How long `flush` waits for those replicas.", default="10000"),
        OptionSpec(
            p + TIMESTAMP_SKEW_MS,
            "How far a writer's clock may run ahead of the server's: a timestamp seek scans the "
            "entries from (time - this) on.",
            default="60000",
        ),
        OptionSpec(
            p + PIPELINE_SIZE,
            "XADDs buffered in a pipeline before `produce` sends them.",
            default="5000",
        ),
    ]


@attrs.frozen
class RedisSettings:
    """Validated options of one table's redis log."""

    url: str = attrs.field(repr=False)  # without a password (checked), may name a user
    password: str | None = attrs.field(repr=False)
    client_options: Mapping[str, str] = attrs.field(repr=False)  # redis-py names, as strings
    wait_replicas: int = 0
    wait_timeout_ms: int = 10_000
    timestamp_skew_ms: int = 60_000
    pipeline_size: int = 5000

    def shown_url(self) -> str:
        return redact_url(self.url)

    def shown_options(self) -> dict[str, str]:
        shown = redact(dict(self.client_options))
        if self.password is not None:
            shown[PASSWORD] = REDACTED
        return shown

    def client_url(self) -> str:
        """The URL handed to ``redis.Redis.from_url``: the client options as query arguments,
        which redis-py converts to the right types."""
        options = {**CLIENT_DEFAULTS, **self.client_options}
        query = urllib.parse.urlencode(options)
        separator = "&" if "?" in self.url else "?"
        return self.url + (separator + query if query else "")


def redact_url(url: str) -> str:
    """``url`` with any password in it replaced by ``******``."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:{REDACTED}@{host}"))


def parse_settings(config: LogConfig) -> RedisSettings:
    """Check ``config.options`` (prefix removed); OptionError names the full key."""
    options = {k.strip().lower(): v for k, v in config.options.items()}
    url = (options.get(URL) or "").strip()
    if not url:
        raise OptionError(
            f"log.system='redis' needs option {PREFIX + URL!r}: the server, e.g. "
            "redis://127.0.0.1:6379/0"
        )
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise invalid_value(
            PREFIX + URL, redact_url(url), f"the scheme must be one of {', '.join(s + '://' for s in SCHEMES)}"
        )
    if parts.password is not None:
        raise OptionError(
            f"option {PREFIX + URL!r} carries a password ({redact_url(url)!r}), and the URL is "
            f"stored with the table: give the password as {PREFIX + PASSWORD!r}, which tablelog "
            "never stores"
        )
    try:
        _ = parts.port
    except ValueError:
        raise invalid_value(PREFIX + URL, redact_url(url), "the port is not a number") from None
    client_options: dict[str, str] = {}
    for key, value in options.items():
        if key in OWN_KEYS:
            continue
        name = key.replace("-", "_").replace(".", "_")
        if name in ("host", "port", "db", "path", "password", "url"):
            raise OptionError(
                f"option {PREFIX + key!r}={shown_value(key, value)!r} is part of {PREFIX + URL!r}"
                + (f" or {PREFIX + PASSWORD!r}" if name == "password" else "")
            )
        client_options[name] = str(value)
    return RedisSettings(
        url=url,
        password=options.get(PASSWORD),
        client_options=client_options,
        wait_replicas=int_option(options, WAIT_REPLICAS, 0, minimum=0, prefix=PREFIX),
        wait_timeout_ms=int_option(options, WAIT_TIMEOUT_MS, 10_000, minimum=1, prefix=PREFIX),
        timestamp_skew_ms=int_option(options, TIMESTAMP_SKEW_MS, 60_000, minimum=0, prefix=PREFIX),
        pipeline_size=int_option(options, PIPELINE_SIZE, 5000, minimum=1, prefix=PREFIX),
    )


def client_key(name: str) -> str:
    """The option key a redis-py keyword came from (``socket_timeout`` -> ``redis.socket-timeout``)."""
    return PREFIX + name.replace("_", "-")
