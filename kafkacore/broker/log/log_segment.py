"""``LogSegment``: a segment's files and the reads and writes on them (Kafka's ``LogSegment``).

A segment is two files named by the segment's base offset, 20 digits as Kafka writes them:
``00000000000000000000.log`` holds the batches exactly as validated (the broker only wrote their
baseOffset), ``00000000000000000000.index`` holds (offset - base offset, file position) pairs of
8 bytes, one every ``index.interval.bytes`` of log, so that a read finds its batch with a binary
search and a short scan instead of reading the file from the start (the ``OffsetIndex``, in
``offset_index.py``).  ``.timeindex`` maps timestamps to offsets the same way (see
``time_index.py``), for ListOffsets by time.
"""

from __future__ import annotations

import errno
import logging
import os
import struct
from collections.abc import Iterator
from pathlib import Path

from kafkacore.broker.log.file_records import FileRecords
from kafkacore.broker.log.log_validator import (
    RECORD_BATCH_OVERHEAD,
    BatchHeader,
    crc_ok,
    read_header,
    verified_end,
    whole_batches_end,
)
from kafkacore.broker.log.offset_index import INDEX_SUFFIX, OffsetIndex
from kafkacore.broker.log.time_index import TIME_INDEX_SUFFIX, TimeIndex
from kafkacore.broker.log.transaction_index import TXN_INDEX_SUFFIX, TransactionIndex
from kafkacore.core.record_batch import Record, iter_batches
from kafkacore.errors import CorruptMessageError, IllegalStateError

LOG_SUFFIX = ".log"
SNAPSHOT_SUFFIX = ".snapshot"
#: a removed segment's files wait under this suffix for file.delete.delay.ms (Kafka's)
DELETED_SUFFIX = ".deleted"
_CHUNK = 1 << 20  # bytes read at a time by scans (recovery, producer-state replay)
_BASE_OFFSET = struct.Struct(">q")

log = logging.getLogger(__name__)


def _last_batch_start(data: bytes, end: int | None = None) -> int:
    """Where the last of the whole batches in ``data[:end]`` starts."""
    pos = last = 0
    end = len(data) if end is None else end
    while pos < end:
        last = pos
        pos += read_header(data, pos).size
    return last


def file_name(base_offset: int, suffix: str) -> str:
    """Kafka's ``LogFileUtils.filenamePrefixFromOffset``: 20 zero-padded digits."""
    return f"{base_offset:020d}{suffix}"


class LogSegment:
    """One ``.log`` file and its index.  Not thread-safe: the owning ``Log`` holds its lock."""

    def __init__(self, directory: Path, base_offset: int, index_interval_bytes: int,
                 *, new_log: bool = False) -> None:
        """``new_log``: the first segment of a log being created (its transaction index file
        waits for the first flush)."""
        self.base_offset = base_offset
        self.log_path = directory / file_name(base_offset, LOG_SUFFIX)
        self.index = OffsetIndex(directory / file_name(base_offset, INDEX_SUFFIX), base_offset)
        #: the transactions aborted by a marker in this segment (read_committed fetches)
        self.txn_index = TransactionIndex(directory / file_name(base_offset, TXN_INDEX_SUFFIX),
                                          new=new_log)
        #: (largest timestamp so far, last offset of its batch), Kafka's ``.timeindex``
        self.time_index = TimeIndex(directory / file_name(base_offset, TIME_INDEX_SUFFIX),
                                    base_offset)
        self.index_interval_bytes = index_interval_bytes
        self._fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT, 0o644)
        self.size = os.fstat(self._fd).st_size
        self.next_offset = base_offset  # offset after the last batch, once loaded or recovered
        self._bytes_since_index_entry = 0
        #: Kafka's ``maxTimestampAndOffsetSoFar``: (the largest batch max timestamp, the last
        #: offset of the first batch that has it); None until loaded, recovered or scanned
        self._max_so_far: tuple[int, int] | None = None
        #: when this segment was created or opened: segment.ms counts from it.  (Kafka counts from
        #: the first batch's timestamp when there is one; a producer's clock is not ours to trust.)
        self.created_ms: int | None = None
        #: segment.jitter.ms: this segment rolls this much before segment.ms (Kafka's
        #: rollJitterMs, drawn when the log creates the segment)
        self.roll_jitter_ms = 0
        #: positions of batches a read refused (CRC, framing, offsets): the log must be
        #: recovered before this segment is trusted again (see Log.read)
        self.damage: set[int] = set()
        #: holes recovery cut out of this segment: (first offset, last offset, bytes)
        self.lost: list[tuple[int, int, int]] = []
        #: bytes of a torn tail recovery cut (no sound batch after the damage)
        self.torn_tail = 0

    # -- writes ----------------------------------------------------------------------------------

    def append(self, data: bytes | bytearray, headers: list[BatchHeader]) -> None:
        """Write validated batches (with their offsets) at the end of the file; index them."""
        position = self.size
        size = len(data)
        written = 0
        try:
            written = os.pwrite(self._fd, data, position)
            while written < size:  # a short write: the next one says why (ENOSPC)
                n = os.pwrite(self._fd, memoryview(data)[written:], position + written)
                if n == 0:
                    raise OSError(errno.EIO, f"no progress writing {self.log_path}")
                written += n
        except OSError:
            if written:  # cut the partial batch away: the log stays as it was
                os.ftruncate(self._fd, position)
            raise
        if self._max_so_far is None and self.size == 0:
            self._max_so_far = (-1, self.base_offset)
        for h in headers:
            self._index_batch(h, position + h.position)
        self.size = position + size
        self.next_offset = headers[-1].last_offset + 1

    def _index_batch(self, h: BatchHeader, position: int) -> None:
        """Account batch ``h`` (at file ``position``) in both indexes, as Kafka's append and
        recovery do: the max timestamp so far first, then, every ``index.interval.bytes``, an
        offset entry (the batch's last offset at its start) and a time entry."""
        if self._max_so_far is not None and h.max_timestamp > self._max_so_far[0]:
            self._max_so_far = (h.max_timestamp, h.last_offset)
        if self._bytes_since_index_entry > self.index_interval_bytes:
            self.index.append(h.last_offset, position)
            if self._max_so_far is not None:
                self.time_index.maybe_append(*self._max_so_far)
            self._bytes_since_index_entry = 0
        self._bytes_since_index_entry += h.size

    def on_become_inactive(self) -> None:
        """Kafka's ``onBecomeInactiveSegment``: the segment's largest timestamp goes into its
        time index, so that a later load knows it without reading the batches."""
        if self.size:
            self.time_index.maybe_append(*self.max_timestamp_and_offset)

    def flush(self) -> None:
        os.fsync(self._fd)
        self.index.flush()
        self.time_index.flush()
        self.txn_index.flush()

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
        self.time_index.truncate_to(self.next_offset)
        self.txn_index.truncate_to(self.next_offset)
        self._bytes_since_index_entry = 0
        self._resume_max_timestamp()
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
        strict: bool = False,
        chunk_size: int = _CHUNK,
    ) -> Iterator[BatchHeader]:
        """The batch headers from file position ``start`` (a batch boundary) to ``end``, with
        absolute positions, read ``chunk_size`` bytes at a time and decoded lazily.  At the first
        batch that does not frame (or, with ``verify``, whose CRC does not match) it stops
        silently (recovery cuts the file there) or, with ``strict``, raises
        :class:`~kafkacore.errors.CorruptMessageError` (a read must not skip what it cannot
        frame)."""
        end = self.size if end is None else end
        pos = start
        while end - pos >= RECORD_BATCH_OVERHEAD:
            chunk = os.pread(self._fd, min(chunk_size, end - pos), pos)
            at = 0
            while len(chunk) - at >= RECORD_BATCH_OVERHEAD:
                h = read_header(chunk, at)
                garbage = h.magic != 2 or h.size < RECORD_BATCH_OVERHEAD
                if garbage or h.size > end - pos - at:
                    if strict and garbage:
                        self._damaged(pos + at, f"magic {h.magic}, {h.size} bytes")
                    if strict and h.size > self.size - pos - at:
                        self._damaged(pos + at, f"length {h.size} runs past the file's end")
                    return  # torn or garbage, or past ``end``: stop here
                if h.size > len(chunk) - at:
                    break  # continues past this chunk: read again from its start
                if verify and not crc_ok(chunk, h):
                    return
                yield h._replace(position=pos + at)
                at += h.size
            if at == 0:  # one batch larger than the chunk
                h = read_header(chunk, 0)
                if verify:  # its CRC needs all of it: read exactly that batch
                    chunk = os.pread(self._fd, h.size, pos)
                    if len(chunk) < h.size or not crc_ok(chunk, h):
                        return
                # Else its header is all we need (it fits before ``end``, checked above): a
                # lookup in a log of 1 MiB batches must not read each one it steps over.
                yield h._replace(position=pos)
                at = h.size
            pos += at
        if strict and 0 < end - pos and end == self.size:
            self._damaged(pos, f"{end - pos} stray bytes at the end")

    def _damaged(self, position: int, why: str) -> None:
        raise CorruptMessageError(f"{self.log_path.name}: damaged at byte {position}: {why}")

    def translate_offset(self, offset: int, max_position: int | None = None) -> BatchHeader | None:
        """The first batch whose last offset is >= ``offset`` (Kafka's ``translateOffset``).

        The index entry it starts from must name the batch found there (an entry is the last
        offset of the batch at its position); one that does not is a damaged index: it is
        rebuilt from the log (and logged) instead of sending the read to the wrong batch."""
        for attempt in (0, 1):
            entry_offset, position = self.index.lookup(offset)
            # The batch is usually within index.interval.bytes of the entry: read a little.
            small = 2 * self.index_interval_bytes + RECORD_BATCH_OVERHEAD
            first = position > 0 or entry_offset != self.base_offset
            previous_last = -1
            for h in self.iter_headers(position, max_position, strict=True, chunk_size=small):
                if h.base_offset <= previous_last or h.last_offset >= self.next_offset:
                    self._damaged(h.position, f"offsets {h.base_offset} to {h.last_offset} "
                                  f"overlap the batch before or pass the segment's end")
                previous_last = h.last_offset
                if first and h.last_offset != entry_offset:
                    if attempt:
                        self._damaged(position, "the rebuilt index does not match the log")
                    log.error("%s: index entry (%d, byte %d) names a batch ending at %d: the"
                              " index is damaged, rebuilding it from the log",
                              self.index.path, entry_offset, position, h.last_offset)
                    self.rebuild_index()
                    break
                first = False
                if h.last_offset >= offset:
                    return h
            else:
                return None
        return None

    def read(
        self, start_offset: int, max_size: int, max_offset: int | None, min_one_batch: bool
    ) -> tuple[bytes, int] | None:
        """Whole batches from the one holding ``start_offset``, at most ``max_size`` bytes (one
        batch even if larger, with ``min_one_batch``), none at or above ``max_offset``.
        Returns (bytes, base offset of the first batch), or None if nothing is there.

        Every batch is checked before it is served (framing, offsets, CRC: ``verified_end``):
        the good batches before a damaged one are returned, a damaged first batch raises
        :class:`~kafkacore.errors.CorruptMessageError`; nothing failing its CRC leaves."""
        first = self.translate_offset(start_offset)
        if first is None or (max_offset is not None and first.base_offset >= max_offset):
            return None
        if first.size > max_size and not min_one_batch:
            return None
        data, end, _ = self._read_checked(first, max_size, max_offset)
        return (data if end == len(data) else data[:end]), first.base_offset

    def _read_checked(
        self, first: BatchHeader, max_size: int, max_offset: int | None
    ) -> tuple[bytes, int, BatchHeader | None]:
        """Read the batches from ``first`` (at least it, whatever its size) as :meth:`read`
        does and check them.  Returns (the bytes read, where the good whole batches in them end,
        the header of the batch that follows them, or None when the segment ends there or
        damage stopped the read).  The caller slices, if it needs the bytes at all."""
        if first.size > max_size:
            data = self.pread(first.size, first.position)
            end = len(data)
        else:
            data = self.pread(min(max_size, self.size - first.position), first.position)
            end = whole_batches_end(data, max_offset)
        view = memoryview(data)[:end]
        try:
            end, why = verified_end(view)
        finally:
            view.release()
        after = None
        if why is None and end and first.position + end + RECORD_BATCH_OVERHEAD <= self.size:
            # The batch after the last one served must start after it: a base offset (outside
            # the CRC) raised by damage is caught by its neighbour.
            last = _last_batch_start(data, end)
            after = read_header(self.pread(RECORD_BATCH_OVERHEAD, first.position + end), 0)
            after = after._replace(position=first.position + end)
            served_last = read_header(data, last).last_offset
            if after.magic == 2 and after.base_offset <= served_last:
                end, why = last, (
                    f"the batch at byte {first.position + last} ends at offset {served_last}, "
                    f"past the start of the batch after it ({after.base_offset})")
        if why is not None:
            self.damage.add(first.position + end)
            if end == 0:
                self._damaged(first.position, why)
            after = None
        elif after is not None and (after.magic != 2 or not RECORD_BATCH_OVERHEAD <= after.size
                                    <= self.size - after.position):
            after = None  # does not frame: the read stops before it (a lookup there raises)
        return data, end, after

    def read_file_records(
        self, start_offset: int, max_size: int, max_offset: int | None, min_one_batch: bool
    ) -> tuple[FileRecords, int] | None:
        """What :meth:`read` returns, as a region of this file instead of a copy of its bytes
        (see ``FileRecords``): the answer holds a file descriptor, not megabytes, while it waits
        for its client.  The batches are read and checked (CRC, framing) as :meth:`read` does,
        so nothing damaged is served, but :data:`_CHUNK` bytes at a time, each dropped at once;
        the offset is looked up once, each chunk starting at the header the one before read."""
        first = self.translate_offset(start_offset)
        if first is None:
            return None
        size, remaining = 0, max_size
        header: BatchHeader | None = first
        while remaining > 0 and header is not None:
            if max_offset is not None and header.base_offset >= max_offset:
                break
            if header.size > remaining and (size or not min_one_batch):
                break  # only the first batch goes out whole when larger than what is left
            try:
                _, end, header = self._read_checked(header, min(remaining, _CHUNK), max_offset)
            except CorruptMessageError:
                if size:
                    break  # the good batches before the damage still go (as in :meth:`read`)
                raise
            if end == 0:
                break
            size += end
            remaining -= end
        if size == 0:
            return None
        return FileRecords(self._fd, first.position, size), first.base_offset

    @property
    def max_timestamp_and_offset(self) -> tuple[int, int]:
        """(the largest batch max timestamp, the last offset of the first batch with it);
        (-1, base offset) when the segment has none."""
        if self._max_so_far is None:
            self._resume_max_timestamp()
        if self._max_so_far is None:
            raise IllegalStateError(f"{self.log_path}: no max timestamp after resuming it")
        return self._max_so_far

    @property
    def max_timestamp(self) -> int:
        """The largest batch max timestamp in the segment (-1 when empty); retention.ms uses it."""
        return self.max_timestamp_and_offset[0]

    def _resume_max_timestamp(self) -> None:
        """The max timestamp so far from the time index's last entry and the batches from the
        last offset-index entry on (the time index has each offset entry's maximum)."""
        best = self.time_index.last_entry() or (-1, self.base_offset)
        _, position = self.index.lookup(1 << 62)
        for h in self.iter_headers(position):
            if h.max_timestamp > best[0]:
                best = (h.max_timestamp, h.last_offset)
        self._max_so_far = best

    @property
    def largest_timestamp(self) -> int:
        """Kafka's ``largestTimestamp``: the max batch timestamp, or the file's modification time
        when the batches carry none (-1)."""
        ts = self.max_timestamp
        return ts if ts >= 0 else os.fstat(self._fd).st_mtime_ns // 1_000_000

    def _start_of(self, offset: int) -> int:
        """A batch boundary at or before the batch holding ``offset`` (the offset index's)."""
        return self.index.lookup(offset)[1] if offset > self.base_offset else 0

    def find_offset_by_timestamp(self, timestamp: int, start_offset: int = 0
                                 ) -> tuple[int, int] | None:
        """The first record at or after ``start_offset`` whose timestamp is >= ``timestamp``:
        (its offset, its timestamp) (Kafka's ``findOffsetByTimestamp``).  The time index says
        where to start; from there the batches whose max timestamp reaches ``timestamp`` are
        read record by record, since timestamps within a batch need not grow."""
        _, offset = self.time_index.lookup(timestamp)
        position = self._start_of(max(offset, start_offset))
        for h in self.iter_headers(position):
            if h.max_timestamp < timestamp or h.last_offset < start_offset:
                continue
            for record in self._records(h):
                if record.offset >= start_offset and record.timestamp >= timestamp:
                    return record.offset, record.timestamp
        return None

    def offset_of_max_timestamp(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record holding the segment's largest timestamp
        (KIP-734's MAX_TIMESTAMP; Kafka's ``offsetOfMaxTimestamp`` of the batch found)."""
        timestamp, offset = self.max_timestamp_and_offset
        if timestamp < 0:
            return None
        for h in self.iter_headers(self._start_of(offset)):
            if h.max_timestamp == timestamp:
                for record in self._records(h):
                    if record.timestamp == timestamp:
                        return record.offset, timestamp
        return None

    def _records(self, h: BatchHeader) -> list[Record]:
        """The records of the batch ``h`` (decompressed, each with its own timestamp)."""
        data = self.pread(h.size, h.position)
        if len(data) < h.size or not crc_ok(data, h._replace(position=0)):
            self._damaged(h.position, "the batch fails its CRC")
        return next(iter_batches(data)).records

    # -- load and recovery -------------------------------------------------------------------------

    def load(self) -> None:
        """Open after a clean shutdown: trust the files, once their index passes Kafka's sanity
        check (entries in order, inside the file) and its last entry names the batch at its
        position; a failing index is logged and rebuilt from the log.  next_offset comes from
        the last index entry onwards."""
        if not self.index.load(self.size) or not self._last_index_entry_ok():
            if self.index.path.exists():
                log.error("%s: the offset index fails its sanity check; rebuilding it",
                          self.index.path)
            self.rebuild_index()
            return
        _, position = self.index.lookup(1 << 62)
        for h in self.iter_headers(position):
            self.next_offset = h.last_offset + 1
        if not self.time_index.load() or not self.time_index.sane(self.next_offset):
            # Kafka's TimeIndex.sanityCheck failing (or a log written before time indexes):
            # the time index is rebuilt from the batch headers, as a corrupt index is.
            if self.time_index.path.exists():
                log.error("%s: the time index fails its sanity check; rebuilding it",
                          self.time_index.path)
            self.rebuild_index()
            return
        self._resume_max_timestamp()

    def _last_index_entry_ok(self) -> bool:
        if not len(self.index):
            return True
        offset, position = self.index.entries()[-1]
        raw = self.pread(RECORD_BATCH_OVERHEAD, position)
        if len(raw) < RECORD_BATCH_OVERHEAD:
            return False
        h = read_header(raw, 0)
        return h.magic == 2 and h.last_offset == offset

    def rebuild_index(self) -> None:
        """The index and next_offset from the batch headers, the log left as it is."""
        self.index.clear()
        self.time_index.clear()
        self._bytes_since_index_entry = 0
        self._max_so_far = (-1, self.base_offset)
        self.next_offset = self.base_offset
        for h in self.iter_headers(0):
            self._index_batch(h, h.position)
            self.next_offset = h.last_offset + 1

    def _valid_batch_at(self, window: bytes, at: int, next_offset: int) -> BatchHeader | None:
        """The batch at ``window[at:]`` if it is whole and sound and continues the offsets."""
        h = self._sound_batch_at(window, at)
        if h is None or h.base_offset < next_offset:
            return None
        return h

    def _sound_batch_at(self, window: bytes, at: int) -> BatchHeader | None:
        """The batch at ``window[at:]`` if it frames, is magic 2, has no more records than its
        lastOffsetDelta says (fewer once the log cleaner removed some) and matches its CRC; its
        base offset (outside the CRC) is not judged here."""
        if len(window) - at < RECORD_BATCH_OVERHEAD:
            return None
        h = read_header(window, at)
        if (h.magic != 2 or h.size < RECORD_BATCH_OVERHEAD or h.size > len(window) - at
                or not 0 <= h.record_count <= h.last_offset_delta + 1
                or not crc_ok(window, h)):
            return None
        return h

    def _placed(self, h: BatchHeader, position: int, upper: int | None) -> BatchHeader | None:
        """``h`` (sound, at file ``position``) with its base offset judged.  The base offset is
        the one field the CRC does not cover, so a flipped bit there is repaired rather than
        lost: when the next batch in the file starts exactly where this one would end had it
        started at ``next_offset`` (or, the segment's last batch, where the next segment
        starts), ``h`` gets ``next_offset`` back.  Otherwise a batch that overlaps what came
        before, or runs into the next segment, is damaged (None); a batch after a gap is kept
        (a compacted leader's follower has gaps)."""
        expected = self.next_offset
        if h.base_offset == expected:
            return h
        end = expected + h.last_offset_delta + 1
        after = position + h.size
        if after + RECORD_BATCH_OVERHEAD <= self.size:
            follower = read_header(self.pread(RECORD_BATCH_OVERHEAD, after), 0)
            continues = follower.magic == 2 and follower.base_offset == end
        else:
            continues = after == self.size and upper == end
        if continues:
            log.error("%s: the batch at byte %d says base offset %d; its neighbours say %d: "
                      "repaired", self.log_path.name, position, h.base_offset, expected)
            return h._replace(base_offset=expected)
        if h.base_offset < expected or (upper is not None and h.last_offset >= upper):
            return None
        if h.last_offset - self.base_offset > (1 << 31) - 1:
            return None
        return h

    def recover(self, upper: int | None = None) -> int:
        """Kafka's ``LogSegment.recover``: read every batch, check its CRC and that offsets grow,
        rebuild the index.  Unlike Kafka, a damaged batch in the middle does not end the
        segment: the scan looks for the next sound batch after it (magic 2, framing, record
        count, offsets past what came before, CRC) and moves the rest of the file down over
        the damage, so only the damaged bytes are lost (``lost``: (first offset, last offset,
        bytes) of each hole).  A tail with no sound batch after it is cut, as Kafka does.
        A base offset the batches around it contradict is repaired (``_placed``); ``upper`` is
        the next segment's base offset, which no batch here may reach.  Returns the bytes
        removed.  A crash in the middle leaves stale copies behind the moved batches; their
        offsets do not grow, so the next recovery removes them the same way."""
        self.index.clear()
        self.time_index.clear()
        self._bytes_since_index_entry = 0
        self._max_so_far = (-1, self.base_offset)
        self.next_offset = self.base_offset
        self.lost = []
        self.damage.clear()
        read_pos = write_pos = 0

        def placed(data: bytes, at: int, start: int) -> BatchHeader | None:
            h = self._sound_batch_at(data, at)
            return None if h is None else self._placed(h, start + at, upper)

        def keep(h: BatchHeader, data: bytes, at: int) -> None:
            nonlocal write_pos
            if write_pos != read_pos + at:
                os.pwrite(self._fd, data[at : at + h.size], write_pos)
            if h.base_offset != _BASE_OFFSET.unpack_from(data, at)[0]:  # repaired
                os.pwrite(self._fd, _BASE_OFFSET.pack(h.base_offset), write_pos)
            self._index_batch(h, write_pos)
            self.next_offset = h.last_offset + 1
            write_pos += h.size

        while read_pos < self.size:
            window = self.pread(min(_CHUNK, self.size - read_pos), read_pos)
            at = 0
            while (h := placed(window, at, read_pos)) is not None:
                keep(h, window, at)
                at += h.size
            read_pos += at
            if at or read_pos >= self.size:
                continue  # the next batch may run past this window: read again from it
            if len(window) >= RECORD_BATCH_OVERHEAD:
                first = read_header(window, 0)
                if first.magic == 2 and len(window) < first.size <= self.size - read_pos:
                    whole = self.pread(first.size, read_pos)  # one batch larger than a window
                    h = placed(whole, 0, read_pos)
                    if h is not None:
                        keep(h, whole, 0)
                        read_pos += h.size
                        continue
            skip = self._resync(read_pos)
            if skip is None:
                self.torn_tail = self.size - read_pos  # nothing sound after it: a torn tail
                break
            resumed = read_header(self.pread(RECORD_BATCH_OVERHEAD, skip), 0)
            self.lost.append((self.next_offset, resumed.base_offset - 1, skip - read_pos))
            read_pos = skip
        removed = self.size - write_pos
        if removed:
            os.ftruncate(self._fd, write_pos)
            os.fsync(self._fd)
            self.size = write_pos
        # Markers past the recovered end are gone; the log's producer-state replay indexes
        # again the aborts after its snapshot.
        self.txn_index.truncate_to(self.next_offset)
        self.index._dirty = True
        self.time_index._dirty = True
        return removed

    def _resync(self, start: int) -> int | None:
        """The position of the first sound batch after the damaged one at ``start``: every
        byte after it where a magic 2 could sit is tried (about one in 256 of random bytes),
        each candidate checked in full, CRC included."""
        pos = start + 1
        while self.size - pos >= RECORD_BATCH_OVERHEAD:
            window = self.pread(min(_CHUNK, self.size - pos), pos)
            at = 0
            while True:
                magic_at = window.find(b"\x02", at + 16)
                if magic_at < 0 or len(window) - (magic_at - 16) < RECORD_BATCH_OVERHEAD:
                    break
                candidate = magic_at - 16
                h = read_header(window, candidate)
                if RECORD_BATCH_OVERHEAD <= h.size <= self.size - pos - candidate \
                        and h.base_offset >= self.next_offset:
                    whole = (window if h.size <= len(window) - candidate
                             else self.pread(h.size, pos + candidate))
                    at_ = candidate if whole is window else 0
                    if self._valid_batch_at(whole, at_, self.next_offset) is not None:
                        return pos + candidate
                at = candidate + 1
            advance = max(len(window) - RECORD_BATCH_OVERHEAD, 1)
            pos += advance
        return None

    # -- lifecycle ---------------------------------------------------------------------------------

    def close(self, flush_index: bool = True) -> None:
        if self._fd >= 0:
            if flush_index:
                self.on_become_inactive()  # Kafka's close() appends the last entry too
                self.index.flush()
                self.time_index.flush()
            self._close_file()

    def delete(self) -> None:
        self._close_file()
        for path in (self.log_path, self.index.path, self.time_index.path):
            path.unlink(missing_ok=True)
        self.txn_index.delete()

    def rename_for_deletion(self) -> None:
        """The first half of Kafka's ``asyncDeleteSegment``: each file renamed
        ``<name>.deleted`` (a restart removes such files), its descriptor kept open so that a
        read already sending this segment finishes; :meth:`delete` later removes them."""
        self.index.flush = self.time_index.flush = lambda: None  # type: ignore[method-assign]
        for owner in (self, self.index, self.time_index, self.txn_index):
            attr = "log_path" if owner is self else "path"
            path: Path = getattr(owner, attr)
            doomed = path.with_name(path.name + DELETED_SUFFIX)
            try:
                os.replace(path, doomed)
            except FileNotFoundError:
                pass  # an index not written yet
            setattr(owner, attr, doomed)

    def _close_file(self) -> None:
        # The descriptor is taken before it is closed: closing a number twice could close
        # whatever file the process opened under that number in between.
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.size}, next_offset={self.next_offset})"
