"""`tablelog plugins` and `tablelog options`."""

from __future__ import annotations

import click
from rich.markup import escape
from rich.table import Table as RichTable

from tablelog import registry
from tablelog.cli.common import console
from tablelog.options import option_docs


@click.command()
def plugins() -> None:
    """List the installed log systems with their distributions and versions."""
    table = RichTable("log.system", "distribution", "version", "module", "status")
    for item in registry.installed_log_systems():
        status = "[green]ok[/]" if item.error is None else f"[red]unavailable[/]: {escape(item.error)}"
        table.add_row(item.name, item.distribution, item.version, item.module, status)
    console.print(table)


@click.command("options")
@click.option("--markdown", is_flag=True, help="Print the option table as Markdown (for the docs).")
def options_command(markdown: bool) -> None:
    """List every table option with its default and meaning."""
    docs = option_docs()
    if markdown:
        click.echo("| key | default | meaning |\n|---|---|---|")
        for doc in docs:
            click.echo(f"| `{doc.key}` | `{doc.default}` | {doc.doc} |")
        return
    table = RichTable("key", "default", "meaning")
    for doc in docs:
        table.add_row(doc.key, doc.default, doc.doc)
    console.print(table)
