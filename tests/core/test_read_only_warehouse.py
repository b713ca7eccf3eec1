"""Readers of a local warehouse on a read-only mount (a bind mount of the warehouse made
read-only, as a consumer's host mounts a shared directory): every read entry point works
and nothing in the directory changes. Making the mount needs root, as CI has."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tablelog.testing.read_only import ReadOnlyAccess, ReadOnlyScenarios


def _tree(root: Path) -> list[tuple[str, int, int]]:
    """Every file and folder under ``root``: its path, size and modification time."""
    found = []
    for folder, names, files in os.walk(root):
        for name in [*names, *files]:
            stat = os.stat(os.path.join(folder, name))
            found.append((os.path.relpath(os.path.join(folder, name), root), stat.st_size, stat.st_mtime_ns))
    return sorted(found)


@pytest.fixture
def read_only_mount(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A warehouse directory and a read-only bind mount of it."""
    if os.geteuid() != 0:
        pytest.fail("the read-only warehouse tests mount a read-only bind mount, which needs root "
                    "(run them as root, as CI does)", pytrace=False)
    source, mounted = tmp_path / "warehouse", tmp_path / "read-only"
    source.mkdir()
    mounted.mkdir()
    subprocess.run(["mount", "--bind", str(source), str(mounted)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(mounted)], check=True)
        yield source, mounted
    finally:
        subprocess.run(["umount", "--lazy", str(mounted)], check=True)  # a reader's file left open: detached anyway


class TestReadersOfAReadOnlyLocalWarehouse(ReadOnlyScenarios):
    @pytest.fixture
    def access(self, read_only_mount: tuple[Path, Path]) -> ReadOnlyAccess:
        source, mounted = read_only_mount
        return ReadOnlyAccess(writer_warehouse=str(source), writer_options={"log.system": "filesystem"},
                              reader_warehouse=str(mounted), reader_options={}, stored=lambda: _tree(source))


def test_the_mount_is_read_only(read_only_mount: tuple[Path, Path]) -> None:
    with pytest.raises(OSError, match="Read-only file system"):
        (read_only_mount[1] / "probe").write_text("x")
