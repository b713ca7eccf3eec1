"""Shared CLI pieces: the warehouse option, `-o key=value` options, error display."""

from __future__ import annotations

import contextlib
import functools
import io
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.markup import escape

from tablelog.errors import LogUnavailableError, OptionError, TablelogError, WarehouseError
from tablelog.options import same_value
from tablelog.redaction import shown_value

# Piped output (files, CI logs) gets wide tables instead of rich's 80-column default.
_PIPED_WIDTH = None if sys.stdout.isatty() else 160
console = Console(highlight=False, width=_PIPED_WIDTH)
err_console = Console(stderr=True, highlight=False, width=_PIPED_WIDTH)

F = TypeVar("F", bound=Callable[..., Any])

warehouse_option = click.option(
    "--warehouse", "-w", envvar="TABLELOG_WAREHOUSE", required=True, show_envvar=True,
    help="Warehouse holding the tables: a directory, a file:// URL or an s3:// URL (connection: "
    "-o s3.endpoint=URL and the s3.* options, or the AWS_* variables).",
)
table_argument = click.argument("table", metavar="DB.NAME")
options_option = click.option(
    "--option", "-o", "raw_options", multiple=True, metavar="KEY=VALUE",
    help="A table option (repeatable), e.g. -o log.system=kafka -o kafka.bootstrap.servers=HOST:PORT.",
)


def parse_options(raw: tuple[str, ...], **flags: tuple[str, str | None]) -> dict[str, str]:
    """``-o KEY=VALUE`` items as a dict, and ``flags`` (option key -> (flag, value)) merged
    in. A key given twice with different values (``-o a=1 -o a=2``, ``-b 2 -o bucket=3``)
    is an error naming both: a dict would silently keep one. An identical repeat passes."""
    from tablelog.logs.discovery import learn_declared_secrets

    learn_declared_secrets(item.partition("=")[0] for item in raw)
    result: dict[str, str] = {}
    given_as: dict[str, str] = {}
    for item in raw:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"expected KEY=VALUE, got {key!r} without '='")
        _merge(result, given_as, key.strip(), value, f"-o {key.strip()}={shown_value(key.strip(), value)}")
    for key, (flag, flag_value) in flags.items():
        if flag_value is not None:
            _merge(result, given_as, key, flag_value, f"{flag} {shown_value(key, flag_value)}")
    return result


def _merge(result: dict[str, str], given_as: dict[str, str], key: str, value: str, shown: str) -> None:
    """Add ``key``: ``value`` (given as ``shown``, a secret already redacted) to ``result``."""
    folded = key.lower()
    previous = next((k for k in result if k.lower() == folded), None)
    if previous is not None:
        if not same_value(folded, result[previous], value):
            raise OptionError(
                f"option {folded!r} is given twice with different values: {given_as[previous]} and {shown}"
            )
        return
    result[key] = value
    given_as[key] = shown


#: Exit code when the log system cannot be reached (an outage, not bad input or bad data).
EXIT_LOG_UNAVAILABLE = 3
#: Exit code of a usage error: click's, for a bad flag or argument, and tablelog's for a
#: warehouse that cannot be one (the ``--warehouse`` given is wrong).
EXIT_USAGE = 2


def friendly_errors(func: F) -> F:
    """Show tablelog errors as one clear line and exit 1 (2 for a warehouse that cannot be
    one, 3 when the log system cannot be reached), instead of a traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except LogUnavailableError as err:
            err_console.print(f"[bold red]error:[/] {escape(str(err))}", markup=True, soft_wrap=True)
            raise SystemExit(EXIT_LOG_UNAVAILABLE) from None
        except TablelogError as err:
            # escape: a message's own brackets (pip install "tablelog[kafka]") are not markup
            err_console.print(f"[bold red]error:[/] {escape(str(err))}", markup=True, soft_wrap=True)
            raise SystemExit(EXIT_USAGE if isinstance(err, WarehouseError) else 1) from None
        except BrokenPipeError:
            # Whoever read the output went away (`| head`): stop quietly, as Unix tools do,
            # and keep Python from complaining when it flushes stdout at exit.
            with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise SystemExit(1) from None
        except OSError as err:  # a warehouse path that cannot be created, read or written
            where = f" {err.filename}" if err.filename else ""
            err_console.print(
                f"[bold red]error:[/] cannot use{escape(where)}: {escape(err.strerror or str(err))}; "
                "the warehouse must be a directory this process can create, read and write",
                markup=True, soft_wrap=True,
            )
            raise SystemExit(EXIT_USAGE) from None

    return wrapper  # type: ignore[return-value]
