"""Small files the broker rewrites whole (producer-id block, topic metadata, committed offsets)."""

from __future__ import annotations

import os
from pathlib import Path


def replace_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a crash leaves either the old file or the new one.

    The data goes to a temporary file that is fsync'd, renamed over ``path``, and then the
    directory is fsync'd too: without that last step the rename itself may not survive a crash.
    """
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_directory(path.parent)


def fsync_directory(directory: Path) -> None:
    """Make the names created, renamed or removed in ``directory`` durable (a file's own fsync
    covers its data, not its name)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
