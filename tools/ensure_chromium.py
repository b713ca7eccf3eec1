"""Make sure Debian's chromium and chromium-driver are installed (the browser tests of
tests/ui drive them; nothing is downloaded at test time but these packages).

    python tools/ensure_chromium.py     # install when missing; prints the two paths

When ``/usr/bin/chromium`` or ``/usr/bin/chromedriver`` is missing, runs
``apt-get update && apt-get install -y --no-install-recommends chromium chromium-driver``
(as root, or through sudo) under the file lock ``/tmp/tablelog-chromium.lock``, so an
install that CI starts early in the background and the test fixture never run apt at
once: the second waits for the first and then finds the binaries. The environment
variables ``TABLELOG_TEST_CHROMIUM`` and ``TABLELOG_TEST_CHROMEDRIVER`` point at other
binaries; then nothing is installed.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

LOCK = Path("/tmp/tablelog-chromium.lock")
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


class ChromiumMissing(RuntimeError):
    """Chromium or its driver is absent and could not be installed."""


def wanted_paths() -> tuple[str, str]:
    """The browser and the driver to use: the environment's, else Debian's."""
    return (os.environ.get("TABLELOG_TEST_CHROMIUM", CHROMIUM),
            os.environ.get("TABLELOG_TEST_CHROMEDRIVER", CHROMEDRIVER))


def _present(paths: tuple[str, str]) -> bool:
    return all(os.access(p, os.X_OK) for p in paths)


def _apt_command() -> list[str]:
    script = ("apt-get update -qq && DEBIAN_FRONTEND=noninteractive "
              "apt-get install -y -qq --no-install-recommends chromium chromium-driver")
    if os.geteuid() == 0:
        return ["sh", "-c", script]
    if shutil.which("sudo"):
        return ["sudo", "-n", "sh", "-c", script]
    raise ChromiumMissing("chromium and chromium-driver are missing and this user cannot run apt-get "
                          "(not root, no sudo): install them (apt-get install chromium chromium-driver) "
                          "or set TABLELOG_TEST_CHROMIUM and TABLELOG_TEST_CHROMEDRIVER")


def ensure_chromium() -> tuple[str, str]:
    """The (browser, driver) paths, installing Debian's packages first when they are missing."""
    paths = wanted_paths()
    if _present(paths):
        return paths
    if paths != (CHROMIUM, CHROMEDRIVER):
        raise ChromiumMissing(f"TABLELOG_TEST_CHROMIUM / TABLELOG_TEST_CHROMEDRIVER name {paths}, "
                              "which are not executable files")
    with LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # an install under way elsewhere finishes first
        if not _present(paths):
            result = subprocess.run(_apt_command(), capture_output=True, text=True)
            if result.returncode != 0 or not _present(paths):
                raise ChromiumMissing(
                    f"installing chromium and chromium-driver failed (exit {result.returncode}):\n"
                    f"{result.stdout[-2000:]}{result.stderr[-2000:]}")
    return paths


if __name__ == "__main__":
    try:
        print(*ensure_chromium(), sep="\n")
    except ChromiumMissing as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(1)
