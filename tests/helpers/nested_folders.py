"""Folders nested past what a path or a recursive walk reaches, as a student can make them, and their removal."""

import os
import subprocess
from pathlib import Path


def nest(folder: str | Path, depth: int) -> None:
    """depth folders named d, one in another, under folder: each made in the one before, opened (no path grows)."""
    where = os.open(folder, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=where)
        inner = os.open("d", os.O_RDONLY, dir_fd=where)
        os.close(where)
        where = inner
    os.close(where)


def remove(folder: str | Path) -> None:
    """folder and all in it, however deep: GNU rm takes any depth (shutil.rmtree and pytest's clean-up recurse)."""
    subprocess.run(["rm", "-rf", str(folder)], check=True)
