"""Who may see the dashboard: a token, checked on every request but the login page.

A client proves it knows the token with an ``Authorization: Bearer <token>`` header (a
scraper, a script) or with the session cookie the login page sets once the token is
entered (a browser). The cookie holds an HMAC of the token, not the token. Both are
compared in constant time. Without either, ``/`` answers with the login page and every
other path with 401: no table name, row or figure is served.
"""

from __future__ import annotations

import hashlib
import hmac
import html
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

if TYPE_CHECKING:  # imported where used: only tablelog.ui.app imports the web framework at import time
    from starlette.requests import Request
    from starlette.responses import Response

COOKIE = "tablelog_ui_session"
LOGIN_PATH = "/login"
#: The longest login form body read (a token is far shorter).
_MAX_FORM_BYTES = 4096


def session_value(token: str) -> str:
    """What the session cookie holds for ``token``: an HMAC of it, not the token."""
    return hmac.new(token.encode(), b"tablelog ui session", hashlib.sha256).hexdigest()


class TokenAccess:
    """The dashboard's requests checked against ``token`` (see the module docstring)."""

    def __init__(self, token: str) -> None:
        if not token:
            raise ValueError("the dashboard's token is empty")
        self._token = token.encode()
        self._session = session_value(token).encode()

    def allows(self, request: Request) -> bool:
        header = request.headers.get("authorization", "")
        scheme, _, given = header.partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self._token):
            return True
        cookie = request.cookies.get(COOKIE, "")
        return bool(cookie) and hmac.compare_digest(cookie.encode(), self._session)

    async def __call__(self, request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        """The middleware: the login page and its form are open; the rest needs the token."""
        from starlette.responses import HTMLResponse, JSONResponse

        if request.url.path == LOGIN_PATH:
            return await self._login(request)
        if self.allows(request):
            return await call_next(request)
        if request.url.path == "/" and request.method == "GET":
            return HTMLResponse(login_page(), status_code=401)
        return JSONResponse({"detail": "authentication required: send 'Authorization: Bearer <token>', or "
                                       "log in at /login"}, status_code=401,
                            headers={"WWW-Authenticate": 'Bearer realm="tablelog ui"'})

    async def _login(self, request: Request) -> Response:
        from starlette.responses import HTMLResponse, RedirectResponse

        if request.method != "POST":
            return HTMLResponse(login_page())
        body = (await request.body())[:_MAX_FORM_BYTES].decode("utf-8", "replace")
        given = (parse_qs(body).get("token") or [""])[0]
        if not hmac.compare_digest(given.encode(), self._token):
            return HTMLResponse(login_page(failed=True), status_code=401)
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(COOKIE, self._session.decode(), httponly=True, samesite="strict",
                            secure=request.url.scheme == "https", path="/")
        return response


def login_page(*, failed: bool = False) -> str:
    """The page a browser without the session gets: a form for the token, nothing else."""
    note = "<p class='failed'>That token is not this dashboard's.</p>" if failed else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>tablelog ui: log in</title>
<style>body{{font-family:sans-serif;max-width:28rem;margin:4rem auto}}.failed{{color:#b00}}</style></head>
<body><h1>tablelog ui</h1><p>This dashboard needs its token.</p>{note}
<form method="post" action="{html.escape(LOGIN_PATH)}">
<label for="token">Token</label> <input id="token" name="token" type="password" autocomplete="current-password">
<button id="login" type="submit">Log in</button></form></body></html>"""
