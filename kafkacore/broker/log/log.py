"""``Log``: one partition's log on disk (Kafka's ``UnifiedLog`` over ``LocalLog``).

A list of ``LogSegment``s ordered by base offset; appends go to the last one (the active segment),
which is rolled at ``segment.bytes`` / ``segment.ms``; ``retention.ms`` / ``retention.bytes`` delete
whole old segments.  Opening a log recovers it: the active segment (every segment after an
unclean shutdown) is scanned, its index rebuilt and its torn tail cut at the last batch whose CRC
checks; producer state is rebuilt from the newest snapshot plus the log after it.
"""

from __future__ import annotations

import base64
import bisect
import contextlib
import logging
import os
import random
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from kafkacore.broker.log.dir_failure_channel import LogDirFailureChannel
from kafkacore.broker.log.end_transaction_marker import COMMIT, read_marker
from kafkacore.broker.log.file_records import FileRecords
from kafkacore.broker.log.log_config import LONG_MAX, LogConfig
from kafkacore.broker.log.log_segment import (
    DELETED_SUFFIX,
    LOG_SUFFIX,
    LogSegment,
    file_name,
)
from kafkacore.broker.log.log_validator import (
    NO_PRODUCER_ID,
    RECORD_BATCH_OVERHEAD,
    BatchHeader,
    analyze,
    assign_offsets,
    check_compacted_keys,
    read_header,
    recompress,
)
from kafkacore.broker.log.offset_index import INDEX_SUFFIX
from kafkacore.broker.log.producer_state import (
    CompletedTxn,
    ProducerAppendInfo,
    ProducerStateManager,
)
from kafkacore.broker.log.time_index import TIME_INDEX_SUFFIX
from kafkacore.broker.log.transaction_index import TXN_INDEX_SUFFIX, AbortedTxn
from kafkacore.broker.server_common.files import fsync_directory
from kafkacore.errors import (
    CorruptMessageError,
    InvalidTimestampError,
    KafkaStorageError,
    OffsetOutOfRangeError,
    RecordListTooLargeError,
)

#: ListOffsets' special timestamps (Kafka's ``ListOffsetsRequest``)
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
NO_TIMESTAMP = -1
PARTITION_METADATA_FILE = "partition.metadata"
#: a segment the log cleaner is writing (discarded if the broker stops before its swap)
CLEANED_SUFFIX = ".cleaned"
#: a cleaned segment being swapped in (the swap is completed at the next start)
SWAP_SUFFIX = ".swap"

log = logging.getLogger(__name__)


class LogAppendInfo(NamedTuple):
    """What an append did: the offsets given (or, for a duplicate, the original batch's).
    A named tuple: one is made for every partition of every Produce request."""

    first_offset: int
    last_offset: int
    log_append_time_ms: int  # -1 on CreateTime topics
    log_start_offset: int
    record_count: int
    duplicate: bool = False


@dataclass(frozen=True)
class FetchDataInfo:
    """Whole batches read from ``fetch_offset`` on (``records`` empty when there is nothing)."""

    records: bytes | FileRecords  # a file region when read with ``file_records=True``
    first_offset: int  # base offset of the first batch returned (-1 if none)
    fetch_offset: int
    high_watermark: int
    log_start_offset: int
    log_end_offset: int


def _now_ms() -> int:
    return time.time_ns() // 1_000_000




def _next_offset_in(path: Path, base: int) -> int:
    """The offset after the last whole batch of the segment file ``path`` (``base`` if none)."""
    end = base
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        pos = 0
        while size - pos >= RECORD_BATCH_OVERHEAD:
            h = read_header(os.pread(f.fileno(), RECORD_BATCH_OVERHEAD, pos), 0)
            if h.magic != 2 or h.size < RECORD_BATCH_OVERHEAD or h.size > size - pos:
                break
            end = h.last_offset + 1
            pos += h.size
    return end


def _base_offsets(directory: Path, suffix: str) -> list[int]:
    """Base offsets of the files named ``<20 digits><suffix>``; other files are not ours."""
    out = []
    for p in directory.glob("*" + suffix):
        stem = p.name[: -len(suffix)]
        if len(stem) == 20 and stem.isdigit():
            out.append(int(stem))
    return out


class Log:
    """One partition's log.  Thread-safe: one lock serialises appends, reads and maintenance
    (Kafka's ``UnifiedLog.lock``); the work under it is a few syscalls per batch."""

    def __init__(
        self,
        directory: str | Path,
        config: LogConfig | None = None,
        *,
        topic: str = "",
        partition: int = 0,
        had_clean_shutdown: bool = False,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        topic_id: uuid.UUID | None = None,
        dir_failure_channel: LogDirFailureChannel | None = None,
    ) -> None:
        self.dir = Path(directory)
        #: where a failed write takes this log's dir offline (the LogManager's, shared)
        self.dir_failure_channel = dir_failure_channel or LogDirFailureChannel()
        try:
            self.dir.mkdir(parents=True)
            created = True  # a new log: nothing on disk to look for, load or recover
        except FileExistsError:
            created = False
        self.topic_id = (self._write_topic_id(topic_id) if created
                         else self._load_or_write_topic_id(topic_id))
        self.config = config or LogConfig()
        self.topic = topic
        self.partition = partition
        # Lock order 7: before LeaderEpochFileCache._lock. Guards segments, offsets, rolls.
        self._lock = threading.RLock()
        self._segments: list[LogSegment] = []
        self._bases: list[int] = []
        self._closed = False
        self._unflushed_messages = 0
        self.last_flush_ms = _now_ms()
        #: segments removed from the log whose files wait for file.delete.delay.ms: (when, it)
        self._doomed: list[tuple[int, LogSegment]] = []
        #: every offset below this is on disk (fsynced); LogManager checkpoints it
        self.recovery_point = 0
        self._hw: int | None = None  # None: follow the log end offset (a single broker)
        #: the replica's ``LeaderEpochFileCache`` (set by its Partition in a cluster), kept in
        #: step with appends and truncations here
        self.leader_epoch_cache = None
        self.producer_state = ProducerStateManager(self.dir, f"{topic}-{partition}")
        #: bytes cut from torn tails by the recovery at open (tests and the log message use it)
        self.recovered_bytes_truncated = 0
        #: offsets known to be lost: (first, last) of each hole recovery cut out or found
        #: between segments, logged at ERROR when found
        self.lost_ranges: list[tuple[int, int]] = []
        #: base offset of the oldest segment a read found damaged: recover from there at the
        #: next start (the LogManager lowers the recovery point and skips the clean marker)
        self.damaged_from: int | None = None
        self._reported: set[tuple[int, int]] = set()  # (segment, position) logged already
        #: DeleteRecords' log start offset, inside the first segment (its checkpoint's value)
        self._start = 0
        if created:
            self._roll(0, new_log=True)
        else:
            self._load_segments(had_clean_shutdown, recovery_point)
            self._start = min(log_start_offset, self.log_end_offset)
            self._rebuild_producer_state()
        self.recovery_point = self.log_end_offset

    # -- opening -----------------------------------------------------------------------------------

    def _load_or_write_topic_id(self, topic_id: uuid.UUID | None) -> uuid.UUID | None:
        """Kafka's ``PartitionMetadataFile``: the topic id, kept in ``partition.metadata`` so that
        a restarted broker answers with the same id (Metadata v10+, Fetch v13+ name topics by id).
        The id is Kafka's ``Uuid.toString()``: URL-safe base64 of the 16 bytes, unpadded.

        The file is not fsync'd (Kafka flushes it later, off the request path): the topic id is
        durable in the metadata log, so a file a crash left empty is taken as no file."""
        path = self.dir / PARTITION_METADATA_FILE
        if path.exists() and path.stat().st_size > 0:
            fields = dict(
                line.split(": ", 1) for line in path.read_text().splitlines() if ": " in line
            )
            try:
                stored = uuid.UUID(bytes=base64.urlsafe_b64decode(fields["topic_id"] + "=="))
            except (KeyError, ValueError) as exc:
                raise KafkaStorageError(f"{path} is damaged: {exc!r}") from None
            if topic_id is not None and topic_id != stored:
                raise KafkaStorageError(
                    f"{self.dir.name} belongs to topic id {stored}, not {topic_id}"
                )
            return stored
        return self._write_topic_id(topic_id)

    def _write_topic_id(self, topic_id: uuid.UUID | None) -> uuid.UUID | None:
        if topic_id is None:
            return None
        path = self.dir / PARTITION_METADATA_FILE
        text = base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")
        tmp = path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            f.write(f"version: 0\ntopic_id: {text}\n")
        os.replace(tmp, path)
        return topic_id

    def update_config(self, config: LogConfig) -> None:
        """AlterConfigs / IncrementalAlterConfigs: new settings apply from the next append."""
        with self._lock:
            self.config = config

    def _load_segments(self, had_clean_shutdown: bool, recovery_point: int) -> None:
        if set(os.listdir(self.dir)) <= {PARTITION_METADATA_FILE}:  # a new log: nothing to load
            self._roll(0)
            return
        for tmp in list(self.dir.glob("*.tmp")) + list(self.dir.glob("*" + DELETED_SUFFIX)):
            tmp.unlink()  # and the files of segments a stop kept from their deletion
        self._complete_swaps()
        bases = sorted(_base_offsets(self.dir, LOG_SUFFIX))
        for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):  # no log: stale
            for base in _base_offsets(self.dir, suffix):
                if base not in bases:
                    (self.dir / file_name(base, suffix)).unlink()
        now = _now_ms()
        for i, base in enumerate(bases):
            segment = LogSegment(self.dir, base, self.config.index_interval_bytes)
            segment.created_ms = now
            active = i == len(bases) - 1
            # A segment that ends at or below the recovery point was fsynced before the crash
            # (Kafka's recovery-point checkpoint): it is loaded, not scanned.
            flushed = not active and bases[i + 1] <= recovery_point
            if (had_clean_shutdown or flushed) and not active:
                segment.load()
            else:
                upper = None if active else bases[i + 1]
                self.recovered_bytes_truncated += segment.recover(upper)
                for first, last, size in segment.lost:
                    self._lost(first, last, f"{size} damaged bytes in {segment.log_path.name}")
                if segment.torn_tail and not active:
                    log.error("%s: recovery cut %d bytes of damaged tail from %s", self.name,
                              segment.torn_tail, segment.log_path.name)
            if self._segments and segment.base_offset != self._segments[-1].next_offset:
                previous = self._segments[-1]
                if segment.base_offset > previous.next_offset and self.config.compact:
                    pass  # the log cleaner removed the records there
                elif segment.base_offset > previous.next_offset:
                    self._lost(previous.next_offset, segment.base_offset - 1,
                               f"nothing between {previous.log_path.name} and "
                               f"{segment.log_path.name}")
                else:  # the last batch of the previous segment says more than it may
                    log.error("%s: %s starts at offset %d, inside %s (which ends at %d); its "
                              "batches there are refused until a recovery", self.name,
                              segment.log_path.name, segment.base_offset,
                              previous.log_path.name, previous.next_offset)
                    self.damaged_from = min(self.damaged_from or previous.base_offset,
                                            previous.base_offset)
            self._add_segment(segment)
        if not self._segments:
            self._roll(0)

    def _complete_swaps(self) -> None:
        """Kafka's ``LogLoader``: a cleaned segment not yet swapped in (``.cleaned``) is
        discarded, the log keeps its old segments; one being swapped in (``.swap``) replaces the
        old segments in its offset range, whose deletion the swap may have begun."""
        for cleaned in list(self.dir.glob("*" + CLEANED_SUFFIX)):
            cleaned.unlink()
        for swap in sorted(self.dir.glob("*" + LOG_SUFFIX + SWAP_SUFFIX)):
            base = int(swap.name[:20])
            end = max(_next_offset_in(swap, base), base + 1)
            for old in _base_offsets(self.dir, LOG_SUFFIX):
                if base <= old < end:
                    for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
                        (self.dir / file_name(old, suffix)).unlink(missing_ok=True)
            txn_swap = self.dir / (file_name(base, TXN_INDEX_SUFFIX) + SWAP_SUFFIX)
            if txn_swap.exists():
                os.replace(txn_swap, self.dir / file_name(base, TXN_INDEX_SUFFIX))
            os.replace(swap, self.dir / file_name(base, LOG_SUFFIX))
            log.warning("%s: completed the swap of a cleaned segment at offset %d that a stop "
                        "interrupted", self.name, base)

    def replace_segments(self, old: list[tuple[LogSegment, int]], cleaned: Path) -> bool:
        """Swap the cleaned segment ``cleaned`` (``<base>.log.cleaned``, with its
        ``.txnindex.cleaned``) in for the ``old`` segments, given with the sizes they had when
        the cleaner read them (Kafka's ``replaceSegments``).  The order makes a stop at any point
        recoverable: rename to ``.swap``, delete the old files, rename to ``.log``.  False (and
        the cleaned files deleted) when the old segments changed meanwhile (retention,
        DeleteRecords, a truncation, a deletion of the log): the clean is void."""
        base = old[0][0].base_offset
        txn_cleaned = self.dir / (file_name(base, TXN_INDEX_SUFFIX) + CLEANED_SUFFIX)
        with self._lock:
            ids = [id(s) for s in self._segments]
            intact = not self._closed and all(
                id(s) in ids and s.size == size for s, size in old)
            first = ids.index(id(old[0][0])) if intact else -1
            if not intact or ids[first : first + len(old)] != [id(s) for s, _ in old]:
                cleaned.unlink(missing_ok=True)
                txn_cleaned.unlink(missing_ok=True)
                return False
            with self._storage("swap cleaned segments into"):
                swap = self.dir / (file_name(base, LOG_SUFFIX) + SWAP_SUFFIX)
                txn_swap = self.dir / (file_name(base, TXN_INDEX_SUFFIX) + SWAP_SUFFIX)
                os.replace(txn_cleaned, txn_swap)
                os.replace(cleaned, swap)
                fsync_directory(self.dir)
                created = old[0][0].created_ms
                for segment, _ in old:
                    segment.delete()
                os.replace(txn_swap, self.dir / file_name(base, TXN_INDEX_SUFFIX))
                os.replace(swap, self.dir / file_name(base, LOG_SUFFIX))
                fsync_directory(self.dir)
                segment = LogSegment(self.dir, base, self.config.index_interval_bytes)
                segment.created_ms = created
                segment.rebuild_index()
                segment.index.flush()
            self._segments[first : first + len(old)] = [segment]
            self._bases[first : first + len(old)] = [base]
            return True

    def _lost(self, first: int, last: int, why: str) -> None:
        """Offsets [first, last] are gone: say so loudly, once, and remember them."""
        if last < first:
            log.error("%s: recovery removed stale or damaged bytes (%s); no offset lost",
                      self.name, why)
            return
        self.lost_ranges.append((first, last))
        log.error("%s: offsets %d to %d (%d records) are lost: %s; the log continues after "
                  "them", self.name, first, last, last - first + 1, why)

    def _rebuild_producer_state(self) -> None:
        """Newest snapshot at or below the log end, then the batches after it (Kafka's
        ``UnifiedLog.rebuildProducerState``)."""
        psm = self.producer_state
        end = self.log_end_offset
        start = psm.load_latest_snapshot(end)
        if any(s.size and not s.txn_index.existed for s in self._segments):
            # A transaction index is missing: replay the whole log, which rebuilds every
            # segment's index (Kafka rebuilds it while recovering the segment).
            psm.clear()
            start = None
        if start is None or start < self.log_start_offset:
            start = self.log_start_offset
            if psm.map_end_offset < start:
                psm.map_end_offset = start
        for segment in self._segments:
            if segment.next_offset <= start:
                continue
            position = segment.index.lookup(start)[1] if start > segment.base_offset else 0
            for h in segment.iter_headers(position):
                if h.last_offset >= start:
                    marker = None
                    if h.is_control and h.has_producer_id:
                        marker = read_marker(segment.pread(h.size, h.position),
                                             h._replace(position=0))
                    self._index_completed(segment, psm.replay(h, marker))
        psm.update_map_end_offset(end)

    def _index_completed(self, segment: LogSegment, completed: CompletedTxn | None) -> None:
        """An ABORT marker in ``segment``: record the transaction in the segment's index."""
        if completed is not None and completed.is_aborted:
            segment.txn_index.append(AbortedTxn(
                completed.producer_id, completed.first_offset, completed.last_offset,
                self.producer_state.last_stable_offset(completed)))

    def _add_segment(self, segment: LogSegment) -> None:
        self._segments.append(segment)
        self._bases.append(segment.base_offset)

    # -- offsets -----------------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        """The first segment's base offset, or later where DeleteRecords moved it."""
        return max(self._segments[0].base_offset, self._start)

    def maybe_increment_log_start_offset(self, offset: int) -> bool:
        """DeleteRecords (Kafka's ``UnifiedLog.maybeIncrementLogStartOffset``): the records below
        ``offset`` are gone for readers at once; the segments wholly below it are deleted.
        ``offset`` may not pass the high watermark (``OffsetOutOfRangeError``).  False when the
        log already starts at or after it."""
        with self._lock:
            self._check_open()
            hw = self.high_watermark
            if offset > hw:
                raise OffsetOutOfRangeError(
                    f"cannot delete records below {offset}, past the high watermark {hw} of "
                    f"{self.name}")
            if offset <= self.log_start_offset:
                return False
            self._start = offset
            with self._storage("delete segments of"):
                while len(self._segments) > 1 and self._segments[0].next_offset <= offset:
                    self._async_delete(self._segments.pop(0))
                    self._bases.pop(0)
            self.producer_state.delete_snapshots_below(self.log_start_offset)
            return True

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def high_watermark(self) -> int:
        leo = self._segments[-1].next_offset  # log_end_offset (read for every Produce, 4 times)
        return leo if self._hw is None else min(self._hw, leo)

    @high_watermark.setter
    def high_watermark(self, offset: int | None) -> None:
        self._hw = offset

    @property
    def last_stable_offset(self) -> int:
        """The last stable offset (LSO): the high watermark, or the first offset of the earliest
        transaction still open (or ended by a marker not yet below the HW) if that is lower.
        read_committed consumers read below it."""
        with self._lock:
            hw = self.high_watermark
            first = self.producer_state.first_unstable_offset(hw)
            return hw if first is None else min(first, hw)

    def collect_aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """The aborted transactions that overlap [fetch_offset, upper_bound), from the
        transaction indexes of the segments at and after the one holding ``fetch_offset``
        (Kafka's ``collectAbortedTransactions``)."""
        with self._lock:
            i = max(bisect.bisect_right(self._bases, fetch_offset) - 1, 0)
            out: list[AbortedTxn] = []
            for segment in self._segments[i:]:
                out.extend(segment.txn_index.collect_aborted(fetch_offset, upper_bound))
            return out

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def segments(self) -> list[LogSegment]:
        return list(self._segments)

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    # -- appends -----------------------------------------------------------------------------------

    def append_as_leader(
        self,
        records: bytes | bytearray | memoryview,
        *,
        leader_epoch: int = 0,
        from_coordinator: bool = False,
    ) -> LogAppendInfo:
        """Validate, check producer state, assign offsets, write.  Raises a
        :mod:`kafkacore.errors` class (with Kafka's error code) and leaves the log unchanged when
        anything is wrong; answers a retried batch with its original offsets (``duplicate``).
        ``from_coordinator``: the transaction coordinator's markers (Kafka's
        ``AppendOrigin.COORDINATOR``), the only control batches a leader accepts.

        A writable memoryview (a Produce request's records, a view of the frame the network
        thread read) is taken over: the offsets are written into it and the file is written
        from it, so the records are not copied.  Anything else is copied first."""
        cfg = self.config
        headers = analyze(records, cfg.max_message_bytes, allow_control=from_coordinator)
        if cfg.compact and not from_coordinator:
            check_compacted_keys(records, headers, self.name)
        if cfg.compression_type != "producer" and not from_coordinator:
            records, headers = recompress(records, headers, cfg.compression_type,
                                          cfg.compression_level, cfg.max_message_bytes)
        size = len(records)
        if size > cfg.segment_size:
            raise RecordListTooLargeError(
                f"{size} bytes of batches do not fit a segment of {cfg.segment_size} bytes (segment.bytes)"
            )
        buf = records if isinstance(records, memoryview) and not records.readonly \
            else bytearray(records)
        log_append_time = cfg.log_append_time
        with self._lock:
            self._check_open()
            # One clock read for the whole append (Kafka's ``now`` in UnifiedLog.append): the
            # timestamps are checked against it, and it is the append time.
            now = _now_ms()
            append_time = now if log_append_time else None
            if not log_append_time:
                self._validate_timestamps(headers, now)
            first = self._segments[-1].next_offset
            pending: dict[int, ProducerAppendInfo] = {}
            offset = first
            for h in headers:
                if h.producer_id > NO_PRODUCER_ID:
                    duplicate = self._prepare_producer_update(
                        pending, h, records, offset, append_time, from_coordinator)
                    if duplicate is not None:
                        return duplicate
                offset += h.last_offset_delta + 1
            assigned = assign_offsets(buf, headers, first, leader_epoch, append_time)
            try:
                self._write(self._maybe_roll(size, now), buf, assigned)
            except OSError as exc:
                raise self._storage_failed("append to", exc) from exc
            if pending:
                segment = self.active_segment
                for info in pending.values():
                    self.producer_state.update(info)
                    self._index_completed(segment, info.completed_txn)
            self.producer_state.update_map_end_offset(offset)
            count = offset - first
            self._after_append(count)
            return LogAppendInfo(first, offset - 1, now if log_append_time else -1,
                                 self.log_start_offset, count)

    def _prepare_producer_update(
        self, pending: dict[int, ProducerAppendInfo], h: BatchHeader,
        records: bytes | bytearray | memoryview, offset: int, append_time: int | None,
        from_coordinator: bool,
    ) -> LogAppendInfo | None:
        """Check batch ``h`` of an append against its producer's state (Kafka's
        ``analyzeAndValidateProducerState``), into ``pending``; a retried batch's original
        offsets when ``h`` is one (nothing is written then)."""
        pid = h.producer_id
        if h.is_control:
            if pid not in pending:
                pending[pid] = self.producer_state.prepare_update(pid)
            marker = read_marker(records, h)
            if marker is not None:
                pending[pid].append_end_txn_marker(
                    h, offset, marker.kind == COMMIT, coordinator_epoch=marker.coordinator_epoch)
        elif from_coordinator:
            # A coordinator's own transactional write (offsets of a transaction): no
            # sequences to check (Kafka checks them for clients only).
            if pid not in pending:
                pending[pid] = self.producer_state.prepare_update(pid)
            pending[pid].append(h, offset, validate=False, max_timestamp=append_time)
        else:
            # Kafka checks every batch against the state before this request.
            entry = self.producer_state.last_entry(pid)
            duplicate = entry.find_duplicate_batch(h) if entry is not None else None
            if duplicate is not None:
                return LogAppendInfo(
                    duplicate.first_offset,
                    duplicate.last_offset,
                    duplicate.timestamp if self.config.log_append_time else -1,
                    self.log_start_offset,
                    duplicate.last_offset - duplicate.first_offset + 1,
                    duplicate=True,
                )
            if pid not in pending:
                pending[pid] = self.producer_state.prepare_update(pid)
            pending[pid].append(h, offset, max_timestamp=append_time)
        return None

    def _validate_timestamps(self, headers: list[BatchHeader], now: int) -> None:
        """``message.timestamp.before.max.ms`` / ``after.max.ms`` on CreateTime topics.  Kafka
        checks every record; we check each batch's first and max timestamps (the producer's
        base timestamp is its first record's), which keeps the work per batch."""
        cfg = self.config
        latest = now + cfg.message_timestamp_after_max_ms  # (both settings are >= 0)
        earliest = now - cfg.message_timestamp_before_max_ms
        for h in headers:
            if h.max_timestamp > latest:  # (NO_TIMESTAMP, -1, is never later than now)
                raise InvalidTimestampError(
                    f"batch at byte {h.position}: timestamp {h.max_timestamp} is more than"
                    f" message.timestamp.after.max.ms={cfg.message_timestamp_after_max_ms} ahead of {now}"
                )
            if h.base_timestamp < earliest and h.base_timestamp != NO_TIMESTAMP:
                raise InvalidTimestampError(
                    f"batch at byte {h.position}: timestamp {h.base_timestamp} is more than"
                    f" message.timestamp.before.max.ms={cfg.message_timestamp_before_max_ms} before {now}"
                )

    def append_as_follower(self, records: bytes | bytearray | memoryview) -> LogAppendInfo:
        """Append batches that already carry their offsets (a follower copying its leader):
        validated, not renumbered, producer state updated without sequence checks."""
        headers = analyze(records, max(self.config.max_message_bytes, len(records)),
                          allow_control=True, compacted=True)
        with self._lock:
            self._check_open()
            leo = self.log_end_offset
            if headers[0].base_offset < leo:
                raise OffsetOutOfRangeError(
                    f"follower append at offset {headers[0].base_offset} below the log end {leo}"
                )
            for a, b in zip(headers, headers[1:], strict=False):
                if b.base_offset <= a.last_offset:
                    raise OffsetOutOfRangeError("follower batches with offsets out of order")
            # Offsets may jump (a compacted leader); the index stores absolute offsets, so a gap
            # needs no new segment unless relative offsets would overflow (_maybe_roll).
            with self._storage("append to"):
                segment = self._maybe_roll(len(records), _now_ms(), headers[-1].last_offset)
                self._write(segment, bytes(records), headers)
            segment = self.active_segment
            for h in headers:
                marker = read_marker(records, h) if h.is_control and h.has_producer_id else None
                self._index_completed(segment, self.producer_state.replay(h, marker))
            if self.leader_epoch_cache is not None:
                for h in headers:
                    self.leader_epoch_cache.assign(h.partition_leader_epoch, h.base_offset)
            count = sum(h.record_count for h in headers)
            self._after_append(count)
            return LogAppendInfo(
                headers[0].base_offset,
                headers[-1].last_offset,
                -1,
                self.log_start_offset,
                count,
            )

    def _write(self, segment: LogSegment, buf: bytes | bytearray, headers: list) -> None:
        if segment.size == 0 and headers[0].base_offset != segment.base_offset:
            # An empty active segment whose name no longer matches (after truncation): rename.
            self._replace_empty_active(headers[0].base_offset)
            segment = self.active_segment
        segment.append(buf, headers)

    @contextlib.contextmanager
    def _storage(self, what: str) -> Iterator[None]:
        """An ``OSError`` (a full disk, an I/O error) takes the log dir offline (Kafka's
        ``LogDirFailureChannel``) and reaches the caller as ``KAFKA_STORAGE_ERROR``.  The
        writes under it leave the log as it was: a short write is cut away (LogSegment.append)."""
        try:
            yield
        except OSError as exc:
            raise self._storage_failed(what, exc) from exc

    def _storage_failed(self, what: str, exc: OSError) -> KafkaStorageError:
        """The error to raise for ``exc``, once this log's dir is reported offline (the append
        path catches the ``OSError`` itself: a context manager costs more than its write)."""
        self.dir_failure_channel.maybe_add_offline_log_dir(
            self.dir.parent, f"cannot {what} {self.name}", exc)
        return KafkaStorageError(f"cannot {what} {self.name}: {exc}")

    def _after_append(self, count: int) -> None:
        # Forget the ended transactions whose markers the ISR has (a follower is never asked
        # for its LSO, so its list would only grow otherwise).
        if self.producer_state.unreplicated_txns:
            self.producer_state.first_unstable_offset(self.high_watermark)
        self._unflushed_messages += count
        if self._unflushed_messages >= self.config.flush_messages:
            with self._storage("flush"):
                self._flush_locked()

    def _maybe_roll(self, size: int, now: int, last_offset: int | None = None) -> LogSegment:
        """Kafka's ``maybeRoll``: a new segment when this append would pass segment.bytes, when
        segment.ms has passed since the segment was created, when its offset or time index is
        full (segment.index.bytes), or when relative offsets would no longer fit the index's 4
        bytes."""
        segment = self._segments[-1]  # (the active segment, for every append)
        if segment.size == 0:
            return segment
        cfg = self.config
        if (
            segment.size > cfg.segment_size - size
            or now - (segment.created_ms or now) > cfg.segment_ms - segment.roll_jitter_ms
            or len(segment.index) >= cfg.segment_index_bytes // 8  # Kafka's isFull: 8-byte
            or len(segment.time_index) >= cfg.segment_index_bytes // 12  # and 12-byte entries
            or (segment.next_offset if last_offset is None else last_offset) - segment.base_offset
            > (1 << 31) - 1 - 1_000_000
        ):
            return self._roll(self.log_end_offset)
        return segment

    def _roll(self, base_offset: int, *, new_log: bool = False) -> LogSegment:
        if self._segments:
            old = self.active_segment
            old.on_become_inactive()
            old.flush()  # Kafka flushes the rolled segment (asynchronously); we do it here
            self.recovery_point = max(self.recovery_point, old.next_offset)
        segment = LogSegment(self.dir, base_offset, self.config.index_interval_bytes,
                             new_log=new_log)
        segment.created_ms = _now_ms()
        if self.config.segment_jitter_ms:
            # Kafka's randomSegmentJitter: the partitions' segments do not all roll at once.
            segment.roll_jitter_ms = random.randrange(
                min(self.config.segment_jitter_ms, self.config.segment_ms))
        segment.next_offset = base_offset
        self._add_segment(segment)
        if len(self._segments) > 1:
            # Kafka snapshots producer state at every roll, named by the new segment's base.
            self.producer_state.update_map_end_offset(base_offset)
            self.producer_state.take_snapshot()
        return segment

    def _replace_empty_active(self, base_offset: int) -> None:
        old = self._segments.pop()
        self._bases.pop()
        old.delete()
        segment = LogSegment(self.dir, base_offset, self.config.index_interval_bytes)
        segment.created_ms = _now_ms()
        segment.next_offset = base_offset
        self._add_segment(segment)

    # -- reads -------------------------------------------------------------------------------------

    def read(
        self,
        fetch_offset: int,
        max_bytes: int,
        *,
        max_offset: int | None = None,
        min_one_batch: bool = True,
        file_records: bool = False,
    ) -> FetchDataInfo:
        """Whole batches from the one holding ``fetch_offset`` (Kafka's ``UnifiedLog.read``).

        ``max_offset`` is exclusive (the high watermark for a consumer); ``OffsetOutOfRangeError``
        outside [log start, log end].  With ``file_records`` the records are a
        :class:`~kafkacore.broker.log.file_records.FileRecords` region (the fetch path, which
        sends them with ``sendfile``), which the caller must close."""
        with self._lock:
            self._check_open()
            start, end = self.log_start_offset, self.log_end_offset
            if fetch_offset < start or fetch_offset > end:
                raise OffsetOutOfRangeError(
                    f"offset {fetch_offset} is outside [{start}, {end}] in {self.name}"
                )
            hw = self.high_watermark
            result = FetchDataInfo(b"", -1, fetch_offset, hw, start, end)
            if fetch_offset == end or (max_offset is not None and fetch_offset >= max_offset):
                return result
            i = bisect.bisect_right(self._bases, fetch_offset) - 1
            for segment in self._segments[max(i, 0) :]:
                try:
                    with self._storage("read"):
                        read = segment.read_file_records if file_records else segment.read
                        got = read(fetch_offset, max_bytes, max_offset, min_one_batch)
                except CorruptMessageError as exc:
                    self._report_damage(segment, str(exc))
                    raise
                if segment.damage:
                    self._report_damage(segment, "a batch after the ones served fails its checks")
                if got is not None:
                    data, first = got
                    if data:
                        if first > fetch_offset and not self.config.compact:
                            self._report_hole(fetch_offset, first)
                        return FetchDataInfo(data, first, fetch_offset, hw, start, end)
                    return result
            return result

    def readable_bytes(self, fetch_offset: int, max_bytes: int, max_offset: int | None) -> int:
        """About how many bytes :meth:`read` would return from ``fetch_offset`` (at most
        ``max_bytes``, below ``max_offset``), found from batch positions alone, reading only
        the headers an offset lookup reads (Kafka's ``DelayedFetch`` compares offset positions
        the same way).  A fetch waiting for ``fetch.min.bytes`` asks it at every append to its
        partitions: it must not read and check the data each time; the read that answers the
        fetch does that.  0 outside [log start, log end)."""
        with self._lock:
            self._check_open()
            end = self.log_end_offset if max_offset is None else min(max_offset,
                                                                     self.log_end_offset)
            if not self.log_start_offset <= fetch_offset < end:
                return 0
            i = max(bisect.bisect_right(self._bases, fetch_offset) - 1, 0)
            total = 0
            for k, segment in enumerate(self._segments[i:]):
                if segment.base_offset >= end or total >= max_bytes:
                    break
                begin = 0
                if k == 0:  # from the batch holding the fetch offset (none: the next segment)
                    first = segment.translate_offset(fetch_offset)
                    if first is None:
                        continue
                    begin = first.position
                stop = segment.translate_offset(end) if end < segment.next_offset else None
                total += (segment.size if stop is None else stop.position) - begin
            return min(total, max_bytes)

    def _report_damage(self, segment: LogSegment, why: str) -> None:
        """A read refused damaged bytes: log it once (ERROR), and have the log recovered from
        this segment at the next start."""
        if self.damaged_from is None or segment.base_offset < self.damaged_from:
            self.damaged_from = segment.base_offset
        for position in sorted(segment.damage) or [-1]:
            if (segment.base_offset, position) not in self._reported:
                self._reported.add((segment.base_offset, position))
                log.error("%s: refusing damaged data in %s (%s); it is not served, and the log "
                          "is recovered from this segment at the next start", self.name,
                          segment.log_path.name, why)

    def report_damage(self, segment: LogSegment, position: int, why: str) -> None:
        """Damage found outside a read (the log cleaner's): logged once, and the next start
        recovers the log from ``segment`` (reads check every batch they serve anyway)."""
        with self._lock:
            segment.damage.add(position)
            self._report_damage(segment, why)

    def _report_hole(self, fetch_offset: int, first: int) -> None:
        """A read found its first batch past ``fetch_offset``: a hole (cut by a recovery, a
        missing segment, or a compacted leader's gap): what follows is served, and said once."""
        if (-1, first) not in self._reported:
            self._reported.add((-1, first))
            log.warning("%s: a fetch at offset %d found no record before %d: offsets %d to %d "
                        "are missing from the log", self.name, fetch_offset, first,
                        fetch_offset, first - 1)

    def fetch_offset_by_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """ListOffsets (Kafka's ``fetchOffsetByTimestamp``): the first *record* whose timestamp
        is >= ``timestamp``, as (offset, its timestamp), found through each segment's time
        index; MAX_TIMESTAMP (KIP-734): the first record with the log's largest timestamp;
        ``EARLIEST_TIMESTAMP`` / ``LATEST_TIMESTAMP`` as Kafka."""
        with self._lock:
            self._check_open()
            if timestamp == EARLIEST_TIMESTAMP:
                return self.log_start_offset, -1
            if timestamp == LATEST_TIMESTAMP:
                return self.log_end_offset, -1
            if timestamp == MAX_TIMESTAMP:
                # Kafka: the (first) segment with the largest timestamp, then in it the first
                # record carrying that timestamp.
                latest = max(self._segments, key=lambda s: s.max_timestamp)
                return latest.offset_of_max_timestamp()
            start = self.log_start_offset
            for segment in self._segments:
                if segment.size and segment.max_timestamp >= timestamp \
                        and segment.next_offset > start:
                    found = segment.find_offset_by_timestamp(timestamp, start)
                    if found is not None:
                        return found
            return None

    # -- maintenance -------------------------------------------------------------------------------

    def truncate_to(self, offset: int) -> None:
        """Remove every batch at or after ``offset`` (a follower diverging from its leader)."""
        with self._lock:
            self._check_open()
            if offset >= self.log_end_offset:
                return
            offset = max(offset, self.log_start_offset)
            with self._storage("truncate"):
                while len(self._segments) > 1 and self._segments[-1].base_offset >= offset:
                    self._segments.pop().delete()
                    self._bases.pop()
                self.active_segment.truncate_to(offset)
                self.active_segment.flush()
            self.recovery_point = min(self.recovery_point, self.log_end_offset)
            self.producer_state.delete_snapshots_after(self.log_end_offset)
            self._rebuild_producer_state()
            if self.leader_epoch_cache is not None:
                self.leader_epoch_cache.truncate_from_end(self.log_end_offset)
            if self._hw is not None:
                self._hw = min(self._hw, self.log_end_offset)

    def delete_old_segments(self, now_ms: int | None = None) -> int:
        """retention.ms and retention.bytes (Kafka's ``deleteOldSegments``): delete whole
        segments from the oldest, never one holding offsets at or above the high watermark.
        An expired active segment is rolled first so that it can go too.  Returns how many."""
        now = _now_ms() if now_ms is None else now_ms
        cfg = self.config
        deleted = 0
        if not cfg.delete:
            return 0  # cleanup.policy=compact: the log cleaner, not retention, bounds the log
        with self._lock:
            self._check_open()
            self.delete_doomed_files(now)
            hw = self.high_watermark

            def expired(s: LogSegment) -> bool:
                return cfg.retention_ms >= 0 and now - s.largest_timestamp > cfg.retention_ms

            if (
                self.active_segment.size
                and all(expired(s) for s in self._segments)
                and self.log_end_offset <= hw
            ):
                with self._storage("roll"):
                    self._roll(self.log_end_offset)
            total = self.size_in_bytes
            while len(self._segments) > 1:
                s = self._segments[0]
                if self._segments[1].base_offset > hw:
                    break
                by_size = cfg.retention_bytes >= 0 and total - s.size >= cfg.retention_bytes
                if not (expired(s) or by_size):
                    break
                self._segments.pop(0)
                self._bases.pop(0)
                total -= s.size
                self._async_delete(s, now)
                deleted += 1
            if deleted:
                self.producer_state.delete_snapshots_below(self.log_start_offset)
        return deleted

    def _async_delete(self, segment: LogSegment, now_ms: int | None = None) -> None:
        """Remove a segment that left the log (Kafka's ``asyncDeleteSegment``): at once with
        ``file.delete.delay.ms=0``, else renamed ``.deleted`` now and removed once the delay
        has passed (at a retention check after it; at the latest when the log closes)."""
        delay = self.config.file_delete_delay_ms
        if delay == 0:
            segment.delete()
            return
        segment.rename_for_deletion()
        now = _now_ms() if now_ms is None else now_ms
        self._doomed.append((now + delay, segment))

    def delete_doomed_files(self, now_ms: int | None = None) -> int:
        """Remove the files of deleted segments whose file.delete.delay.ms has passed."""
        now = _now_ms() if now_ms is None else now_ms
        with self._lock:
            due = [s for when, s in self._doomed if when <= now]
            self._doomed = [(when, s) for when, s in self._doomed if when > now]
        for segment in due:
            segment.delete()
        return len(due)

    def remove_expired_producers(self, now_ms: int | None = None) -> int:
        now = _now_ms() if now_ms is None else now_ms
        with self._lock:
            return self.producer_state.remove_expired_producers(
                now, self.config.producer_id_expiration_ms
            )

    def flush(self) -> None:
        with self._lock:
            self._check_open()
            with self._storage("flush"):
                self._flush_locked()

    def _flush_locked(self) -> None:
        for segment in self._segments[-2:]:
            segment.flush()
        self._unflushed_messages = 0
        self.last_flush_ms = _now_ms()
        self.recovery_point = self.log_end_offset

    def maybe_flush(self, now_ms: int | None = None) -> bool:
        """``flush.ms``: fsync if unflushed records are older than it (the broker's periodic
        ``log.flush.scheduler.interval.ms`` task calls this through ``LogManager``)."""
        now = _now_ms() if now_ms is None else now_ms
        with self._lock:
            if self._closed or not self._unflushed_messages:
                return False
            if now - self.last_flush_ms < self.config.flush_ms:
                return False
            self._check_open()
            with self._storage("flush"):
                self._flush_locked()
            return True

    def close(self, *, clean: bool = True) -> None:
        """Flush, snapshot producer state at the log end, close the files (a clean shutdown).

        ``clean=False`` only closes the file descriptors, leaving the files as a crash of the
        process would (tests and tutorials use it to simulate ``kill -9`` in-process)."""
        with self._lock:
            if self._closed:
                return
            if clean:
                try:
                    self._flush_locked()
                    self.producer_state.update_map_end_offset(self.log_end_offset)
                    self.producer_state.take_snapshot()
                except OSError as exc:  # the next start recovers what did not reach the disk
                    log.error("%s: cannot flush at close: %s", self.name, exc)
                    clean = False
            for segment in self._segments:
                try:
                    segment.close(flush_index=clean)
                except OSError as exc:
                    log.error("%s: cannot close %s: %s", self.name, segment.log_path, exc)
            self.delete_doomed_files(LONG_MAX)
            self._closed = True

    def delete(self) -> None:
        """Close and remove the partition's directory."""
        with self._lock:
            for segment in self._segments:
                segment.delete()
            self.delete_doomed_files(LONG_MAX)
            self._closed = True
            shutil.rmtree(self.dir, ignore_errors=True)

    def _check_open(self) -> None:
        if self._closed:
            raise KafkaStorageError(f"log {self.name} is closed")
        failures = self.dir_failure_channel
        # (any_offline first: building ``dir.parent`` costs more than the rest of the check)
        if failures.any_offline() and failures.is_offline(self.dir.parent):
            raise KafkaStorageError(f"log dir {self.dir.parent} is offline: "
                                    f"{self.dir_failure_channel.reason(self.dir.parent)}")

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}" if self.topic else str(self.dir)

    def __repr__(self) -> str:
        return (
            f"Log({self.name}, start={self.log_start_offset}, end={self.log_end_offset},"
            f" segments={len(self._segments)})"
        )
