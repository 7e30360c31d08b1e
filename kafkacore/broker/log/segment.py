"""``LogSegment`` and its sparse ``OffsetIndex`` (Kafka's ``LogSegment`` / ``OffsetIndex``).

A segment is two files named by the segment's base offset, 20 digits as Kafka writes them:
``00000000000000000000.log`` holds the batches exactly as validated (the broker only wrote their
baseOffset), ``00000000000000000000.index`` holds (offset - base offset, file position) pairs of
8 bytes, one every ``index.interval.bytes`` of log, so that a read finds its batch with a binary
search and a short scan instead of reading the file from the start.
"""

from __future__ import annotations

import bisect
import os
import struct
from array import array
from collections.abc import Iterator
from pathlib import Path

from kafkacore.broker.log.file_records import FileRecords
from kafkacore.broker.log.validator import (
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    BatchHeader,
    crc_ok,
    read_header,
    whole_batches_end,
)

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
SNAPSHOT_SUFFIX = ".snapshot"
_BASE_AND_LENGTH = struct.Struct(">qi")
_CHUNK = 1 << 20  # bytes read at a time by scans (recovery, producer-state replay)
_ENTRY = struct.Struct(">ii")


def file_name(base_offset: int, suffix: str) -> str:
    """Kafka's ``LogFileUtils.filenamePrefixFromOffset``: 20 zero-padded digits."""
    return f"{base_offset:020d}{suffix}"


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


class LogSegment:
    """One ``.log`` file and its index.  Not thread-safe: the owning ``Log`` holds its lock."""

    def __init__(self, directory: Path, base_offset: int, index_interval_bytes: int) -> None:
        self.base_offset = base_offset
        self.log_path = directory / file_name(base_offset, LOG_SUFFIX)
        self.index = OffsetIndex(directory / file_name(base_offset, INDEX_SUFFIX), base_offset)
        self.index_interval_bytes = index_interval_bytes
        self._fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT, 0o644)
        self.size = os.fstat(self._fd).st_size
        self.next_offset = base_offset  # offset after the last batch, once loaded or recovered
        self._bytes_since_index_entry = 0
        self._max_timestamp: int | None = None  # lazily scanned; see max_timestamp
        #: when this segment was created or opened: segment.ms counts from it.  (Kafka counts from
        #: the first batch's timestamp when there is one; a producer's clock is not ours to trust.)
        self.created_ms: int | None = None

    # -- writes ----------------------------------------------------------------------------------

    def append(self, data: bytes | bytearray, headers: list[BatchHeader]) -> None:
        """Write validated batches (with their offsets) at the end of the file; index them."""
        position = self.size
        written = os.pwrite(self._fd, data, position)
        if written != len(data):  # a full disk: cut the partial write away, then fail
            os.ftruncate(self._fd, position)
            raise OSError(f"short write to {self.log_path}: {written} of {len(data)} bytes")
        for h in headers:
            if self._bytes_since_index_entry > self.index_interval_bytes:
                # Kafka indexes the batch's last offset at the batch's start position.
                self.index.append(h.last_offset, position + h.position)
                self._bytes_since_index_entry = 0
            self._bytes_since_index_entry += h.size
            if self._max_timestamp is not None and h.max_timestamp > self._max_timestamp:
                self._max_timestamp = h.max_timestamp
        if self._max_timestamp is None and self.size == 0:
            self._max_timestamp = max(h.max_timestamp for h in headers)
        self.size = position + len(data)
        self.next_offset = headers[-1].last_offset + 1

    def flush(self) -> None:
        os.fsync(self._fd)
        self.index.flush()

    def truncate_to(self, offset: int) -> int:
        """Remove every batch whose base offset is >= ``offset``; returns the bytes removed."""
        if offset >= self.next_offset:
            return 0
        found = self.translate_offset(offset)
        if found is None:
            return 0
        position = found.position
        removed = self.size - position
        os.ftruncate(self._fd, position)
        self.size = position
        self.next_offset = found.base_offset if position else self.base_offset
        self.index.truncate_to_position(position)
        self._bytes_since_index_entry = 0
        self._max_timestamp = None
        return removed

    # -- reads -----------------------------------------------------------------------------------

    def pread(self, size: int, position: int) -> bytes:
        return os.pread(self._fd, size, position)

    def iter_headers(
        self,
        start: int = 0,
        end: int | None = None,
        *,
        verify: bool = False,
        chunk_size: int = _CHUNK,
    ) -> Iterator[BatchHeader]:
        """The batch headers from file position ``start`` (a batch boundary) to ``end``, with
        absolute positions, read ``chunk_size`` bytes at a time and decoded lazily.  Stops
        silently at the first batch that does not frame (or, with ``verify``, whose CRC does not
        match): recovery cuts the file there."""
        end = self.size if end is None else end
        pos = start
        while end - pos >= RECORD_BATCH_OVERHEAD:
            chunk = os.pread(self._fd, min(chunk_size, end - pos), pos)
            at = 0
            while len(chunk) - at >= RECORD_BATCH_OVERHEAD:
                h = read_header(chunk, at)
                if h.magic != 2 or h.size < RECORD_BATCH_OVERHEAD or h.size > end - pos - at:
                    return  # torn or garbage: the batch does not frame within the file
                if h.size > len(chunk) - at:
                    break  # continues past this chunk: read again from its start
                if verify and not crc_ok(chunk, h):
                    return
                yield h._replace(position=pos + at)
                at += h.size
            if at == 0:  # one batch larger than the chunk: read exactly that batch
                h = read_header(chunk, 0)
                chunk = os.pread(self._fd, h.size, pos)
                if len(chunk) < h.size or (verify and not crc_ok(chunk, h)):
                    return
                yield h._replace(position=pos)
                at = h.size
            pos += at

    def translate_offset(self, offset: int, max_position: int | None = None) -> BatchHeader | None:
        """The first batch whose last offset is >= ``offset`` (Kafka's ``translateOffset``)."""
        _, position = self.index.lookup(offset)
        # The batch is usually within index.interval.bytes of the entry: read a little at a time.
        small = 2 * self.index_interval_bytes + RECORD_BATCH_OVERHEAD
        for h in self.iter_headers(position, max_position, chunk_size=small):
            if h.last_offset >= offset:
                return h
        return None

    def read(
        self, start_offset: int, max_size: int, max_offset: int | None, min_one_batch: bool
    ) -> tuple[bytes, int] | None:
        """Whole batches from the one holding ``start_offset``, at most ``max_size`` bytes (one
        batch even if larger, with ``min_one_batch``), none at or above ``max_offset``.
        Returns (bytes, base offset of the first batch), or None if nothing is there."""
        first = self.translate_offset(start_offset)
        if first is None or (max_offset is not None and first.base_offset >= max_offset):
            return None
        if first.size > max_size:
            if not min_one_batch:
                return None
            return self.pread(first.size, first.position), first.base_offset
        want = min(max_size, self.size - first.position)
        data = self.pread(want, first.position)
        return data[: whole_batches_end(data, max_offset)], first.base_offset

    def read_file_records(
        self, start_offset: int, max_size: int, max_offset: int | None, min_one_batch: bool
    ) -> tuple[FileRecords, int] | None:
        """What :meth:`read` returns, as a region of this file instead of a copy of its bytes
        (see :class:`~kafkacore.broker.log.file_records.FileRecords`).  Only the batches'
        12-byte (base offset, length) prefixes are read, to find where the whole batches end."""
        first = self.translate_offset(start_offset)
        if first is None or (max_offset is not None and first.base_offset >= max_offset):
            return None
        if first.size > max_size:
            if not min_one_batch:
                return None
            return FileRecords(self._fd, first.position, first.size), first.base_offset
        limit = min(first.position + max_size, self.size)
        if limit == self.size and (max_offset is None or self.next_offset <= max_offset):
            end = limit  # to the end of the segment, every batch below max_offset: no walk
        else:
            end = first.position
            while limit - end >= LOG_OVERHEAD:
                base, length = _BASE_AND_LENGTH.unpack(os.pread(self._fd, LOG_OVERHEAD, end))
                if end + LOG_OVERHEAD + length > limit or LOG_OVERHEAD + length < RECORD_BATCH_OVERHEAD:
                    break
                if max_offset is not None and base >= max_offset:
                    break
                end += LOG_OVERHEAD + length
        if end == first.position:
            return None
        return FileRecords(self._fd, first.position, end - first.position), first.base_offset

    @property
    def max_timestamp(self) -> int:
        """The largest batch max timestamp in the segment (-1 when empty); retention.ms uses it."""
        if self._max_timestamp is None:
            self._max_timestamp = max((h.max_timestamp for h in self.iter_headers()), default=-1)
        return self._max_timestamp

    @property
    def largest_timestamp(self) -> int:
        """Kafka's ``largestTimestamp``: the max batch timestamp, or the file's modification time
        when the batches carry none (-1)."""
        ts = self.max_timestamp
        return ts if ts >= 0 else os.fstat(self._fd).st_mtime_ns // 1_000_000

    def find_offset_by_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """The first batch with max timestamp >= ``timestamp``: (its base offset, max timestamp).

        Kafka uses a ``.timeindex`` and returns the exact record; batch granularity is what a
        consumer needs to start from (it skips the earlier records of the batch itself)."""
        for h in self.iter_headers():
            if h.max_timestamp >= timestamp:
                return h.base_offset, h.max_timestamp
        return None

    # -- load and recovery -------------------------------------------------------------------------

    def load(self) -> None:
        """Open after a clean shutdown: trust the files; find next_offset from the last index
        entry onwards."""
        if not self.index.load(self.size):
            self.recover(verify=False)
            return
        _, position = self.index.lookup(1 << 62)
        for h in self.iter_headers(position):
            self.next_offset = h.last_offset + 1

    def recover(self, verify: bool = True) -> int:
        """Kafka's ``LogSegment.recover``: read every batch, check its CRC and that offsets grow,
        rebuild the index, cut the file after the last good batch.  Returns bytes truncated."""
        self.index.clear()
        self._bytes_since_index_entry = 0
        self.next_offset = self.base_offset
        self._max_timestamp = None
        valid_end = 0
        max_ts = -1
        for h in self.iter_headers(0, verify=verify):
            if h.base_offset < self.next_offset or h.record_count != h.last_offset_delta + 1:
                break
            if self._bytes_since_index_entry > self.index_interval_bytes:
                self.index.append(h.last_offset, h.position)
                self._bytes_since_index_entry = 0
            self._bytes_since_index_entry += h.size
            max_ts = max(max_ts, h.max_timestamp)
            self.next_offset = h.last_offset + 1
            valid_end = h.position + h.size
        self._max_timestamp = max_ts
        truncated = self.size - valid_end
        if truncated:
            os.ftruncate(self._fd, valid_end)
            os.fsync(self._fd)
            self.size = valid_end
        self.index._dirty = True
        return truncated

    # -- lifecycle ---------------------------------------------------------------------------------

    def close(self, flush_index: bool = True) -> None:
        if self._fd >= 0:
            if flush_index:
                self.index.flush()
            os.close(self._fd)
            self._fd = -1

    def delete(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        for path in (self.log_path, self.index.path):
            path.unlink(missing_ok=True)

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.size}, next_offset={self.next_offset})"
