"""The `tablelog` command line: `tablelog --help` lists the commands."""

from __future__ import annotations

import click

from tablelog import __version__
from tablelog.cli.demo import demo
from tablelog.cli.plugins import options_command, plugins
from tablelog.cli.tables import create, describe, tail, verify_command


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="tablelog")
def cli() -> None:
    """Double-write a Paimon table's changelog into Kafka, Pulsar or any log system.

    Tables live in a warehouse (a directory or a file:// URL): pass --warehouse or set
    TABLELOG_WAREHOUSE.
    """


for command in (plugins, options_command, create, describe, tail, verify_command, demo):
    cli.add_command(command)


def main() -> None:
    cli(prog_name="tablelog")
