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

#: The environment variable the token is taken from when ``--token`` is not given.
TOKEN_VARIABLE = "TABLELOG_UI_TOKEN"


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
              help="Address to listen on. Anything but loopback needs --token (or --no-auth).")
@click.option("--port", default=8900, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on.")
@click.option("--token", envvar=TOKEN_VARIABLE, default=None, show_envvar=True,
              help="The token every client must give: a browser once, on the login page; a scraper as "
                   "'Authorization: Bearer <token>'. Prefer the variable: a command line is visible to "
                   "every user of the machine.")
@click.option("--no-auth", is_flag=True,
              help="Serve without a token on a non-loopback address: anyone who reaches it sees every table.")
@click.option("--certfile", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Serve HTTPS with this certificate (PEM, the chain after it); needs --keyfile.")
@click.option("--keyfile", type=click.Path(exists=True, dir_okay=False), default=None,
              help="The private key of --certfile (PEM).")
@click.option("--refresh", default=2.0, show_default=True, type=click.FloatRange(0.1),
              help="Seconds between the page's updates (a page opened with ?refresh=MS overrides it).")
@click.option("--log-timeout", default=3.0, show_default=True, type=click.FloatRange(0.1),
              help="Seconds a page waits for a log system before showing it as unreachable.")
@options_option
@friendly_errors
def ui_command(warehouse: str, host: str, port: int, token: str | None, no_auth: bool, certfile: str | None,
               keyfile: str | None, refresh: float, log_timeout: float, raw_options: tuple[str, ...]) -> None:
    """Serve a dashboard of the warehouse's tables: snapshots, log positions, consumers,
    the live changelog and verify, with JSON endpoints under /api (documented at /docs)
    and Prometheus metrics at /metrics.

    Options given with -o (credentials such as kafka.sasl.password, client settings)
    apply to every table opened; secrets are never shown.
    """
    exposed = not is_loopback(host)
    check_access(host, exposed, token, no_auth, certfile, keyfile)
    try:
        import uvicorn

        from tablelog.ui.app import create_app
        from tablelog.ui.state import Dashboard
    except ImportError as err:
        raise TablelogError(f'tablelog ui needs the "ui" extra: pip install "tablelog[ui]" ({err})') from None
    if exposed and token is None:
        err_console.print(f"[bold yellow]warning:[/] listening on {host} without a token (--no-auth): anyone who "
                          "can reach this address sees every table of the warehouse")
    dashboard = Dashboard(warehouse, parse_options(raw_options), refresh_s=refresh, log_timeout_s=log_timeout,
                          exposed=exposed and token is None, authenticated=token is not None)
    shown = f"[{host}]" if ":" in host else host
    scheme = "https" if certfile else "http"
    err_console.print(f"tablelog ui: {scheme}://{shown}:{port}/  (API: /docs, metrics: /metrics"
                      + ("; a token is required" if token else "") + "; Ctrl-C stops)")
    uvicorn.run(create_app(dashboard, token), host=host, port=port, log_level="warning",
                ssl_certfile=certfile, ssl_keyfile=keyfile)


def check_access(host: str, exposed: bool, token: str | None, no_auth: bool, certfile: str | None,
                 keyfile: str | None) -> None:
    """Refuse a dashboard anyone on the network could read by mistake, and HTTPS half set up."""
    if token is not None and not token.strip():
        raise click.UsageError(f"--token (or {TOKEN_VARIABLE}) is empty")
    if token is not None and no_auth:
        raise click.UsageError(f"--no-auth and a token (--token or {TOKEN_VARIABLE}) contradict each other")
    if exposed and token is None and not no_auth:
        raise click.UsageError(
            f"--host {host} serves every table of the warehouse to anyone who reaches it: give a token "
            f"(set {TOKEN_VARIABLE}, or --token), or --no-auth to serve it without one")
    if (certfile is None) != (keyfile is None):
        raise click.UsageError("--certfile and --keyfile go together: HTTPS needs the certificate and its key")
