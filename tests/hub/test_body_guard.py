"""A request's body reaches a server only with what its login accepts (perfaudit/hub/body_guard.py): a real tornado
server with the guard, its handler counting the bytes it got; and the hub's own checks asked of headers alone, with
JupyterHub's HubOAuth and a cookie signed as the server signs its login cookie. The guard in a hub's servers, against
a classmate's upload through the proxy: tests/hub/test_hub.py."""

import asyncio
import subprocess
import sys
import socket

import pytest
from jupyterhub.services.auth import HubOAuth
from tornado import httpserver, httputil, web

from perfaudit.hub import body_guard

LOGIN = "X-Test-Login"  # the test's own stand-in for a login the guard accepts


class Counting(web.RequestHandler):
    """Refuses a request without the test's login, as an API handler does; says how many bytes of body it got."""

    def put(self) -> None:
        if self.request.headers.get(LOGIN) != "yes":
            raise web.HTTPError(403)
        self.write(str(len(self.request.body)))


async def _start(delivered):
    """A tornado server with the guard on a free port: (server, port). delivered: each chunk's size that got past
    the guard to the server's own delegate."""

    async def allowed(start_line, headers):
        return headers.get(LOGIN) == "yes"

    server = httpserver.HTTPServer(web.Application([(r"/x", Counting)]), max_body_size=64 * 2**20)
    start_request = server.start_request

    def guarded(server_conn, request_conn):
        delegate = start_request(server_conn, request_conn)
        data_received = delegate.data_received
        delegate.data_received = lambda chunk: (delivered.append(len(chunk)), data_received(chunk))[1]
        return body_guard.BodyGuard(delegate, allowed, lambda: None)

    server.start_request = guarded
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen(8)
    listening.setblocking(False)
    server.add_sockets([listening])
    return server, listening.getsockname()[1]


async def _put(port, body_bytes, login, send=None):
    """A PUT announcing body_bytes, of which `send` are sent (all by default); the status line back, or 'no answer'
    when none comes within 2 s of the last byte."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = f"PUT /x HTTP/1.1\r\nHost: t\r\nContent-Length: {body_bytes}\r\n" + (f"{LOGIN}: yes\r\n" if login else "")
    writer.write((head + "\r\n").encode())
    sent = body_bytes if send is None else send
    for start in range(0, sent, 2**20):
        writer.write(b"x" * min(2**20, sent - start))
        await writer.drain()
    try:
        answer = await asyncio.wait_for(reader.read(4096), timeout=2)
        return answer.decode(errors="replace")
    except asyncio.TimeoutError:
        return "no answer"
    finally:
        writer.close()


def _run(body_bytes, login, send=None):
    async def go():
        delivered = []
        server, port = await _start(delivered)
        try:
            answer = await _put(port, body_bytes, login, send)
        finally:
            server.stop()
        return answer, sum(delivered)

    return asyncio.run(go())


def test_a_body_with_the_login_reaches_the_handler_whole():
    answer, delivered = _run(3 * 2**20 + 5, login=True)
    assert answer.startswith("HTTP/1.1 200") and answer.endswith(str(3 * 2**20 + 5)), answer
    assert delivered == 3 * 2**20 + 5


def test_a_body_without_the_login_is_dropped_and_the_request_refused():
    answer, delivered = _run(3 * 2**20, login=False)
    assert answer.startswith("HTTP/1.1 403"), answer
    assert delivered == 0


def test_an_unfinished_upload_without_the_login_leaves_the_server_nothing():
    """8 of 48 MiB sent and the connection held: what a classmate's flood did, twenty times over."""
    answer, delivered = _run(48 * 2**20, login=False, send=8 * 2**20)
    assert answer == "no answer" and delivered == 0


def test_a_request_without_a_body_is_not_held_back():
    assert not body_guard.announces_a_body(httputil.HTTPHeaders({"Content-Length": "0"}))
    assert body_guard.announces_a_body(httputil.HTTPHeaders({"Transfer-Encoding": "chunked"}))


@pytest.mark.parametrize(("path", "headers", "expected"), [
    ("/user/a/api/contents?token=abc", {}, (None, "abc")),
    ("/user/a/api/contents", {"Authorization": "token abc"}, (None, "abc")),
    ("/user/a/api/contents", {"Authorization": "Bearer abc"}, (None, "abc")),
    ("/user/a/api/contents", {"Authorization": "Basic abc"}, (None, None)),
    ("/user/a/api/contents", {"Cookie": "other=1; login=signed"}, ("signed", None)),
])
def test_the_credentials_are_found_where_jupyterhub_looks(path, headers, expected):
    start_line = httputil.RequestStartLine("PUT", path, "HTTP/1.1")
    assert body_guard.credentials(start_line, httputil.HTTPHeaders(headers), "login") == expected


def test_the_hub_s_login_cookie_passes_only_signed_with_this_server_s_secret():
    """The server's login cookie as its HubOAuth sets it (tornado's signed value under the cookie's name), signed with
    this server's secret: allowed. The same with a classmate's server's secret, or no credential: not; the hub is
    never asked (its address here answers nothing)."""
    hub_auth = HubOAuth(api_token="unused", api_url="http://127.0.0.1:9/hub/api", oauth_client_id="jupyterhub-user-a",
                        cache_max_age=0)
    ours, theirs = b"a" * 32, b"b" * 32
    allowed = body_guard.hub_allowed(hub_auth, ours)
    start_line = httputil.RequestStartLine("PUT", "/user/a/api/contents/x", "HTTP/1.1")

    def with_cookie(secret):
        value = web.create_signed_value(secret, hub_auth.cookie_name, "a-token").decode()
        return httputil.HTTPHeaders({"Cookie": f"{hub_auth.cookie_name}={value}"})

    assert asyncio.run(allowed(start_line, with_cookie(ours)))
    assert not asyncio.run(allowed(start_line, with_cookie(theirs)))
    assert not asyncio.run(allowed(start_line, httputil.HTTPHeaders({})))


BOUNDED = """
import asyncio
from tornado import httpserver, netutil, web
from perfaudit.hub import body_guard

body_guard.bound_the_hub_s_own_requests()  # as jupyterhub_config.py does, before the hub makes its server


class Login(web.RequestHandler):
    def post(self):
        self.write(str(len(self.request.body)))


async def send(port, size):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"POST /hub/login HTTP/1.1\\r\\nHost: x\\r\\nContent-Length: {size}\\r\\n\\r\\n".encode())
    try:
        writer.write(b"x" * size)
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(200), 10)
    except (OSError, asyncio.TimeoutError):  # closed while it was sent: a body over the limit
        answer = b""
    writer.close()
    return answer.decode(errors="replace").split("\\r\\n\\r\\n")[-1] if answer else "closed"


async def main():
    [listener] = netutil.bind_sockets(0, "127.0.0.1")
    server = httpserver.HTTPServer(web.Application([("/hub/login", Login)]))  # as JupyterHub makes it: no size given
    server.add_sockets([listener])
    port = listener.getsockname()[1]
    print(await send(port, 1000), await send(port, 8 * 2**20), flush=True)


asyncio.run(main())
"""


def test_the_hub_s_own_server_reads_a_small_body_and_closes_on_a_large_one():
    """JupyterHub's own HTTP server, which the proxy hands anyone's request (a login, without an account), read 100 MB
    of a body by default: 24 unfinished logins held 2.4 GB in the hub. Bounded as the hub's configuration bounds it,
    in a process of its own (the bound holds for every server of the process), a login's small body is read and an
    8 MiB one is closed unread."""
    done = subprocess.run([sys.executable, "-c", BOUNDED], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["1000", "closed"], done.stdout + done.stderr[-2000:]
