"""Each person's server, and Formgrader, read a request's body only once the request shows it may: a server extension
that decides, when a request's headers are in, whether its body reaches the server at all.

The hub's proxy hands a person's server every request under /user/<name>/, whoever sends it, and tornado reads the
whole body (up to settings.REQUEST_BODY_LIMIT) before any handler looks at the token: a classmate's twenty
unfinished 64 MiB uploads, sent through the proxy without logging in, grew a student's server by 1.3 GB until its
own requests failed, and did the same to Formgrader. Here a request that announces a body is let through only with
what the server's own authentication would accept: its login cookie, signed with this server's secret (only its
own OAuth login sets it), or a token (header or URL) the hub says has access to this server. Any other request goes
on without its body, whose bytes are dropped as they arrive: its handler finds it unauthenticated and refuses it
as before (403, or the login page), and the server holds nothing of it.

Loaded with --ServerApp.jpserver_extensions (settings.GUARDED_BODIES) in a server the hub started
(jupyterhub.singleuser, whose identity provider holds the hub's OAuth client), before the server binds its port.
"""

import http.cookies
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tornado import httpserver, httputil, web

Allowed = Callable[[httputil.RequestStartLine, httputil.HTTPHeaders], Awaitable[bool]]


def announces_a_body(headers: httputil.HTTPHeaders) -> bool:
    """Whether the request says a body follows (a length above 0, or chunks)."""
    return headers.get("Content-Length", "0").strip() not in ("", "0") or "Transfer-Encoding" in headers


class BodyGuard(httputil.HTTPMessageDelegate):
    """The server's delegate for one request, its body dropped unless allowed(start line, headers) says otherwise."""

    def __init__(self, delegate: httputil.HTTPMessageDelegate, allowed: Allowed, dropped: Callable[[], None]) -> None:
        self.delegate, self.allowed, self.dropped, self.dropping = delegate, allowed, dropped, False

    def headers_received(self, start_line: Any, headers: httputil.HTTPHeaders) -> Awaitable[None] | None:
        if not announces_a_body(headers):
            return self.delegate.headers_received(start_line, headers)

        async def decided() -> None:  # tornado reads no byte of the body before this is done
            self.dropping = not await self.allowed(start_line, headers)
            if self.dropping:
                self.dropped()
            passed = self.delegate.headers_received(start_line, headers)
            if passed is not None:
                await passed

        return decided()

    def data_received(self, chunk: bytes) -> Awaitable[None] | None:
        return None if self.dropping else self.delegate.data_received(chunk)

    def finish(self) -> None:
        self.delegate.finish()

    def on_connection_close(self) -> None:
        self.delegate.on_connection_close()


def credentials(start_line: httputil.RequestStartLine, headers: httputil.HTTPHeaders,
                cookie_name: str) -> tuple[str | None, str | None]:
    """(the login cookie's value, the token) the request carries, as JupyterHub's HubAuth looks for them: a token in
    the URL (?token=) or the Authorization header (token or bearer), the cookie by its name."""
    token = parse_qs(urlsplit(start_line.path).query).get("token", [None])[0]
    if not token:
        scheme, _, value = headers.get("Authorization", "").strip().partition(" ")
        token = value.strip() if scheme.lower() in ("token", "bearer") and value.strip() else None
    cookies: http.cookies.SimpleCookie = http.cookies.SimpleCookie()
    for line in headers.get_list("Cookie"):
        try:
            cookies.load(line)
        except http.cookies.CookieError:
            continue
    morsel = cookies.get(cookie_name)
    return (morsel.value if morsel else None), token


def hub_allowed(hub_auth: Any, cookie_secret: bytes) -> Allowed:
    """What the server's JupyterHub identity provider would accept, asked of the headers alone."""

    async def allowed(start_line: httputil.RequestStartLine, headers: httputil.HTTPHeaders) -> bool:
        cookie, token = credentials(start_line, headers, hub_auth.cookie_name)
        if cookie and web.decode_signed_value(cookie_secret, hub_auth.cookie_name, cookie) is not None:
            return True  # this server's own login set it: its handler checks the token inside
        if not token:
            return False
        user = await hub_auth.user_for_token(token, use_cache=True, sync=False)
        return bool(user and hub_auth.check_scopes(hub_auth.access_scopes, user))

    return allowed


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "perfaudit.hub.body_guard"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    """Guard each request of the HTTP server the app makes next (init_httpserver runs after extensions load)."""
    hub_auth = getattr(serverapp.identity_provider, "hub_auth", None)
    if hub_auth is None:
        raise RuntimeError("perfaudit.hub.body_guard guards a server the hub started (jupyterhub.singleuser): this "
                           "one has no hub login to check requests against")
    make_server, log, count = serverapp.init_httpserver, serverapp.log, [0]

    def dropped() -> None:
        count[0] += 1
        if count[0] & (count[0] - 1) == 0:  # the 1st, 2nd, 4th, 8th...: a flood of them fills no log
            log.warning("Dropped the body of a request without this server's login (%d so far): its handler "
                        "refuses it.", count[0])

    def init_guarded_httpserver() -> None:
        make_server()
        server = serverapp.http_server
        allowed = hub_allowed(hub_auth, serverapp.web_app.settings["cookie_secret"])
        start_request = server.start_request
        server.start_request = lambda server_conn, request_conn: BodyGuard(
            start_request(server_conn, request_conn), allowed, dropped)

    serverapp.init_httpserver = init_guarded_httpserver
    log.info("A request's body is read only with this server's login.")


HUB_BODY_LIMIT = 2**20  # the hub's own requests: its login form and its API's JSON, a few KB


def bound_the_hub_s_own_requests(limit: int = HUB_BODY_LIMIT) -> None:
    """Every HTTP server the hub's process makes (its own, whose pages the proxy serves to anyone) reads at most
    limit bytes of a request's body, and closes a connection that announces more: JupyterHub gives no setting of
    its own for it, and tornado's default is 100 MB a request. A held-out attacker's 24 unfinished logins of 100 MB
    each, sent through the proxy without an account, grew the hub (root's, no one's share) from 158 MB to 2.4 GB.
    Called from jupyterhub_config.py, in the hub's process, before the hub makes its server."""
    if getattr(httpserver.HTTPServer.initialize, "bounded", False):
        return
    initialize = httpserver.HTTPServer.initialize

    def bounded(self, *args, **kwargs):
        kwargs["max_body_size"] = min(kwargs.get("max_body_size") or limit, limit)
        kwargs["max_buffer_size"] = min(kwargs.get("max_buffer_size") or limit, limit)
        return initialize(self, *args, **kwargs)

    bounded.bounded = True  # type: ignore[attr-defined]
    httpserver.HTTPServer.initialize = bounded  # type: ignore[method-assign]
