"""Files written and read where the code under test can also write.

The run's live folder is shared with the nodes: a solution can plant a symbolic link, a FIFO or a
huge file at any name it can write. Everything chaos writes there goes to a fresh temporary name
(``O_EXCL | O_NOFOLLOW``: never through a link someone planted) and is renamed over the target
(``rename`` replaces a link, it does not follow it); everything chaos reads from there must be a
regular file, opened without following a link and without blocking on a FIFO, and is read up to a
cap. JSON artefacts of the store are written the same way and made durable (the file and its
folder are fsynced) before the rename counts.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


class UnsafeFile(OSError):
    """A path that is a link, a FIFO, a device or a folder where a regular file was expected."""


def fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_atomic(path: Path, data: bytes, *, mode: int = 0o644, durable: bool = True) -> None:
    """Write ``data`` to a fresh temporary name beside ``path`` and rename it over ``path``."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, mode)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if durable:
        fsync_dir(path.parent)


def open_regular(path: Path) -> int:
    """An fd for reading ``path``, which must be a regular file and not a link to one."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK)
    except OSError as e:
        if e.errno == 40:  # ELOOP: the last component is a symbolic link
            raise UnsafeFile(e.errno, "a symbolic link, not followed", str(path)) from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise UnsafeFile(0, "not a regular file", str(path))
    return fd


def read_regular(path: Path, limit: int, offset: int = 0) -> bytes:
    """Up to ``limit`` bytes of a regular file from ``offset`` (see :func:`open_regular`)."""
    fd = open_regular(path)
    try:
        if offset:
            os.lseek(fd, offset, os.SEEK_SET)
        chunks: list[bytes] = []
        left = limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
