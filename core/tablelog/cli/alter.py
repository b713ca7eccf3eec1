"""`tablelog alter`: change a table's schema (see docs/schema-evolution.md)."""

from __future__ import annotations

import re

import click

from tablelog.cli.common import console, friendly_errors, table_argument, warehouse_option
from tablelog.cli.tables import parse_schema
from tablelog.commit.log_commit import shown_log
from tablelog.errors import OptionError
from tablelog.schema_rules import describe
from tablelog.store import AddColumn, DropColumn, RenameColumn, SchemaChange, SetOption, WidenColumn
from tablelog.table import internals
from tablelog.tables import open_table

_ADD = re.compile(
    r"\s*(?P<column>\S+\s+.+?)(?P<not_null>\s+not\s+null)?(?:\s+(?P<first>first)|\s+after\s+(?P<after>\S+))?\s*",
    re.IGNORECASE,
)


def parse_add(text: str) -> AddColumn:
    """``"note string"``, ``"note string first"``, ``"price decimal(12,2) after id"``."""
    match = _ADD.fullmatch(text)
    if match is None:
        raise OptionError(f"--add {text!r}: expected 'NAME TYPE [not null] [first | after COLUMN]'")
    field = parse_schema(match["column"])[0]
    return AddColumn(field.name, field.type, first=bool(match["first"]), after=match["after"],
                     nullable=not match["not_null"])


def parse_pair(flag: str, text: str, separator: str) -> tuple[str, str]:
    old, sep, new = text.partition(separator)
    if not sep or not old.strip() or not new.strip():
        example = "old=new" if separator == "=" else "KEY=VALUE"
        raise OptionError(f"{flag} {text!r}: expected {example}")
    return old.strip(), new.strip()


@click.command()
@warehouse_option
@table_argument
@click.option("--add", "adds", multiple=True, metavar="'NAME TYPE [first|after COL]'",
              help="Add a nullable column (repeatable), e.g. --add 'note string after id'.")
@click.option("--rename", "renames", multiple=True, metavar="OLD=NEW", help="Rename a column (repeatable).")
@click.option("--widen", "widens", multiple=True, metavar="'NAME TYPE'",
              help="Widen a column's type (repeatable), e.g. --widen 'qty bigint'.")
@click.option("--drop", "drops", multiple=True, metavar="NAME", help="Drop a column (repeatable).")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Set a table option (repeatable).")
@click.option("--option", "-o", "raw_options", multiple=True, metavar="KEY=VALUE",
              help="A runtime option to open the table with (s3.*, secrets, the address of a log "
                   "being attached), repeatable.")
@friendly_errors
def alter(warehouse: str, table: str, adds: tuple[str, ...], renames: tuple[str, ...], widens: tuple[str, ...],
          drops: tuple[str, ...], sets: tuple[str, ...], raw_options: tuple[str, ...]) -> None:
    """Change a table's schema: add, rename, widen, drop columns (in that order), set options.

    All changes become one new schema, or none does: a change that is not allowed (a
    narrowing type, a primary-key column, the bucket count...) is an error and nothing
    changes. Records written before keep their schema; readers return them in theirs.

    --set log.system=SYSTEM (or the topic's option) attaches a log to the table, moves it
    to another one, or detaches it (none): the new log's options come from -o (stored but
    for secrets) and --set, its topic is created, and every later commit writes to it
    (docs/attaching.md). With it, --set may give log.format, log.changelog-mode,
    log.key.format, log.system.partitions and log.arrow.projection of the new log.
    """
    from tablelog.cli.common import parse_options

    changes: list[SchemaChange] = [parse_add(text) for text in adds]
    changes += [RenameColumn(*parse_pair("--rename", text, "=")) for text in renames]
    for text in widens:
        field = parse_schema(text)[0]
        changes.append(WidenColumn(field.name, field.type))
    changes += [DropColumn(name.strip()) for name in drops]
    changes += [SetOption(*parse_pair("--set", text, "=")) for text in sets]
    if not changes:
        raise click.UsageError("name at least one change: --add, --rename, --widen, --drop or --set")
    opened = open_table(warehouse, table, parse_options(raw_options))
    log_before = internals(opened).log_name
    schema_id = opened.alter(*changes)
    for change in changes:
        console.print(f"{describe(change)}")
    if internals(opened).log_name != log_before:
        latest = internals(opened).files.latest_snapshot()
        console.print(f"log: {shown_log(internals(opened).log_name)}, from snapshot "
                      f"{latest.id if latest else 0} on (before: {shown_log(log_before)})")
    console.print(f"altered {opened.identifier}: schema {schema_id}, columns "
                  f"{', '.join(f'{f.name} {f.type}' for f in opened.schema)}")
