"""`tablelog plugins` and `tablelog options`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import click
from rich.markup import escape
from rich.table import Table as RichTable

from tablelog.cli.common import console
from tablelog.errors import TablelogError
from tablelog.logs import discovery
from tablelog.options import DEFINES_LOG, option_docs
from tablelog.records import OptionSpec


@click.command()
def plugins() -> None:
    """List the installed log systems with their distributions and versions."""
    table = RichTable("log.system", "distribution", "version", "module", "status")
    for item in discovery.installed_log_systems():
        status = "[green]ok[/]" if item.error is None else f"[red]unavailable[/]: {escape(item.error)}"
        table.add_row(item.name, item.distribution, item.version, item.module, status)
    console.print(table)


def spec_default(spec: OptionSpec) -> str:
    """What the option listings show as an option's default."""
    if spec.required:
        return "required"
    return "—" if spec.default is None else spec.default


def spec_meaning(spec: OptionSpec) -> str:
    """What the option listings show as an option's meaning: its doc, and whether it
    names the topic (each further stream's is its value with the stream's suffix) or
    otherwise defines the table."""
    if spec.names_topic:
        return spec.doc + " **Names the topic** (the projection stream's is `<value>.projection`);" + DEFINES_LOG
    return spec.doc + (DEFINES_LOG if spec.defines_table else "")


def option_spec_table(specs: Iterable[OptionSpec]) -> str:
    """Markdown table of a log system's options: key, default (or "required"), secret, meaning."""
    lines = ["| key | default | secret | meaning |", "|---|---|---|---|"]
    for spec in specs:
        default = spec_default(spec)
        shown = default if default in ("required", "—") else f"`{default}`"
        lines.append(f"| `{spec.key}` | {shown} | {'yes' if spec.secret else ''} | {spec_meaning(spec)} |")
    return "\n".join(lines)


def _log_systems(names: Sequence[str]) -> list[tuple[discovery.Installed, list[OptionSpec] | str]]:
    """The installed log systems (those in ``names``, when given) with their option specs,
    or why they cannot be loaded."""
    installed = {item.name: item for item in discovery.installed_log_systems()}
    unknown = [name for name in names if name not in installed]
    if unknown:
        raise click.BadParameter(
            f"{', '.join(map(repr, unknown))}: not installed; installed log systems: "
            f"{', '.join(sorted(installed)) or 'none'}", param_hint="'--log-system'",
        )
    result: list[tuple[discovery.Installed, list[OptionSpec] | str]] = []
    for name in names or sorted(installed):
        item = installed[name]
        try:
            result.append((item, discovery.load_log_system(name).option_specs()))
        except TablelogError as err:
            result.append((item, str(err)))
    return result


@click.command("options")
@click.option("--markdown", is_flag=True, help="Print the option tables as Markdown (for the docs).")
@click.option("--log-system", "log_systems", multiple=True, metavar="NAME",
              help="List only this log system's options (repeatable); default: every installed one.")
def options_command(markdown: bool, log_systems: tuple[str, ...]) -> None:
    """List every table option with its default and meaning, then each installed log
    system's options (keys with its prefix)."""
    docs = option_docs()
    systems = _log_systems(log_systems)
    if markdown:
        click.echo("| key | default | meaning |\n|---|---|---|")
        for doc in docs:
            click.echo(f"| `{doc.key}` | `{doc.default}` | {doc.doc} |")
        for item, specs in systems:
            click.echo(f"\n### `log.system = {item.name}`\n")
            click.echo(f"From {item.distribution} {item.version} (`{item.module}`).\n")
            click.echo(f"Not available: {specs}" if isinstance(specs, str) else option_spec_table(specs))
        return
    table = RichTable("key", "default", "meaning", title="table options")
    for doc in docs:
        table.add_row(doc.key, doc.default, doc.doc)
    console.print(table)
    for item, specs in systems:
        title = f"log.system = {item.name} ({item.distribution} {item.version})"
        if isinstance(specs, str):
            console.print(f"\n{escape(title)}: [red]unavailable[/]: {escape(specs)}")
            continue
        system_table = RichTable("key", "default", "secret", "meaning", title=escape(title))
        for spec in specs:
            system_table.add_row(spec.key, spec_default(spec), "yes" if spec.secret else "", spec_meaning(spec))
        console.print(system_table)
