"""`tablelog ui`: serve the dashboard of a warehouse (needs the ``ui`` extra)."""

from __future__ import annotations

import ipaddress

import click

from tablelog.cli.common import (
    err_console,
    friendly_errors,
    options_option,
    parse_options,
    warehouse_option,
)
from tablelog.errors import TablelogError


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@click.command("ui")
@warehouse_option
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on. The page has no authentication: anything but loopback "
                   "lets anyone who reaches it see every table.")
@click.option("--port", default=8900, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on.")
@click.option("--refresh", default=2.0, show_default=True, type=click.FloatRange(0.1),
              help="Seconds between the page's updates (a page opened with ?refresh=MS overrides it).")
@click.option("--log-timeout", default=3.0, show_default=True, type=click.FloatRange(0.1),
              help="Seconds a page waits for a log system before showing it as unreachable.")
@options_option
@friendly_errors
def ui_command(warehouse: str, host: str, port: int, refresh: float, log_timeout: float,
               raw_options: tuple[str, ...]) -> None:
    """Serve a dashboard of the warehouse's tables: snapshots, log positions, consumers,
    the live changelog and verify, with JSON endpoints under /api (documented at /docs).

    Options given with -o (credentials such as kafka.sasl.password, client settings)
    apply to every table opened; secrets are never shown.
    """
    try:
        import uvicorn

        from tablelog.ui.app import create_app
        from tablelog.ui.state import Dashboard
    except ImportError as err:
        raise TablelogError(f'tablelog ui needs the "ui" extra: pip install "tablelog[ui]" ({err})') from None
    exposed = not is_loopback(host)
    if exposed:
        err_console.print(f"[bold yellow]warning:[/] listening on {host}: the dashboard has no authentication; "
                          "anyone who can reach this address sees every table of the warehouse")
    dashboard = Dashboard(warehouse, parse_options(raw_options), refresh_s=refresh, log_timeout_s=log_timeout,
                          exposed=exposed)
    shown = f"[{host}]" if ":" in host else host
    err_console.print(f"tablelog ui: http://{shown}:{port}/  (API: /docs; Ctrl-C stops)")
    uvicorn.run(create_app(dashboard), host=host, port=port, log_level="warning")
