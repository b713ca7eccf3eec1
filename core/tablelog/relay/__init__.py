"""The relay: other writers' commits published into the table's log (:mod:`tablelog.relay.relay`)."""

from tablelog.relay.changes import RelayError
from tablelog.relay.relay import RELAY_WRITER, Relay, RelayStep

__all__ = ["RELAY_WRITER", "Relay", "RelayError", "RelayStep"]
