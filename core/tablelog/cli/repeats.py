"""A command-line option given twice with different values is an error.

Click keeps the last value of a single-valued option given twice (`-b 2 -b 3`,
`--schema A --schema B`) without a word. `-o KEY=VALUE` items are checked as they are
merged (:func:`tablelog.cli.common.parse_options`); every other option that takes one
value is checked here, before the command runs. An identical repeat passes.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

import click

from tablelog.errors import OptionError


def check_repeated_options(command: click.Command, ctx: click.Context, args: Sequence[str]) -> None:
    """Refuse ``args`` (the command's own arguments) that give one single-valued option
    twice with different values, naming both as they were given."""
    takes_values: dict[str, click.Option] = {}
    for declared in command.get_params(ctx):
        if isinstance(declared, click.Option) and not declared.is_flag and not declared.count:
            for opt in (*declared.opts, *declared.secondary_opts):
                takes_values[opt] = declared
    first: dict[str | None, tuple[str, str]] = {}  # option -> (as given, value)
    rest = list(args)
    while rest:
        token = rest.pop(0)
        if token == "--":
            return
        if not token.startswith("-") or token == "-":
            continue
        name, attached = _split(token)
        param = takes_values.get(name)
        if param is None:  # a flag, combined short flags or an unknown option: click judges
            continue
        values = [attached] if attached is not None else rest[: param.nargs]
        del rest[: 0 if attached is not None else param.nargs]
        if param.multiple or param.nargs != 1 or not values:
            continue
        value = values[0]
        shown = f"{name} {shlex.quote(value)}" if attached is None else shlex.quote(token)
        previous = first.setdefault(param.name, (shown, value))
        if not _same(param, ctx, previous[1], value):
            raise OptionError(
                f"option {'/'.join(sorted(param.opts, key=len))!r} is given twice with different values: "
                f"{previous[0]} and {shown}; give it once"
            )


def _split(token: str) -> tuple[str, str | None]:
    """``--bucket=3`` -> (``--bucket``, ``3``); ``-b3`` -> (``-b``, ``3``); ``-b`` -> (``-b``, None)."""
    if token.startswith("--"):
        name, sep, value = token.partition("=")
        return name, value if sep else None
    return token[:2], token[2:] or None


def _same(param: click.Option, ctx: click.Context, a: str, b: str) -> bool:
    """Equal as given, or equal once converted (``-b 2`` and ``--bucket=02``)."""
    if a == b:
        return True
    try:
        converted: list[Any] = [param.type.convert(v, param, ctx) for v in (a, b)]
    except click.BadParameter:
        return False
    return bool(converted[0] == converted[1])
