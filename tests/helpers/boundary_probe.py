"""The boundary probe: run inside a graded kernel, it lists everything the kernel can write or connect to, so a
test can hold the sandbox to what perfaudit/autograde/isolation/boundary.py says it may touch. Its source is sent to
the kernel as a cell (`python -c` works too); it prints one JSON object:

- mounts: {mount point: [file system type, mount options, file system options]}, from /proc/self/mountinfo;
- writable: every folder where a new file can be made, and every file, device or /proc entry open for writing;
- sockets: every Unix socket file it can see;
- descriptors: {fd: [what it points to, whether it is open for writing]} of its own process.

It walks every mount but /proc and /sys (there it tries /proc's files outside the process folders, and /proc/sys,
/sys's own folders), never following a link. It changes nothing: a trial file is removed at once.
"""

PROBE = r'''
import json
import os
import stat

mounts = {}
for line in open("/proc/self/mountinfo"):
    left, right = line.split(" - ", 1)
    fields, others = left.split(), right.split()
    point = fields[4].encode().decode("unicode_escape")
    mounts[point] = [others[0], fields[5], others[2] if len(others) > 2 else ""]

writable, sockets = [], []


def try_to_make_a_file(folder):
    trial = os.path.join(folder, ".boundary-probe-trial")
    try:
        fd = os.open(trial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError:
        return False
    os.close(fd)
    os.unlink(trial)
    return True


def look_at_file(path):
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return
    if stat.S_ISSOCK(mode):
        sockets.append(path)
    elif (stat.S_ISREG(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode)) and \
            os.access(path, os.W_OK, follow_symlinks=False):
        writable.append(path)


for top in sorted(mounts):
    if top == "/proc" or top.startswith(("/proc/", "/sys")):
        continue
    for root, dirs, files in os.walk(top):
        if root != top and root in mounts:  # walked from its own mount point
            dirs[:] = []
            continue
        if try_to_make_a_file(root):
            writable.append(root)
        for name in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            look_at_file(os.path.join(root, name))

for name in os.listdir("/proc"):
    if not name.isdigit() and name not in ("self", "thread-self", "sys"):
        look_at_file(os.path.join("/proc", name))
for root, dirs, files in os.walk("/proc/sys"):
    for name in files:
        look_at_file(os.path.join(root, name))

descriptors = {}
for fd in os.listdir("/proc/self/fd"):
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
        flags = int(open(f"/proc/self/fdinfo/{fd}").read().split("flags:")[1].split()[0], 8)
    except (OSError, IndexError, ValueError):
        continue
    descriptors[fd] = [target, bool(flags & (os.O_WRONLY | os.O_RDWR))]

print(json.dumps({"mounts": mounts, "writable": sorted(writable), "sockets": sorted(sockets),
                  "descriptors": descriptors}))
'''

# Devices that keep nothing: writing them stores no byte anywhere (ptmx makes a pseudo-terminal in the sandbox's own
# devpts, whose buffer is the kernel's own, a few KiB).
HARMLESS_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx",
                    "/dev/pts/ptmx",
                    "/proc/sys/kernel/ns_last_pid")  # mode 0666: the last pid of the sandbox's own pid namespace


def size_cap(mount: list[str]) -> int | None:
    """The byte cap of a tmpfs mount as the probe saw it ([type, options, fs options]), None where it has none."""
    kind, _, options = mount
    if kind != "tmpfs":
        return None
    for option in options.split(","):
        if option.startswith("size="):
            value = option.removeprefix("size=")
            units = {"k": 2**10, "m": 2**20, "g": 2**30}
            return int(value[:-1]) * units[value[-1].lower()] if value[-1].lower() in units else int(value)
    return None


def mount_of(path: str, mounts: dict[str, list[str]]) -> str:
    """The mount point a path lies under (the longest one that holds it)."""
    return max((point for point in mounts if path == point or path.startswith(point.rstrip("/") + "/")), key=len)


def outside_the_cap(found: dict, caps: dict[str, int]) -> list[str]:
    """Each place the probe found writable or reachable that is not inside one of `caps` ({mount point: the most
    bytes it may hold}): [] when the boundary holds."""
    mounts = found["mounts"]
    bad = []

    def capped(path):
        point = mount_of(path, mounts)
        cap = size_cap(mounts[point])
        return point in caps and cap is not None and cap <= caps[point]

    for path in found["writable"]:
        if path not in HARMLESS_DEVICES and not capped(path):
            bad.append(f"writable: {path} (on {mount_of(path, mounts)}: {' '.join(mounts[mount_of(path, mounts)])})")
    for path in found["sockets"]:
        if not capped(path):
            bad.append(f"socket: {path} (on {mount_of(path, mounts)}: {' '.join(mounts[mount_of(path, mounts)])})")
    for fd, (target, for_writing) in found["descriptors"].items():
        if for_writing and target.startswith("/") and target not in HARMLESS_DEVICES and not capped(target):
            bad.append(f"descriptor {fd} open for writing: {target}")
    return bad
