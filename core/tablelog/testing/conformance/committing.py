"""Conformance tests of ``commit`` and ``close_log``: both may be called again."""

from __future__ import annotations

from tablelog.logs.client import LogClient
from tablelog.records import CommittedLog, LogConfig, SeekSpec
from tablelog.testing.conformance.base import ClientOpener, ConformanceBase, new_token


class CommitCloseTests(ConformanceBase):
    """A commit repeated after a crash, and a second close, change nothing."""

    def test_commit_hook_is_idempotent(
        self, config: LogConfig, client: LogClient, open_client: ClientOpener
    ) -> None:
        token = new_token()
        start = client.seek(0, SeekSpec.latest())
        self.produce(client, token, 0, 3)
        ranges = self.flush(client)
        committed = CommittedLog(
            snapshot_id=1,
            writer="conformance",
            commit_identifier=1,
            ranges=tuple(ranges),
            end_positions=client.end_positions([0, 1]),
        )
        before = [r for r in self.read(client, 0, start, 3)[0] if r.token == token]
        client.commit(committed)
        client.commit(committed)
        open_client(config).commit(committed)  # again after a "crash", from a new connection
        after, _ = self.read(client, 0, start, 3)
        assert [r for r in after if r.token == token] == before
        assert len(before) == 3

    def test_close_twice_is_allowed(self, config: LogConfig, open_client: ClientOpener) -> None:
        client = open_client(config)
        client.ensure_topic()
        hook = client.system.pm.hook
        # Call the hook itself: LogClient.close() would not call it a second time.
        hook.close_log(connection=client.connection)
        hook.close_log(connection=client.connection)
        client.closed = True
