"""Secret options: which keys hold secrets, and their values replaced before anything
is shown, stored or put in a message; :class:`SecretScrubber` takes them out of texts
tablelog did not write (a client's error or log line).

Used by the core (options, table properties, the CLI) and by log-system plugins
(through :mod:`tablelog.plugin`).
"""

from __future__ import annotations

import logging
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
# patterns: filled when a log system is loaded (tablelog.logs.discovery), never emptied.
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


#: A secret this long is scrubbed out of a message wherever it is. A shorter one may also
#: be an ordinary word or number of the message (``ada``, ``9092``), where replacing it
#: garbles the message and betrays the secret: it is scrubbed only as a whole value, and
#: :class:`SecretScrubber` warns about it at open.
MIN_SCRUBBED_LENGTH = 8

# Keys whose value is a credential proper; a short user name (``sasl.username``) or a
# mechanism (``sasl.mechanism=PLAIN``) is a secret by its prefix but is no cause for a warning.
_CREDENTIAL_KEY = re.compile(r"(password|passwd|secret|token|credential|key|params)", re.IGNORECASE)
_VALUE_END = r"""[^\s,;&"'()<>\[\]{}]+"""
_URL_PASSWORD = re.compile(r"(?P<head>\b[a-zA-Z][\w+.-]*://[^/\s:@]*:)[^/\s@]+(?=@)")
_warned_keys: set[str] = set()
_log = logging.getLogger(__name__)


class SecretScrubber:
    """Replaces secrets by ``******`` in a text tablelog did not write: a client's error
    message or log line. Replaced are: the value after any secret key
    (``sasl.password=...``, ``"token": "..."``) and a URL's password
    (``redis://user:...@host``), whatever those are; each secret value of ``options``
    of :data:`MIN_SCRUBBED_LENGTH` characters or more wherever it is; a shorter one only
    where it stands as a whole value, never inside a word (with the password ``e``,
    ``Connection refused`` stays as it is), and a warning naming its key is logged (once
    per key and process) when the key names a credential. ``prefix``: the log system's
    (``kafka.``), when ``options`` come without it."""

    def __init__(self, options: Mapping[str, Any], prefix: str = "") -> None:
        secrets = {str(k).strip(): str(v) for k, v in options.items() if is_secret(prefix + str(k).strip()) and str(v)}
        for key, value in secrets.items():
            if len(value) < MIN_SCRUBBED_LENGTH and _CREDENTIAL_KEY.search(key):
                _warn_short(prefix + key)
        keys = sorted({re.escape(k) for key in secrets for k in (key, prefix + key)}, key=len, reverse=True)
        names = "|".join([_SECRET_KEY.pattern, *keys])
        self._key_value = re.compile(
            rf"""(?P<head>(?<![\w.-])[\w.-]*(?:{names})[\w.-]*["']?\s*[=:]\s*)(?:"[^"]*"|'[^']*'|{_VALUE_END})""",
            re.IGNORECASE,
        )
        values = sorted(set(secrets.values()), key=len, reverse=True)
        long = [re.escape(v) for v in values if len(v) >= MIN_SCRUBBED_LENGTH]
        short = [re.escape(v) for v in values if len(v) < MIN_SCRUBBED_LENGTH]
        # A long secret is replaced wherever it is (glued to other text too); a short one
        # only as a whole value: not next to a letter, digit, `_` or `-` (`e-mail`).
        whole = [f"(?<![\\w-])(?:{'|'.join(short)})(?![\\w-])"] if short else []
        self._values = re.compile("|".join(long + whole)) if long or short else None

    def scrub(self, text: str) -> str:
        text = _URL_PASSWORD.sub(rf"\g<head>{REDACTED}", text)
        text = self._key_value.sub(_redact_value, text)
        return self._values.sub(REDACTED, text) if self._values is not None else text


def _redact_value(match: re.Match[str]) -> str:
    value = match.group(0)[len(match.group("head")):]
    quote = value[0] if value[:1] in ("'", '"') else ""
    return f"{match.group('head')}{quote}{REDACTED}{quote}"


def _warn_short(key: str) -> None:
    folded = key.lower()
    if folded in _warned_keys:
        return
    _warned_keys.add(folded)
    _log.warning(
        "option %r holds a secret of fewer than %d characters: it may also be an ordinary word or "
        "number of a log system's message, where it is replaced too (garbling the message and "
        "betraying the secret); use a longer one", key, MIN_SCRUBBED_LENGTH,
    )
