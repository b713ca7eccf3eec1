"""Secret options: which keys hold secrets, and their values replaced before anything
is shown, stored or put in a message.

Used by the core (options, table properties, the CLI) and by log-system plugins
(through :mod:`tablelog.plugin`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "******"

_SECRET_KEY = re.compile(
    r"(password|passwd|secret|token|credential|sasl\.|auth[-_.]?params|access[-_.]?key|"
    r"private[-_.]?key|ssl\.key\.|keystore\.key|authentication\.params)",
    re.IGNORECASE,
)


# Keys that log systems declare secret (``OptionSpec(secret=True)``) beyond the name
# patterns: filled when a log system is loaded (tablelog.registry), never emptied.
_declared_secrets: set[str] = set()


def declare_secret_keys(keys: Iterable[str]) -> None:
    """Treat these full option keys (``pgx.apikey``) as secrets in this process, as
    :func:`is_secret` treats the keys its name patterns match."""
    _declared_secrets.update(k.strip().lower() for k in keys)


def is_secret(key: str) -> bool:
    """Whether the option ``key`` holds a secret that must never be shown or stored:
    its name matches a secret pattern, or a loaded log system declared it secret."""
    return bool(_SECRET_KEY.search(key)) or key.strip().lower() in _declared_secrets


def redact(options: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``options`` with every secret value replaced by ``******``."""
    return {k: (REDACTED if is_secret(k) else v) for k, v in options.items()}


def shown_value(key: str, value: Any) -> Any:
    """``value`` as a message may show it: ``******`` when ``key`` is a secret."""
    return REDACTED if is_secret(key) else value
