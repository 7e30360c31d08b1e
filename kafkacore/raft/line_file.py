"""A file of CRC-checked lines, one per entry, reopened with a torn last line cut off.

Both metadata logs of the controllers keep their entries so: the quorum's ``KafkaMetadataLog``
(a line per Raft entry) and ``MetadataLog`` (a line per batch of records, the lone controller's
and each broker's).  A line is ``<crc32 of the body, 8 hex digits> <body>\\n``, written with one
``write`` and one ``fsync``, so a crash leaves at most the *last* line torn: it fails its CRC (or
lacks its newline) and was never acknowledged, so reopening cuts it off, from the file too, and
the next append goes where it was.  A bad line *before* the last is damage, not a crash: it is
refused with ``KafkaStorageError`` rather than dropping the entries after it in silence.

:func:`open_line_file` does the reading, the cutting and the opening for append, in one place.
"""

from __future__ import annotations

import logging
import os
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from kafkacore.errors import KafkaStorageError

log = logging.getLogger(__name__)

T = TypeVar("T")


def encode_line(body: bytes) -> bytes:
    """The line holding ``body`` (which must not contain a newline: the logs write JSON)."""
    return b"%08x %s\n" % (zlib.crc32(body), body)


def checked_body(line: bytes) -> bytes | None:
    """The body of a whole line whose CRC holds, else None (torn or damaged)."""
    if not line.endswith(b"\n") or len(line) < 10 or line[8:9] != b" ":
        return None
    body = line[9:-1]
    try:
        crc = int(line[:8], 16)
    except ValueError:
        return None
    return body if crc == zlib.crc32(body) else None


@dataclass(frozen=True)
class LineFile(Generic[T]):
    """A line file reopened: its good entries, where each one's line starts, and a descriptor
    open for append at the end of the last good line.  (A dataclass, not a generic NamedTuple:
    Python 3.10 refuses those.)"""

    fd: int
    items: list[T]
    #: the byte where each item's line starts (a truncation cuts the file there)
    positions: list[int]
    #: the bytes kept: the end of the last good line
    size: int


def open_line_file(path: Path, decode: Callable[[bytes, int], T | None], *,
                   what: str = "entry") -> LineFile[T]:
    """Read ``path`` (absent: empty), keep its good lines, cut a torn last one off the file, and
    open it for append.  ``decode(body, index)`` turns the body of the ``index``-th good line
    into an item, or None if it is not one (bad JSON, an offset out of order): such a line is
    handled as a torn one.  ``KafkaStorageError`` if a line other than the last is bad; ``what``
    names an entry in the messages."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        data = b""
    items: list[T] = []
    positions: list[int] = []
    good = 0
    for line in data.splitlines(keepends=True):
        body = checked_body(line)
        item = None if body is None else decode(body, len(items))
        if item is None:
            if good + len(line) < len(data):
                raise KafkaStorageError(f"{path} is damaged at byte {good}")
            log.warning("%s: cutting off a torn last %s (%d bytes)", path, what, len(line))
            break
        positions.append(good)
        items.append(item)
        good += len(line)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        if good < len(data):
            os.ftruncate(fd, good)
            os.fsync(fd)
        if not data:
            # A new (or empty) file: its name must survive a crash too (a file's fsync covers
            # its data, not its directory entry), or an acknowledged entry could vanish with it.
            fsync_directory(path.parent)
    except BaseException:
        os.close(fd)
        raise
    return LineFile(fd, items, positions, good)


def fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


__all__ = ["LineFile", "checked_body", "encode_line", "fsync_directory", "open_line_file"]
