"""A run folder (or a workload's folder of runs) as a zip, written as it is read.

Each file is read in chunks and compressed straight into the response, so ``/zip/lab3`` never
holds every run's zip at once; the archive's directory at the end is the only thing that grows
with the run count.
Only regular files that are not links are taken, opened without following a link (a link swapped
in after the walk is not followed either).
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path
from typing import BinaryIO

from chaos.histories.files import UnsafeFile, open_regular

__all__ = ["write_zip"]

_CHUNK = 1 << 20


class _Sink:
    """A write-only, unseekable stream for zipfile (which then writes data descriptors)."""

    def __init__(self, out: BinaryIO) -> None:
        self._out = out
        self._pos = 0

    def write(self, b: bytes) -> int:
        self._out.write(b)
        self._pos += len(b)
        return len(b)

    def tell(self) -> int:
        return self._pos

    def flush(self) -> None:
        self._out.flush()

    def close(self) -> None:
        pass  # the response stream is the server's to close


def write_zip(folder: Path, out: BinaryIO) -> int:
    """Write every regular file under ``folder`` to ``out`` as a zip; return the file count."""
    root = folder.resolve()
    n = 0
    with zipfile.ZipFile(_Sink(out), "w", zipfile.ZIP_DEFLATED) as z:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted(filenames):
                p = Path(dirpath) / name
                try:
                    fd = open_regular(p)
                except (UnsafeFile, OSError):
                    continue  # a link, a FIFO, a device, or gone since the walk
                with os.fdopen(fd, "rb") as src:
                    arc = f"{root.name}/{p.relative_to(root)}"
                    with z.open(arc, "w", force_zip64=True) as dst:
                        while chunk := src.read(_CHUNK):
                            dst.write(chunk)
                n += 1
    return n
