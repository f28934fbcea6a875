"""Programs that hold memory no resident set shows (perfaudit/hub/held_memory.py), run as an account or as the test.

Each writes its bytes for real (pages in memory, not a size alone) and prints one line once it holds them: "holding"
(then holds them until stopped) or a SysV segment's id (a segment outlives the program; the test removes it).
"""

import subprocess

import psutil

PYTHON = "/usr/bin/python3.11"  # a Python every account runs
MB = 2**20

# A memfd of argv[1] bytes, held by its descriptor, or by a one-page mapping alone: the descriptor is closed, and
# the mapping keeps the whole memfd; "mapped low" puts it at 16 MB, an address maps writes with a leading zero
# (01000000). mmap(2) itself: Python's mmap keeps a copy of the descriptor.
MEMFD = """import ctypes, os, sys, time
size, how = int(sys.argv[1]), sys.argv[2]
fd = os.memfd_create("notes")
for _ in range(size // 2**20):
    os.write(fd, b"x" * 2**20)
if how.startswith("mapped"):
    libc = ctypes.CDLL(None)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    low, flags = (2**24, 0x100000 | 1) if how == "mapped low" else (None, 1)  # MAP_FIXED_NOREPLACE, MAP_SHARED
    address = libc.mmap(low, 4096, 1, flags, fd, 0)  # PROT_READ
    assert address == low if low else address != ctypes.c_void_p(-1).value, address
    os.close(fd)
print("holding", flush=True)
time.sleep(120)
"""

# A file of argv[2] bytes at the path argv[1] (in a tmpfs), held open; "removed" removes its name first.
TMPFS_FILE = """import os, sys, time
path, size, how = sys.argv[1], int(sys.argv[2]), sys.argv[3]
handle = open(path, "xb")
if how == "removed":
    os.unlink(path)
for _ in range(size // 2**20):
    handle.write(b"x" * 2**20)
handle.flush()
print("holding", flush=True)
time.sleep(120)
"""

# The kernel's own shared memory behind a mapping: a shared anonymous mapping and an attached SysV segment.
KERNEL_SHARED = """import ctypes, mmap, time
anonymous = mmap.mmap(-1, 2**24)
anonymous.write(b"x" * 2**24)
libc = ctypes.CDLL(None)
libc.shmat.restype, libc.shmat.argtypes = ctypes.c_void_p, [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
segment = libc.shmget(0, 2**24, 0o1600)
address = libc.shmat(segment, None, 0)
libc.shmctl(segment, 0, None)  # IPC_RMID: gone once this process is
ctypes.memset(address, ord("x"), 2**24)
print("holding", flush=True)
time.sleep(120)
"""

# A SysV segment (shmget(IPC_PRIVATE)) of argv[1] bytes, filled through shmat: "detached" detaches it and ends,
# leaving it to no process; "attached" holds it attached; a uid >= 0 in argv[3] is given the segment (IPC_SET: its
# maker may give it away). uid is the second field of ipc_perm in every Linux ABI: IPC_STAT, that field, IPC_SET.
SEGMENT = """import ctypes, sys, time
size, how, owner = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype, libc.shmat.argtypes = ctypes.c_void_p, [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
libc.shmdt.argtypes = [ctypes.c_void_p]
segment = libc.shmget(0, size, 0o1600)
assert segment >= 0, ctypes.get_errno()
address = libc.shmat(segment, None, 0)
ctypes.memset(address, ord("x"), size)
if owner >= 0:
    state = ctypes.create_string_buffer(512)
    assert libc.shmctl(segment, 2, state) == 0, ctypes.get_errno()
    ctypes.c_uint32.from_buffer(state, 4).value = owner
    assert libc.shmctl(segment, 1, state) == 0, ctypes.get_errno()
print(segment, flush=True)
if how == "attached":
    time.sleep(120)
libc.shmdt(ctypes.c_void_p(address))
"""


def start(program, *args, account=None):
    """The program running (as account, through runuser, or as the test itself), once it said its line:
    (process, that line)."""
    command = [PYTHON, "-c", program, *map(str, args)]
    process = subprocess.Popen(["runuser", "-u", account, "--", *command] if account else command, cwd="/",
                               stdout=subprocess.PIPE, text=True)
    return process, process.stdout.readline().strip()


def stop(*processes):
    """Each process and what runuser started under it (killing runuser alone leaves its child running)."""
    for process in processes:
        try:
            children = psutil.Process(process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            children = []
        for child in children:
            child.kill()
        psutil.wait_procs(children, timeout=10)
        process.kill()
        process.wait()


def remove_segments(*ids):
    """What a test made in SysV shared memory outlives it: each removed by its id."""
    for segment in ids:
        subprocess.run(["ipcrm", "-m", str(segment)], capture_output=True)
