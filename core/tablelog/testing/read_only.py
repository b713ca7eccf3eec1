"""Consumers with read-only access: every read entry point of a table works on storage
the reader may only read, and writes nothing there.

Subclass :class:`ReadOnlyScenarios` in a test module and provide a fixture ``access``
returning a :class:`ReadOnlyAccess`: where a writer creates the table, where and with
which options a reader opens it (a read-only mount of the same directory, S3 credentials
that may only get and list), and a fingerprint of everything stored, which no read may
change. The scenarios cover the Python API (``rows``, ``snapshots``, ``verify``, the
transactional and eventual readers), the CLI (``describe``, ``tail``, ``verify``, run as
a user runs them) and the dashboard's figures; a reader with a ``consumer-id``, which
must write its progress, fails with a :class:`~tablelog.errors.WriteAccessError` that
names the permission.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import pyarrow as pa
import pytest

from tablelog.errors import WriteAccessError
from tablelog.tables import create_table, open_table
from tablelog.verify import verify

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
#: Commits of the table the scenarios read: each updates half the keys of the one before.
COMMITS = 3


@attrs.frozen
class ReadOnlyAccess:
    """A table's storage seen by a writer and by a reader who may only read it."""

    writer_warehouse: str
    writer_options: Mapping[str, str]
    reader_warehouse: str
    reader_options: Mapping[str, str]
    #: Everything stored (names and contents or sizes): no read may change it.
    stored: Callable[[], Any]
    #: The environment of a reader's CLI (its credentials, as a user gives them).
    cli_environment: Mapping[str, str] = attrs.field(factory=dict)
    #: ``-o key=value`` options every CLI call of the reader takes.
    cli_options: Sequence[str] = ()


def written_rows(commit: int) -> list[dict[str, Any]]:
    return [{"id": k, "v": f"c{commit}"} for k in range(3 * commit, 3 * commit + 6)]


def expected_rows() -> list[dict[str, Any]]:
    rows: dict[int, dict[str, Any]] = {}
    for commit in range(COMMITS):
        rows.update({r["id"]: r for r in written_rows(commit)})
    return sorted(rows.values(), key=lambda r: r["id"])


class ReadOnlyScenarios:
    """Every read entry point with read-only access (see the module docstring)."""

    @pytest.fixture
    def table_name(self, access: ReadOnlyAccess) -> str:
        name = f"db.ro_{uuid.uuid4().hex[:8]}"
        table = create_table(access.writer_warehouse, name, SCHEMA, primary_key=["id"], bucket=2,
                             options=dict(access.writer_options))
        for commit in range(COMMITS):
            with table.writer("loader") as writer:
                writer.write(written_rows(commit))
                writer.commit()
        return name

    def test_the_python_reads_work_and_write_nothing(self, access: ReadOnlyAccess, table_name: str) -> None:
        before = access.stored()
        table = open_table(access.reader_warehouse, table_name, dict(access.reader_options))
        assert table.rows().sort_by("id").to_pylist() == expected_rows()
        assert len(list(table.snapshots())) == COMMITS
        assert verify(table).consistent
        for consistency in ("transactional", "eventual"):
            with table.reader(consistency=consistency, scan_mode="earliest") as reader:
                changes = reader.read_all()
            assert len(changes) == COMMITS * 6, consistency
        assert access.stored() == before

    def test_the_cli_describes_tails_and_verifies_and_writes_nothing(
        self, access: ReadOnlyAccess, table_name: str,
    ) -> None:
        before = access.stored()
        options = [arg for option in access.cli_options for arg in ("-o", option)]
        runs = {
            "describe": ["describe", "-w", access.reader_warehouse, table_name],
            "tail": ["tail", "-w", access.reader_warehouse, table_name, "--scan-mode", "earliest",
                     "--limit", str(COMMITS * 6), *options],
            "verify": ["verify", "-w", access.reader_warehouse, table_name, *options],
        }
        outputs = {name: _cli(args, access.cli_environment) for name, args in runs.items()}
        assert "loader" in outputs["describe"]
        assert f"# {COMMITS * 6} change(s)" in outputs["tail"]
        assert outputs["verify"].strip().splitlines()[-1].startswith("consistent:")
        assert access.stored() == before

    def test_the_dashboard_lists_and_shows_the_table_and_writes_nothing(
        self, access: ReadOnlyAccess, table_name: str,
    ) -> None:
        from tablelog.testing.dashboard import settled_table_document
        from tablelog.ui.state import Dashboard

        before = access.stored()
        dashboard = Dashboard(access.reader_warehouse, dict(access.reader_options), log_timeout_s=20.0)
        try:
            listed = [t["table"] for t in dashboard.warehouse_document()["tables"]]
            document = settled_table_document(dashboard, table_name)
        finally:
            dashboard.close()
        assert table_name in listed
        assert document["health"]["mark"] == "ok", document["health"]
        assert access.stored() == before

    def test_a_consumer_id_names_the_write_access_it_needs(self, access: ReadOnlyAccess, table_name: str) -> None:
        before = access.stored()
        table = open_table(access.reader_warehouse, table_name, dict(access.reader_options))
        refused = r"consumer-id 'audit'.*consumer-audit.*refused.*needs the right to write.*without one needs only read"
        with (pytest.raises(WriteAccessError, match=refused),
              table.reader(consistency="transactional", scan_mode="earliest", consumer_id="audit") as reader):
            reader.read_all()
        assert access.stored() == before


def _cli(args: Sequence[str], environment: Mapping[str, str]) -> str:
    """``tablelog ARGS`` in a process of its own, as a user runs it; what it printed, on
    stdout then stderr (it must succeed)."""
    done = subprocess.run([sys.executable, "-c", "from tablelog.cli import main; main()", *args],
                          env={**os.environ, **environment}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"tablelog {' '.join(args)} exited {done.returncode}: {done.stderr[-3000:]}"
    return done.stdout + done.stderr
