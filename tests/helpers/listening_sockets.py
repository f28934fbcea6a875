"""Which sockets a process holds, read as the kernel shows them: /proc/net/tcp, tcp6 and unix list each socket with
its inode (and, for TCP, the uid of its owner: every account reads these), /proc/<pid>/fd a process's sockets as
`socket:[inode]` (only its owner and root read that)."""

import os
import socket

LISTEN = "0A"  # a TCP socket's state in /proc/net/tcp: listening


def listening_tcp():
    """{inode: (address, port, uid)} of every listening TCP socket of the machine, IPv4 and IPv6."""
    found = {}
    for table, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
        try:
            lines = open(table).read().splitlines()[1:]
        except OSError:  # no IPv6 on this machine
            continue
        for line in lines:
            fields = line.split()
            if fields[3] != LISTEN:
                continue
            address, port = fields[1].split(":")
            raw = bytes.fromhex(address)  # 32 bits at a time, each in this machine's (little-endian) order
            host = socket.inet_ntop(family, b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4)))
            found[int(fields[9])] = (host, int(port, 16), int(fields[7]))
    return found


def unix_paths():
    """{inode: path} of every unix socket of the machine bound to a path."""
    found = {}
    for line in open("/proc/net/unix").read().splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 8 and fields[7].startswith("/"):
            found[int(fields[6])] = fields[7]
    return found


def held_by(pid):
    """The inodes of the sockets process pid holds (its threads share its descriptors)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:  # closed since listed
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[len("socket:["):-1]))
    return inodes
