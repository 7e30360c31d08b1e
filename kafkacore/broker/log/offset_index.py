"""``OffsetIndex``: a segment's sparse map from offset to file position (Kafka's
``OffsetIndex``).

A segment's ``.index`` holds (offset - base offset, file position) pairs of 8 bytes, one every
``index.interval.bytes`` of log, so that a read finds its batch with a binary search and a short
scan instead of reading the file from the start (``LogSegment.read``).  Its neighbours are the
``TimeIndex`` (``time_index.py``) and the ``TransactionIndex`` (``transaction_index.py``).
"""

from __future__ import annotations

import bisect
import os
import struct
from array import array
from pathlib import Path

INDEX_SUFFIX = ".index"
_ENTRY = struct.Struct(">ii")


class OffsetIndex:
    """Sparse map from relative offset to file position, kept in memory, written to ``.index``.

    Kafka memory-maps a preallocated file; we keep two arrays and write them out when the segment is
    flushed or closed.  After a crash the index of any segment that is recovered is rebuilt from the
    log, so a stale index file is never trusted."""

    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._offsets = array("q")  # absolute offsets, increasing
        self._positions = array("q")
        self._dirty = False

    def __len__(self) -> int:
        return len(self._offsets)

    def entries(self) -> list[tuple[int, int]]:
        """(absolute offset, file position) of every entry, in order."""
        return list(zip(self._offsets, self._positions, strict=True))

    def append(self, offset: int, position: int) -> None:
        if self._offsets and offset <= self._offsets[-1]:
            return  # Kafka's InvalidOffsetException case; an index entry is only a hint
        self._offsets.append(offset)
        self._positions.append(position)
        self._dirty = True

    def lookup(self, target_offset: int) -> tuple[int, int]:
        """The largest entry with offset <= target (Kafka's ``OffsetIndex.lookup``), or
        (base_offset, 0) when there is none."""
        i = bisect.bisect_right(self._offsets, target_offset)
        if i == 0:
            return self.base_offset, 0
        return self._offsets[i - 1], self._positions[i - 1]

    def truncate_to_position(self, position: int) -> None:
        """Drop the entries at or after ``position`` (the log was cut there)."""
        i = bisect.bisect_left(self._positions, position)
        del self._offsets[i:]
        del self._positions[i:]
        self._dirty = True

    def clear(self) -> None:
        self.truncate_to_position(0)

    def load(self, log_size: int) -> bool:
        """Read the ``.index`` file; False (and empty) if it is missing or not sane."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return False
        if len(data) % _ENTRY.size:
            return False
        last_offset, last_position = self.base_offset - 1, -1
        for relative, position in _ENTRY.iter_unpack(data):
            offset = self.base_offset + relative
            if offset <= last_offset or position <= last_position or position >= log_size:
                self.clear()
                return False
            self._offsets.append(offset)
            self._positions.append(position)
            last_offset, last_position = offset, position
        self._dirty = False
        return True

    def flush(self) -> None:
        if not self._dirty:
            return
        data = b"".join(
            _ENTRY.pack(o - self.base_offset, p)
            for o, p in zip(self._offsets, self._positions, strict=True)
        )
        tmp = self.path.with_suffix(".index.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, self.path)
        self._dirty = False
