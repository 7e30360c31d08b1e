"""``TimeIndex``: a segment's sparse map from timestamp to offset (Kafka's ``TimeIndex``).

A segment's ``.timeindex`` holds 12-byte entries, Kafka's layout: the largest timestamp the
segment had seen so far (8 bytes) and the offset where it was seen (4 bytes, relative to the
segment's base offset; the last offset of the batch holding it, Kafka's "shallow" offset of the
max timestamp).  An entry is written with each offset-index entry (every
``index.interval.bytes``) and once more when the segment stops being the active one, and only
when its timestamp is larger than the last entry's, so both columns grow.

What an entry promises: no record at an offset below the batch holding ``offset`` has a
timestamp of ``timestamp`` or more.  A search for the first record with a timestamp at or above
T therefore starts at the batch of the last entry whose timestamp is at most T and reads records
from there (``LogSegment.find_offset_by_timestamp``).  Timestamps inside a batch, and from batch
to batch, need not grow: the index only says where to start.
"""

from __future__ import annotations

import bisect
import os
import struct
from array import array
from pathlib import Path

TIME_INDEX_SUFFIX = ".timeindex"
_ENTRY = struct.Struct(">qi")


class TimeIndex:
    """Entries (timestamp, absolute offset), both increasing, in memory; written to the
    ``.timeindex`` file by :meth:`flush`, read back and sanity-checked by :meth:`load`."""

    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._timestamps = array("q")
        self._offsets = array("q")
        self._dirty = False

    def __len__(self) -> int:
        return len(self._timestamps)

    def entries(self) -> list[tuple[int, int]]:
        """(timestamp, absolute offset) of every entry, in order."""
        return list(zip(self._timestamps, self._offsets, strict=True))

    def last_entry(self) -> tuple[int, int] | None:
        return (self._timestamps[-1], self._offsets[-1]) if self._timestamps else None

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Kafka's ``maybeAppend``: only a larger timestamp at an offset not below the last."""
        if self._timestamps and (timestamp <= self._timestamps[-1]
                                 or offset < self._offsets[-1]):
            return
        if timestamp < 0:  # no timestamp (-1): nothing to find by it
            return
        self._timestamps.append(timestamp)
        self._offsets.append(offset)
        self._dirty = True

    def lookup(self, target: int) -> tuple[int, int]:
        """The last entry whose timestamp is <= ``target`` (Kafka's ``TimeIndex.lookup``), or
        (-1, base offset) when there is none: where a search for ``target`` starts."""
        i = bisect.bisect_right(self._timestamps, target)
        if i == 0:
            return -1, self.base_offset
        return self._timestamps[i - 1], self._offsets[i - 1]

    def truncate_to(self, offset: int) -> None:
        """Drop the entries at or after ``offset`` (the log was cut there)."""
        i = bisect.bisect_left(self._offsets, offset)
        if i < len(self._offsets):
            del self._timestamps[i:]
            del self._offsets[i:]
            self._dirty = True

    def clear(self) -> None:
        del self._timestamps[:]
        del self._offsets[:]
        self._dirty = True

    def load(self) -> bool:
        """Read the file; False (and empty) if it is missing or not whole entries."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return False
        if len(data) % _ENTRY.size:
            return False
        for timestamp, relative in _ENTRY.iter_unpack(data):
            self._timestamps.append(timestamp)
            self._offsets.append(self.base_offset + relative)
        self._dirty = False
        return True

    def sane(self, next_offset: int) -> bool:
        """Kafka's ``sanityCheck`` and more: entries inside [base offset, ``next_offset``),
        timestamps increasing, offsets not decreasing."""
        ts, offsets = self._timestamps, self._offsets
        if any(not self.base_offset <= o < next_offset for o in offsets[-1:] + offsets[:1]):
            return False
        return all(ts[i] < ts[i + 1] and offsets[i] <= offsets[i + 1]
                   for i in range(len(ts) - 1))

    def flush(self) -> None:
        if not self._dirty:
            return
        data = b"".join(_ENTRY.pack(t, o - self.base_offset)
                        for t, o in zip(self._timestamps, self._offsets, strict=True))
        tmp = self.path.with_suffix(TIME_INDEX_SUFFIX + ".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, self.path)
        self._dirty = False

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)


__all__ = ["TIME_INDEX_SUFFIX", "TimeIndex"]
