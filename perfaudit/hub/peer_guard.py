"""Each person's server, and Formgrader, answer only the hub's proxy and their own account: a server extension that
closes every other account's connection as it is accepted, before a byte of it is read.

A server listens on a loopback port, and /proc/net/tcp shows every account each port. Its token keeps a classmate
out of its pages, but tornado reads a request's body before any handler checks the token, and keeps every connection
it accepts: a classmate's unfinished 64 MiB bodies made the victim's server the largest process its owner had, and
the memory watchdog stopped the victim's kernel; 20000 idle connections left it "Too many open files". Here each
accepted connection's other end is looked up in the kernel's socket table (the socket diagnostics netlink, the
table `ss` reads): its owner must be root (the hub's proxy, which the hub starts as root) or the server's own account
(the person's terminal). Anything else is closed at once, and costs the server nothing but the accept.

Loaded with --ServerApp.jpserver_extensions (settings.GUARDED_PEERS), before the server binds its port: the
extension wraps the HTTP server's handler of new connections as the server makes it. Where the socket table cannot
be read (a kernel without socket diagnostics), the extension refuses to start the server rather than guard nothing.
"""

import ipaddress
import os
import socket
import struct
from collections.abc import Callable
from typing import Any

NETLINK_SOCK_DIAG = 4  # linux/netlink.h
SOCK_DIAG_BY_FAMILY = 20  # linux/sock_diag.h
NLM_F_REQUEST = 1
NO_COOKIE = 0xFFFFFFFF  # INET_DIAG_NOCOOKIE: look the socket up by its addresses alone
ALL_STATES = 0xFFFFFFFF
# struct nlmsghdr, then struct inet_diag_msg: family, state, timer, retrans, inet_diag_sockid (48 bytes), expires,
# rqueue, wqueue, then the uid
UID_AT = 16 + 4 + 48 + 12
STATE_AT = 16 + 1
ESTABLISHED = 1  # TCP_ESTABLISHED: an open connection's other end, while its owner holds it


def peer_uid(connection: socket.socket) -> int | None:
    """The uid of the account whose socket is the other end of a connection this machine accepted (loopback TCP,
    or a unix socket), or None where the kernel does not say."""
    if connection.family == socket.AF_UNIX:
        _, uid, _ = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
        return uid
    peer, own = connection.getpeername(), connection.getsockname()
    family, peer_address, own_address = _addresses(connection.family, peer[0], own[0])
    # the other end's socket: its local address is our peer's, its remote one ours
    sockid = (struct.pack("!HH", peer[1], own[1]) + peer_address + own_address
              + struct.pack("=III", 0, NO_COOKIE, NO_COOKIE))
    request = struct.pack("=BBBxI", family, socket.IPPROTO_TCP, 0, ALL_STATES) + sockid
    message = struct.pack("=IHHII", 16 + len(request), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, 1, 0) + request
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG) as table:
        table.settimeout(1.0)
        table.sendto(message, (0, 0))
        reply = table.recv(4096)
    if len(reply) < UID_AT + 4 or struct.unpack_from("=H", reply, 4)[0] != SOCK_DIAG_BY_FAMILY:
        return None  # NLMSG_ERROR: no such socket (it closed already), or no socket diagnostics here
    if reply[STATE_AT] != ESTABLISHED:  # closed by its owner: the table keeps it ownerless (uid 0, as root's)
        return None
    return int(struct.unpack_from("=I", reply, UID_AT)[0])


def _addresses(family: int, peer: str, own: str) -> tuple[int, bytes, bytes]:
    """(the family the other end's socket has, both addresses as inet_diag_sockid holds them: 16 bytes each). An IPv4
    peer of an IPv6 socket (::ffff:127.0.0.1) is an IPv4 socket on its side."""
    peer_ip, own_ip = ipaddress.ip_address(peer.split("%")[0]), ipaddress.ip_address(own.split("%")[0])
    if family == socket.AF_INET6 and peer_ip.ipv4_mapped is not None and own_ip.ipv4_mapped is not None:
        family, peer_ip, own_ip = socket.AF_INET, peer_ip.ipv4_mapped, own_ip.ipv4_mapped
    return family, peer_ip.packed.ljust(16, b"\0"), own_ip.packed.ljust(16, b"\0")


def allowed_uids() -> frozenset[int]:
    """Root (the hub and its proxy) and this process's own account."""
    return frozenset({0, os.getuid()})


def guarded(handle: Callable[[socket.socket, Any], Any], allowed: frozenset[int],
            refused: Callable[[int | None], None]) -> Callable[[socket.socket, Any], Any]:
    """handle(connection, address), called only for a connection whose other end an allowed account owns; any
    other is closed (refused(its uid) is told)."""

    def handle_allowed(connection: socket.socket, address: Any) -> Any:
        try:
            uid = peer_uid(connection)
        except OSError:  # the peer went away already, or the table is out of reach now: nothing to serve
            uid = None
        if uid not in allowed:
            connection.close()
            refused(uid)
            return None
        return handle(connection, address)

    return handle_allowed


def check_the_table_answers() -> None:
    """Look up the other end of a loopback connection made here: raises where the socket table cannot say it is
    this account's (the server would otherwise refuse everyone, the proxy included)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(1)
        with socket.create_connection(listening.getsockname(), timeout=5) as _:
            accepted, _ = listening.accept()
            with accepted:
                uid = peer_uid(accepted)
    if uid != os.getuid():
        raise RuntimeError(f"the kernel's socket table gave {uid!r} as the owner of a connection this account made "
                           f"(uid {os.getuid()}): this machine cannot tell who connects to a server, so none is "
                           "started (perfaudit/hub/peer_guard.py)")


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "perfaudit.hub.peer_guard"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    """Wrap the connection handler of the HTTP server the app makes next (init_httpserver runs after extensions
    load), so that it is guarded before the server binds its port."""
    check_the_table_answers()
    allowed, make_server = allowed_uids(), serverapp.init_httpserver
    log, closed = serverapp.log, [0]

    def refused(uid: int | None) -> None:
        closed[0] += 1
        if closed[0] & (closed[0] - 1) == 0:  # the 1st, 2nd, 4th, 8th...: a flood of them fills no log
            log.warning("Closed a connection from uid %s (%d closed so far): this server answers only the hub's "
                        "proxy and its own account.", uid, closed[0])

    def init_guarded_httpserver() -> None:
        make_server()
        server = serverapp.http_server
        server._handle_connection = guarded(server._handle_connection, allowed, refused)

    serverapp.init_httpserver = init_guarded_httpserver
    log.info("Connections from accounts other than uids %s are closed unread.", sorted(allowed))
