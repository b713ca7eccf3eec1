"""An open Pulsar reader of one partition and what the plugin knows of it."""

from __future__ import annotations

import time
from typing import Any

import attrs


@attrs.define
class OpenReader:
    """An open reader and the position its next message is expected at (or after)."""

    reader: Any
    position: int
    # time.monotonic() of its last message (or of its opening), and of the last check
    # whether it is stuck (see Reader._stuck).
    active: float = attrs.field(factory=time.monotonic)
    checked: float = 0.0
    #: A message a wait for records took from the reader, and its position: the next
    #: fetch returns it first.
    pending: tuple[Any, int] | None = None
