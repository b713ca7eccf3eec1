"""The `tablelog` command line: `tablelog --help` lists the commands."""

from __future__ import annotations

import logging
import sys
from typing import TextIO

import click

from tablelog import __version__
from tablelog.cli.alter import alter
from tablelog.cli.common import friendly_errors
from tablelog.cli.compact import compact_command
from tablelog.cli.demo import demo
from tablelog.cli.describe import describe
from tablelog.cli.expire import expire_command
from tablelog.cli.plugins import options_command, plugins
from tablelog.cli.relay import relay_command
from tablelog.cli.repeats import check_repeated_options
from tablelog.cli.tables import create
from tablelog.cli.tail import tail
from tablelog.cli.ui import ui_command
from tablelog.cli.verify import verify_command
from tablelog.logs import discovery


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to the current ``sys.stderr`` (which a test runner may have replaced)."""

    def __init__(self) -> None:
        super().__init__()
        self.verbosity = 0
        #: Loggers of the log systems' client libraries (librdkafka, the Pulsar C++ client):
        #: one line per reconnect attempt while a broker is down, shown only with -v.
        self.client_loggers: tuple[str, ...] = ()

    @property  # type: ignore[override]
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        pass

    def filter(self, record: logging.LogRecord) -> bool:
        if self.verbosity == 0 and record.name.startswith(self.client_loggers):
            return False
        return super().filter(record)


_HANDLER = _StderrHandler()
_HANDLER.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))


def configure_logging(verbosity: int) -> None:
    """Quiet by default (tablelog's own warnings only); -v: the client libraries'
    log lines too; -vv: everything down to debug, the clients' error events included."""
    level = logging.WARNING if verbosity == 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    root = logging.getLogger()
    if _HANDLER not in root.handlers:
        root.addHandler(_HANDLER)
    _HANDLER.verbosity = verbosity
    _HANDLER.client_loggers = discovery.client_logger_names()
    _HANDLER.setLevel(level)
    if verbosity:
        root.setLevel(min(root.getEffectiveLevel(), level))


class _TablelogGroup(click.Group):
    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None:
            friendly_errors(check_repeated_options)(command, ctx, rest)
        return name, command, rest


@click.group(cls=_TablelogGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="tablelog")
@click.option("--verbose", "-v", count=True,
              help="Show log lines on stderr: -v the log systems' clients' (connection attempts...), -vv debug.")
def cli(verbose: int) -> None:
    """Double-write a Paimon table's changelog into Kafka, Pulsar or any log system.

    Tables live in a warehouse (a directory or a file:// URL): pass --warehouse or set
    TABLELOG_WAREHOUSE.
    """
    configure_logging(verbose)


for command in (plugins, options_command, create, alter, describe, expire_command, tail, verify_command,
                compact_command, relay_command, demo, ui_command):
    cli.add_command(command)


def main() -> None:
    cli(prog_name="tablelog")
