"""Why a TLS handshake with the brokers failed, in words a user can act on.

librdkafka reports every verification failure as "certificate verify failed: broker
certificate could not be verified", whether the certificate is signed by a CA the client
does not trust or names another host. After such a failure, one handshake of Python's
own with the first bootstrap broker, with the same CA file and host name check, tells
which (``verify_message``: "IP address mismatch, certificate is not valid for
'10.0.0.5'", "unable to get local issuer certificate", ...). It sends no Kafka request.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Mapping

#: Seconds the diagnosis may take: a broker that answered the client's handshake answers this one at once.
TIMEOUT_S = 3.0
#: OpenSSL's X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_EMAIL_MISMATCH and X509_V_ERR_IP_ADDRESS_MISMATCH.
_NAME_MISMATCH = frozenset({62, 63, 64})


def tls_failure(client: Mapping[str, str], bootstrap_servers: str) -> str | None:
    """The reason the first broker of ``bootstrap_servers`` fails verification with the
    client options ``client`` (``ssl.ca.location``, ``ssl.endpoint.identification.algorithm``),
    or None when this handshake passes or cannot tell."""
    first = bootstrap_servers.split(",")[0].strip()
    for scheme in ("ssl://", "sasl_ssl://", "plaintext://"):
        if first.lower().startswith(scheme):
            first = first[len(scheme):]
    host, _, port = first.rpartition(":")
    if not host or not port.isdigit():
        return None
    host = host.strip("[]")
    context = ssl.create_default_context(cafile=client.get("ssl.ca.location") or None)
    check_host = str(client.get("ssl.endpoint.identification.algorithm", "https")).strip().lower() == "https"
    context.check_hostname = check_host
    try:
        with socket.create_connection((host, int(port)), timeout=TIMEOUT_S) as raw, \
                context.wrap_socket(raw, server_hostname=host):
            return None
    except ssl.SSLCertVerificationError as err:
        reason = (err.verify_message or str(err)).rstrip(".")
        if err.verify_code in _NAME_MISMATCH or "mismatch" in reason:
            return (f"{reason}: the broker's certificate names another host than {host!r}, the address "
                    "in kafka.bootstrap.servers (or the one the broker advertises)")
        return (f"{reason}: the broker's certificate is not signed by a CA in "
                f"{client.get('ssl.ca.location') or 'the system store'} (kafka.ssl.ca.location)")
    except (OSError, ValueError):
        return None
