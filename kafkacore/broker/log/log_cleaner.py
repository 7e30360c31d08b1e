"""``LogCleaner``: the threads that compact the logs of compacted topics, and the ``Cleaner``
each of them runs (Kafka's ``LogCleaner``, ``CleanerThread`` and ``Cleaner``, the one file
``LogCleaner.scala``).  See docs/broker/log_cleaner.rst.

``log.cleaner.threads`` threads, each with its own :class:`Cleaner` and offset map (the
``log.cleaner.dedupe.buffer.size`` split between them), share one :class:`Throttler`
(``log.cleaner.io.max.bytes.per.second``).  A thread asks the :class:`LogCleanerManager` for the
filthiest log, cleans it, records how far it got, and asks again; with nothing to clean it
sleeps ``log.cleaner.backoff.ms``.  The manager (which log, and how far it was cleaned) stands
below this file: it hands the cleaner a :class:`LogToClean` and may abort its clean.

A log is cleaned in two passes.  The first reads its *dirty* section (everything after the
cleaner's checkpoint, up to the first offset it may not clean) and fills the offset map: key ->
offset of its latest record.  The second rewrites every segment below the end of that section,
clean and dirty alike, a group of segments (at most ``segment.bytes`` together) into one new
segment, keeping a record only if no later record has its key.  Offsets never change: a kept
batch keeps its base offset, last offset, producer id, epoch and base sequence; only the
records inside it thin out.  Each new segment is written beside the log as ``.cleaned`` and
swapped in by :meth:`Log.replace_segments <kafkacore.broker.log.Log.replace_segments>`.

Besides superseded records, a clean removes what nobody will read: the records of aborted
transactions; a tombstone (a null value) once ``delete.retention.ms`` has passed since a clean
first kept it (KIP-534: that clean writes the *delete horizon* into the batch's base timestamp
and flags it); a transaction marker once no batch of its transaction is left and its horizon has
passed.  A producer's last batch is kept even when all its records go (empty), so
that a restarted broker still knows the producer's last sequence.
"""

from __future__ import annotations

import logging
import os
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from hashlib import md5
from pathlib import Path
from typing import NoReturn

from kafkacore.broker.log.cleaner_config import CleanerConfig
from kafkacore.broker.log.end_transaction_marker import read_marker
from kafkacore.broker.log.log import CLEANED_SUFFIX, Log
from kafkacore.broker.log.log_cleaner_manager import (
    Key,
    LogCleanerManager,
    LogCleaningAbortedError,
    LogToClean,
)
from kafkacore.broker.log.log_segment import LOG_SUFFIX, LogSegment, file_name
from kafkacore.broker.log.log_validator import (
    ATTRIBUTES,
    CRC,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_FLAG,
    BatchHeader,
    crc_ok,
    read_header,
)
from kafkacore.broker.log.offset_map import DIGEST_SIZE, SkimpyOffsetMap
from kafkacore.broker.log.throttler import Throttler
from kafkacore.broker.log.transaction_index import TXN_INDEX_SUFFIX, AbortedTxn, TransactionIndex
from kafkacore.broker.log.varint import varint
from kafkacore.broker.server_common.shutdownable_thread import ShutdownableThread
from kafkacore.core.compression import compress_records
from kafkacore.core.crc import crc32c
from kafkacore.core.record_batch import Record, iter_batches
from kafkacore.errors import CorruptRecordError, KafkaStorageError

log = logging.getLogger(__name__)

#: attributes bit 6: the batch's base timestamp is its delete horizon (KIP-534)
DELETE_HORIZON_FLAG = 0x40
_CODEC_MASK = 0x07
_HEADER = struct.Struct(">qiibIhiqqqhii")


class CorruptSegmentError(CorruptRecordError):
    """A batch the cleaner read does not frame or fails its CRC (Kafka's cleaner meets a
    ``CorruptRecordException``): the clean stops, nothing of the segment's group is swapped."""

    def __init__(self, segment: LogSegment, position: int, why: str) -> None:
        super().__init__(f"{segment.log_path.name}: damaged at byte {position}: {why}")
        self.segment = segment
        self.position = position


@dataclass
class CleanerStats:
    """What one clean read, wrote and removed (Kafka's ``CleanerStats``)."""

    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_retained: int = 0
    map_records: int = 0
    tombstones_removed: int = 0
    markers_removed: int = 0
    segments_swapped: int = 0
    #: the latest delete horizon this clean wrote (-1: none)
    latest_delete_horizon: int = -1
    start_s: float = field(default_factory=time.monotonic)
    end_s: float = 0.0

    @property
    def elapsed_s(self) -> float:
        return (self.end_s or time.monotonic()) - self.start_s


class _SegmentReader:
    """A segment's batches read through a duplicate of its descriptor, so that retention or a
    deletion of the log cannot close the file under the cleaner (it then reads the unlinked
    file, and the swap finds the segment gone and voids the clean)."""

    def __init__(self, segment: LogSegment, fd: int, size: int) -> None:
        self.segment = segment
        self.fd = fd
        self.size = size  #: the size when read: the swap checks that it did not change

    def batches(self, chunk_size: int) -> Iterator[tuple[BatchHeader, bytes]]:
        """(header with position 0, the batch's bytes) for each whole batch, in order.

        Each batch is checked (magic 2, framing, CRC) before the cleaner acts on it; the first
        that fails raises :class:`CorruptSegmentError`, as Kafka's cleaner meets a
        ``CorruptRecordException``: the clean stops with nothing of this group swapped in, so
        the intact batches after the damage stay where they are for the log's recovery to
        keep (it resyncs past the damaged bytes only; see ``LogSegment.recover``)."""
        pos = 0
        while pos < self.size:
            if self.size - pos < RECORD_BATCH_OVERHEAD:
                self._corrupt(pos, f"{self.size - pos} stray bytes at the end")
            chunk = os.pread(self.fd, min(chunk_size, self.size - pos), pos)
            at = 0
            while len(chunk) - at >= RECORD_BATCH_OVERHEAD:
                h = read_header(chunk, at)
                if h.magic != 2 or h.size < RECORD_BATCH_OVERHEAD \
                        or h.size > self.size - pos - at:
                    self._corrupt(pos + at, f"magic {h.magic}, length {h.size - LOG_OVERHEAD}")
                if h.size > len(chunk) - at:
                    break
                h = h._replace(position=0)
                raw = chunk[at : at + h.size]
                if not crc_ok(raw, h):
                    self._corrupt(pos + at, f"batch at offset {h.base_offset} fails its CRC")
                yield h, raw
                at += h.size
            if at == 0:  # a batch larger than the chunk
                h = read_header(chunk, 0)
                if h.magic != 2 or not RECORD_BATCH_OVERHEAD <= h.size <= self.size - pos:
                    self._corrupt(pos, f"magic {h.magic}, length {h.size - LOG_OVERHEAD}")
                raw = os.pread(self.fd, h.size, pos)
                h = h._replace(position=0)
                if len(raw) < h.size or not crc_ok(raw, h):
                    self._corrupt(pos, f"batch at offset {h.base_offset} fails its CRC")
                yield h, raw
                at = h.size
            pos += at

    def _corrupt(self, position: int, why: str) -> NoReturn:
        raise CorruptSegmentError(self.segment, position, why)

    def close(self) -> None:
        os.close(self.fd)


def open_segments(lg: Log, upper: int) -> list[_SegmentReader]:
    """Readers of the log's segments that end at or below ``upper`` (never the active one)."""
    out = []
    with lg._lock:
        lg._check_open()
        segments = lg.segments
        for segment in segments[:-1]:
            if segment.next_offset > upper or segment.base_offset >= upper:
                break
            out.append(_SegmentReader(segment, os.dup(segment._fd), segment.size))
    return out


class Cleaner:
    """Cleans one log at a time with its own offset map; ``check_done`` raises
    :class:`LogCleaningAbortedError` when the clean must stop."""

    def __init__(self, cleaner_id: int, offset_map: SkimpyOffsetMap, io_buffer_size: int,
                 throttler: Throttler, check_done: Callable[[Log], None]) -> None:
        self.cleaner_id = cleaner_id
        self.offset_map = offset_map
        self.io_buffer_size = io_buffer_size
        self.throttler = throttler
        self.check_done = check_done

    def clean(self, c: LogToClean, now_ms: int | None = None) -> tuple[int, CleanerStats]:
        """Clean ``c.log``; returns the end of the section cleaned (the new checkpoint)."""
        now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
        lg, stats = c.log, CleanerStats()
        readers = open_segments(lg, c.uncleanable_offset)
        try:
            end = self._build_offset_map(lg, readers, c.first_dirty_offset, stats)
            aborted = lg.collect_aborted_transactions(0, end)
            with lg._lock:
                last_batches = {e.producer_id: e.last_data_offset
                                for e in lg.producer_state.active_producers()}
            cleanable = [r for r in readers if r.segment.base_offset < end]
            txn_kept: dict[int, bool] = {}  # producer id -> a record of its open txn was kept
            for group in group_segments_by_size(cleanable, lg.config.segment_size):
                self._clean_segments(lg, group, aborted, last_batches, txn_kept, now, stats)
        finally:
            for r in readers:
                r.close()
        stats.end_s = time.monotonic()
        return end, stats

    # -- the first pass: the offset map ------------------------------------------------------------

    def _build_offset_map(self, lg: Log, readers: list[_SegmentReader], start: int,
                          stats: CleanerStats) -> int:
        """Put the keys of the dirty segments in the map, whole segments only, until it would
        overflow; returns the offset where the next clean starts (a segment's base)."""
        m = self.offset_map
        m.clear()
        aborted = lg.collect_aborted_transactions(start, readers[-1].segment.next_offset) \
            if readers else []
        end = start
        for r in readers:
            segment = r.segment
            if segment.next_offset <= start:
                continue
            # A segment has at most as many records as offsets: stop before one that may not fit
            # (the first dirty segment is always taken, as it must be for the clean to progress).
            if m.size and m.size + (segment.next_offset - segment.base_offset) > m.max_entries:
                break
            self.check_done(lg)
            table = m._map
            for h, raw in r.batches(self.io_buffer_size):
                self.throttler.maybe_throttle(h.size)
                stats.bytes_read += h.size
                if h.last_offset < start or h.is_control or _is_aborted(h, aborted):
                    continue
                for record in next(iter_batches(raw)).records:
                    key = record.key
                    if key is not None:  # key_digest, inline: once per record
                        table[key if len(key) <= DIGEST_SIZE else md5(key).digest()] = \
                            record.offset
                        stats.map_records += 1
                m.latest_offset = h.last_offset
            end = _next_base(readers, r)
        return end

    # -- the second pass: rewrite ------------------------------------------------------------------

    def _clean_segments(self, lg: Log, group: list[_SegmentReader], aborted: list[AbortedTxn],
                        last_batches: dict[int, int], txn_kept: dict[int, bool], now: int,
                        stats: CleanerStats) -> None:
        """Write the retained batches of ``group`` into ``<base>.log.cleaned`` and swap it in."""
        base = group[0].segment.base_offset
        cleaned = lg.dir / (file_name(base, LOG_SUFFIX) + CLEANED_SUFFIX)
        txn_index = TransactionIndex(lg.dir / (file_name(base, TXN_INDEX_SUFFIX) + CLEANED_SUFFIX))
        kept_aborts = {t.last_offset: t for t in aborted}
        horizon = now + lg.config.delete_retention_ms
        fd = os.open(cleaned, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            position = 0
            for r in group:
                self.check_done(lg)
                for h, raw in r.batches(self.io_buffer_size):
                    out = self._retained(h, raw, aborted, last_batches, txn_kept, now, horizon,
                                         stats)
                    stats.bytes_read += h.size
                    self.throttler.maybe_throttle(h.size + (len(out) if out else 0))
                    if out is None:
                        continue
                    if h.is_control and h.last_offset in kept_aborts:
                        txn_index.append(kept_aborts[h.last_offset])
                    position += os.pwrite(fd, out, position)
                    stats.bytes_written += len(out)
            os.fsync(fd)
            txn_index.flush()
        except BaseException:
            os.close(fd)
            cleaned.unlink(missing_ok=True)
            txn_index.delete()
            raise
        os.close(fd)
        if lg.replace_segments([(r.segment, r.size) for r in group], cleaned):
            stats.segments_swapped += 1
        else:
            raise LogCleaningAbortedError(f"{lg.name}: its segments changed during the clean")

    def _retained(self, h: BatchHeader, raw: bytes, aborted: list[AbortedTxn],
                  last_batches: dict[int, int], txn_kept: dict[int, bool], now: int,
                  horizon: int, stats: CleanerStats) -> bytes | None:
        """The bytes to keep of one batch: itself, a rewritten copy, or None."""
        has_horizon = bool(h.attributes & DELETE_HORIZON_FLAG)
        if h.is_control:
            marker = read_marker(raw, h)
            if marker is None:
                return raw
            kept = txn_kept.pop(h.producer_id, False)
            if not kept and has_horizon and now >= h.base_timestamp:
                stats.markers_removed += 1
                return None
            if has_horizon:
                return raw
            records = next(iter_batches(raw)).records
            stats.latest_delete_horizon = max(stats.latest_delete_horizon, horizon)
            return encode_batch(h, records, horizon)
        batch = next(iter_batches(raw))
        records = batch.records
        stats.records_read += len(records)
        discard = h.is_transactional and _is_aborted(h, aborted)
        keep: list[Record] = []
        tombstones = False
        if not discard:
            get = self.offset_map._map.get
            for record in records:
                key = record.key
                if key is None or record.offset < get(
                        key if len(key) <= DIGEST_SIZE else md5(key).digest(), -1):
                    continue
                if record.value is None:
                    if has_horizon and now >= h.base_timestamp:
                        stats.tombstones_removed += 1
                        continue
                    tombstones = True
                keep.append(record)
        stats.records_retained += len(keep)
        out: bytes | None = None
        if records and len(keep) == len(records) and (has_horizon or not tombstones):
            out = raw
        elif tombstones and not has_horizon:
            stats.latest_delete_horizon = max(stats.latest_delete_horizon, horizon)
            out = encode_batch(h, keep, horizon)
        elif keep:
            out = encode_batch(h, keep, h.base_timestamp if has_horizon else None)
        elif h.has_producer_id and last_batches.get(h.producer_id) == h.last_offset:
            out = raw if not records else encode_batch(h, [], None)  # kept empty: its sequence
        if out is not None and tombstones and has_horizon:
            # Tombstones wait for a horizon an earlier clean set: clean again once it passes.
            stats.latest_delete_horizon = max(stats.latest_delete_horizon, h.base_timestamp)
        if h.is_transactional and out is not None:
            # A batch of the transaction stays (even empty): so must its marker, or a replay
            # of the log would take the transaction for an open one.
            txn_kept[h.producer_id] = True
        return out


def group_segments_by_size(readers: list[_SegmentReader], max_size: int
                           ) -> list[list[_SegmentReader]]:
    """Consecutive segments whose sizes add up to at most ``max_size`` (and whose offsets fit a
    segment's 4-byte relative offsets) become one cleaned segment (Kafka's
    ``groupSegmentsBySize``)."""
    groups: list[list[_SegmentReader]] = []
    for r in readers:
        if groups:
            g = groups[-1]
            size = sum(x.size for x in g)
            if size + r.size <= max_size and \
                    r.segment.next_offset - g[0].segment.base_offset <= (1 << 31) - 1:
                g.append(r)
                continue
        groups.append([r])
    return groups


def _next_base(readers: list[_SegmentReader], r: _SegmentReader) -> int:
    """The base offset of the segment after ``r`` (where a clean ending at ``r`` stops)."""
    i = readers.index(r)
    return readers[i + 1].segment.base_offset if i + 1 < len(readers) else r.segment.next_offset


def _is_aborted(h: BatchHeader, aborted: list[AbortedTxn]) -> bool:
    """Is this transactional batch part of a transaction an ABORT marker ended?"""
    return h.is_transactional and any(
        t.producer_id == h.producer_id and t.first_offset <= h.base_offset <= t.last_offset
        for t in aborted)


# -- writing a batch again -------------------------------------------------------------------------

def _sized(data: bytes | None) -> bytes:
    return varint(-1) if data is None else varint(len(data)) + data


def _encode_record(r: Record, base_offset: int, base_timestamp: int) -> bytes:
    body = b"".join([
        b"\x00",
        varint(r.timestamp - base_timestamp),
        varint(r.offset - base_offset),
        _sized(r.key),
        _sized(r.value),
        varint(len(r.headers)),
        *(_sized(k.encode()) + _sized(v) for k, v in r.headers),
    ])
    return varint(len(body)) + body


def encode_batch(h: BatchHeader, records: list[Record], delete_horizon: int | None) -> bytes:
    """``h``'s batch with only ``records``, as Kafka's ``MemoryRecords.filterTo`` writes it:
    the same base offset, last offset delta, producer id, epoch, base sequence, partition
    leader epoch and codec; with a delete horizon, the base timestamp is the horizon and the
    flag is set.  No records: an empty batch (uncompressed), kept for its producer state."""
    log_append_time = bool(h.attributes & TIMESTAMP_TYPE_FLAG)
    attributes = h.attributes & ~DELETE_HORIZON_FLAG
    if delete_horizon is not None:
        attributes |= DELETE_HORIZON_FLAG
        base_timestamp = delete_horizon
    else:
        base_timestamp = h.base_timestamp
    if log_append_time or not records:
        max_timestamp = h.max_timestamp
    else:
        max_timestamp = max(r.timestamp for r in records)
    section = b"".join(_encode_record(r, h.base_offset, base_timestamp) for r in records)
    codec = h.attributes & _CODEC_MASK
    if not records:
        attributes &= ~_CODEC_MASK
    elif codec:
        section = compress_records(codec, section)
    size = RECORD_BATCH_OVERHEAD + len(section)
    header = bytearray(_HEADER.pack(
        h.base_offset, size - LOG_OVERHEAD, h.partition_leader_epoch, 2, 0, attributes,
        h.last_offset_delta, base_timestamp, max_timestamp, h.producer_id, h.producer_epoch,
        h.base_sequence, len(records)))
    crc = crc32c(bytes(header[ATTRIBUTES:]) + section)
    struct.pack_into(">I", header, CRC, crc)
    return bytes(header) + section


class CleanerThread(ShutdownableThread):
    """One cleaner thread (Kafka's ``LogCleaner.CleanerThread``)."""

    def __init__(self, cleaner_id: int, owner: LogCleaner) -> None:
        super().__init__(f"kafka-log-cleaner-thread-{cleaner_id}")
        cfg = owner.config
        self.owner = owner
        self._wake = threading.Event()
        self.cleaner = Cleaner(
            cleaner_id,
            SkimpyOffsetMap(cfg.dedupe_buffer_size // max(cfg.num_threads, 1),
                            cfg.dedupe_buffer_load_factor),
            cfg.io_buffer_size, owner.throttler, owner.manager.check_done)
        #: the stats of the last clean (tests, benchmarks, the log line)
        self.last_stats: CleanerStats | None = None

    def wakeup(self) -> None:
        self._wake.set()

    def do_work(self) -> None:
        if not self.try_clean():
            self._wake.wait(self.owner.config.backoff_ms / 1000)
            self._wake.clear()

    def try_clean(self) -> bool:
        """Clean the filthiest log, if one needs it; False when none does."""
        manager = self.owner.manager
        c = manager.grab_filthiest_compacted_log()
        if c is None:
            return False
        lg, end, horizon = c.log, None, -1
        try:
            end, stats = self.cleaner.clean(c)
            horizon = stats.latest_delete_horizon
            self.last_stats = stats
            log.info("%s: cleaned [%d, %d) in %.2f s: %d of %d records kept, %.1f MB read, "
                     "%.1f MB written, %d segments swapped", lg.name, c.first_dirty_offset, end,
                     stats.elapsed_s, stats.records_retained, stats.records_read,
                     stats.bytes_read / 1e6, stats.bytes_written / 1e6, stats.segments_swapped)
        except (LogCleaningAbortedError, KafkaStorageError) as exc:
            log.info("%s: clean stopped: %s", lg.name, exc)
        except CorruptSegmentError as exc:
            # Kafka: a CorruptRecordException ends the clean and marks the partition
            # uncleanable.  Nothing of the damaged segment's group was swapped in, so its intact
            # batches stay; the log is recovered from that segment at the next start, which
            # cuts the damaged bytes only (LogSegment.recover resyncs to the next sound batch).
            log.error("%s: the log cleaner met damaged data (%s): cleaning stops for this "
                      "partition until the broker restarts; the log is recovered from %s then",
                      lg.name, exc, exc.segment.log_path.name)
            lg.report_damage(exc.segment, exc.position, str(exc))
            manager.mark_uncleanable(lg)
            return True
        except Exception as exc:
            if isinstance(exc, OSError) and lg._closed:  # deleted under the cleaner
                log.info("%s: clean stopped: the log was deleted (%s)", lg.name, exc)
                return True
            # Kafka marks the partition uncleanable and goes on with the others.
            log.exception("%s: the log cleaner failed on it; it is not cleaned again until "
                          "the broker restarts", lg.name)
            manager.mark_uncleanable(lg)
            return True
        finally:
            if (lg.topic, lg.partition) not in manager.uncleanable:
                manager.done_cleaning(lg, end, horizon)
        return True


class LogCleaner:
    def __init__(self, config: CleanerConfig, log_dirs: list[Path],
                 logs: Callable[[], dict[Key, Log]]) -> None:
        self.config = config
        self._stop = threading.Event()
        self.throttler = Throttler(config.max_io_bytes_per_second, stop=self._stop)
        self.manager = LogCleanerManager(log_dirs, logs)
        self.threads = [CleanerThread(i, self) for i in range(config.num_threads)]

    def startup(self) -> None:
        for t in self.threads:
            t.start()

    def shutdown(self, timeout_s: float = 10.0) -> None:
        """Stop the threads; a clean in progress stops at its next segment, its cleaned file
        discarded (the log keeps its old segments)."""
        self._stop.set()
        self.manager.abort_all()
        for t in self.threads:
            t.initiate_shutdown()
        for t in self.threads:
            if t.is_alive():
                t.await_shutdown(timeout_s)

    def wakeup(self) -> None:
        """Look for dirty logs now instead of after the back-off (tests, tutorials)."""
        for t in self.threads:
            t.wakeup()

    def clean_now(self) -> list[CleanerStats]:
        """Clean, on the calling thread, every log that needs it (tests and tutorials without
        started threads)."""
        done: list[CleanerStats] = []
        thread = self.threads[0] if self.threads else CleanerThread(0, self)
        for _ in range(1000):  # a bound: each turn cleans a log or ends the loop
            if not thread.try_clean():
                break
            if thread.last_stats is not None:
                done.append(thread.last_stats)
                thread.last_stats = None
        return done


__all__ = [
    "DELETE_HORIZON_FLAG",
    "Cleaner",
    "CleanerStats",
    "CleanerThread",
    "CorruptSegmentError",
    "LogCleaner",
    "encode_batch",
    "group_segments_by_size",
]
