"""One lock for what several processes may create at once: a file in the data cache (:mod:`qkv.data`) or in the
trained-weights cache (:mod:`qkv.recipes.weights`).

Two pytest workers, a test and ``make book``, two notebooks opened together: each may be the first to ask for the
same file. The first takes the lock and makes the file (to a private temporary name, then an atomic rename); the
others wait, then find it made. ``filelock`` (a dependency of torch) works on Linux, macOS and Windows alike.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout

__all__ = ["locked", "acquire"]


def acquire(lock: FileLock, on_wait=None) -> None:
    """Take ``lock``, however long another holder (another process, or another thread of this one) keeps it; call
    ``on_wait()`` first if it has to wait (to say why nothing happens). A second instance for the same file in the
    same thread is refused by filelock as a deadlock: nest no two locks of one file."""
    try:
        lock.acquire(timeout=0)
    except Timeout:
        if on_wait is not None:
            on_wait()
        lock.acquire()


@contextlib.contextmanager
def locked(path: Path) -> Iterator[bool]:
    """Hold the lock ``<path>.lock`` while the block runs; yields whether it is held.

    Where the folder cannot be written (a read-only cache, shown to the grader's sandbox), nothing can be created
    there either, so the block runs without the lock (yields False) rather than failing.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(path) + ".lock")
        acquire(lock)
    except OSError:
        yield False
        return
    try:
        yield True
    finally:
        lock.release()
