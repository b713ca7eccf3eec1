"""The connection object the hooks pass around: settings plus lazily created clients."""

from __future__ import annotations

from tablelog.plugin import LogConfig

from .admin import AdminSide
from .config import KafkaSettings
from .offsets import OffsetsSide
from .producer import ProduceSide
from .reader import FetchSide


class KafkaConnection:
    """One table's kafka log. Clients are created on first use, so opening does no I/O.

    Its repr shows the topic and the client options with secrets redacted.
    """

    def __init__(self, config: LogConfig, settings: KafkaSettings):
        self.config = config
        self.settings = settings
        self.admin = AdminSide(settings)
        self.producer = ProduceSide(settings)
        self.offsets = OffsetsSide(settings)
        self.reader = FetchSide(
            settings,
            start_position=self.offsets.start_position,
            end_position=lambda p: self.offsets.end_positions([p])[p],
        )
        self.closed = False

    @property
    def topic(self) -> str:
        return self.settings.topic

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.producer.close()
        self.reader.close()
        self.offsets.close()
        self.admin.close()

    def __repr__(self) -> str:
        return (
            f"KafkaConnection(table={self.config.table!r}, topic={self.topic!r}, "
            f"options={self.settings.shown_options()!r}{', closed' if self.closed else ''})"
        )

    __str__ = __repr__
