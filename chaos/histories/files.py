"""Files written and read where the code under test can also write.

The run's live folder is shared with the nodes: a solution can plant a symbolic link, a FIFO or a
huge file at any name it can write. Everything chaos writes there goes to a fresh temporary name
(``O_EXCL | O_NOFOLLOW``: never through a link someone planted) and is renamed over the target
(``rename`` replaces a link, it does not follow it); everything chaos reads from there must be a
regular file, opened without following a link and without blocking on a FIFO, and is read up to a
cap. JSON artefacts of the store are written the same way and made durable (the file and its
folder are fsynced) before the rename counts.

Every other file chaos is asked to read — a grade matrix, a nodes file, a schedule, a history, a
run's artefacts — goes through :func:`open_input` / :func:`read_input`: the one guarded loader.
A FIFO, a device, a socket or a folder is refused at once (the open does not block), a file
larger than the reader's cap is refused by its size before a byte is read and by what was read
(a file that grows meanwhile), and the error names the file and the reason
(:class:`~chaos.histories.limits.InputError`: exit 3).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from chaos.histories.limits import InputError

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


def write_atomic(
    path: Path,
    data: bytes | Callable[[BinaryIO], object],
    *,
    mode: int = 0o644,
    durable: bool = True,
) -> None:
    """Write ``data`` to a fresh temporary name beside ``path`` and rename it over ``path``;
    ``data`` may be a function that writes to the file, so that a large artefact is streamed
    rather than held whole."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, mode)
    try:
        with os.fdopen(fd, "wb") as fh:
            if callable(data):
                data(fh)
            else:
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


def open_input(path: Path, limit: int) -> BinaryIO:
    """``path`` opened for reading, when it is a regular file of at most ``limit`` bytes; else
    :class:`InputError` naming it and why. A link the user named is followed (its target must be
    a regular file all the same). The caller reads at most ``limit`` bytes (see
    :func:`read_input`): the size is the file's when opened."""
    try:
        fd = os.open(path, os.O_RDONLY | _NONBLOCK)
    except FileNotFoundError:
        raise InputError(path, "cannot read: no such file") from None
    except IsADirectoryError:
        raise InputError(path, "a folder, not a file") from None
    except OSError as e:
        raise InputError(path, f"cannot be read: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(path, f"{_kind(st.st_mode)}, not a regular file; refused unread")
        if st.st_size > limit:
            raise InputError(path, f"{st.st_size} bytes, more than the {limit} chaos reads here")
        if _NONBLOCK:  # reads of a regular file never block; the flag only guarded the open
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~_NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_input(path: Path, limit: int) -> bytes:
    """All of ``path`` (see :func:`open_input`); one that grew past ``limit`` while read is
    refused, never cut silently."""
    with open_input(path, limit) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise InputError(path, f"grew past the {limit} bytes chaos reads here while read")
    return data


def read_input_text(path: Path, limit: int) -> str:
    """:func:`read_input` as UTF-8 text; bytes that are not UTF-8 name their line."""
    data = read_input(path, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise InputError(path, "bytes that are not UTF-8", line=line) from None


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a file"
