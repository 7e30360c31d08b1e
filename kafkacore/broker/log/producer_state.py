"""Idempotence on the broker: Kafka's ``ProducerStateManager`` and ``ProducerAppendInfo``.

Per partition, per producer id: the producer epoch and the metadata of its last five batches
(first and last sequence, first and last offset), and the first offset of its open transaction.  A batch that repeats one of those five is a
retry of a batch already in the log: it is not written again and its original offsets are the
answer.  Anything else must carry the next sequence (Kafka 4's ``ProducerAppendInfo.checkSequence``).

Transactions (KIP-98): a producer's first transactional batch opens a transaction at its offset;
the coordinator's COMMIT or ABORT marker closes it (:meth:`ProducerAppendInfo.append_end_txn_marker`).
The earliest open transaction, or a closed one whose marker is not yet below the high watermark,
is the partition's first unstable offset: the last stable offset (LSO) cannot pass it.
"""

from __future__ import annotations

import os
import struct
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from kafkacore.broker.log.end_transaction_marker import COMMIT, EndTransactionMarker
from kafkacore.broker.log.log_segment import SNAPSHOT_SUFFIX, file_name
from kafkacore.broker.log.log_validator import NO_SEQUENCE, BatchHeader
from kafkacore.core.crc import crc32c
from kafkacore.errors import (
    CorruptRecordError,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceNumberError,
    TransactionCoordinatorFencedError,
)

#: Kafka's ``ProducerStateEntry.NUM_BATCHES_TO_RETAIN``: the producer's
#: ``max.in.flight.requests.per.connection`` may be at most 5 with idempotence for this reason.
NUM_BATCHES_TO_RETAIN = 5
NO_PRODUCER_EPOCH = -1
INT_MAX = (1 << 31) - 1


class BatchMetadata(NamedTuple):
    """What the broker remembers of one of a producer's recent batches."""

    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int  # the batch's max timestamp


class CompletedTxn(NamedTuple):
    """A transaction a marker ended here (Kafka's ``CompletedTxn``)."""

    producer_id: int
    first_offset: int
    last_offset: int  # the marker's offset
    is_aborted: bool


@dataclass
class ProducerStateEntry:
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    batch_metadata: deque[BatchMetadata] = field(
        default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN)
    )
    #: max timestamp of the last batch: producer.id.expiration.ms counts from it (as Kafka)
    last_timestamp: int = -1
    #: the offset of the open transaction's first batch here, -1 when none is open
    current_txn_first_offset: int = -1
    #: the coordinator epoch of the last marker written here (a lower one is a zombie
    #: coordinator's), -1 before any
    coordinator_epoch: int = -1

    @property
    def last_seq(self) -> int:
        return self.batch_metadata[-1].last_seq if self.batch_metadata else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batch_metadata[-1].last_offset if self.batch_metadata else -1

    def find_duplicate_batch(self, h: BatchHeader) -> BatchMetadata | None:
        """Kafka's ``findDuplicateBatch``: same epoch and the same sequence range as a kept batch."""
        if h.producer_epoch != self.producer_epoch:
            return None
        first, last = h.base_sequence, h.last_sequence
        for meta in self.batch_metadata:
            if meta.first_seq == first and meta.last_seq == last:
                return meta
        return None

    def add_batch(self, epoch: int, meta: BatchMetadata) -> None:
        if epoch != self.producer_epoch:
            self.batch_metadata.clear()  # a new epoch starts a new sequence space
            self.producer_epoch = epoch
        self.batch_metadata.append(meta)
        self.last_timestamp = meta.timestamp

    def copy(self) -> ProducerStateEntry:
        return ProducerStateEntry(
            self.producer_id,
            self.producer_epoch,
            deque(self.batch_metadata, maxlen=NUM_BATCHES_TO_RETAIN),
            self.last_timestamp,
            self.current_txn_first_offset,
            self.coordinator_epoch,
        )


def in_sequence(last_seq: int, next_seq: int) -> bool:
    """Kafka's ``inSequence``: the next sequence, wrapping from Integer.MAX_VALUE to 0."""
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT_MAX)


@dataclass
class VerificationStateEntry:
    """A producer's transaction verification under way in one partition (Kafka's
    ``VerificationStateEntry``, KIP-890): the lowest sequence of its batches sent to be
    verified before its transaction opened here, at ``epoch``."""

    epoch: int
    lowest_sequence: int


class ProducerAppendInfo:
    """The producer-state changes of one append, checked batch by batch before anything is
    written, applied with ``ProducerStateManager.update`` after the write succeeded."""

    def __init__(
        self, partition: str, current: ProducerStateEntry | None, producer_id: int,
        verification: VerificationStateEntry | None = None,
    ) -> None:
        self.partition = partition
        self.producer_id = producer_id
        #: the producer's transaction verification under way here, if any
        self.verification = verification
        self.current = current or ProducerStateEntry(producer_id)
        self.updated = self.current.copy()
        self._touched = False
        #: the transaction a marker in this append ended, if any
        self.completed_txn: CompletedTxn | None = None

    def append(
        self,
        h: BatchHeader,
        first_offset: int,
        *,
        validate: bool = True,
        max_timestamp: int | None = None,
    ) -> None:
        """Check ``h`` against the state so far (unless ``validate`` is false: log recovery)
        and record it; ``max_timestamp`` is the append time on LogAppendTime topics."""
        epoch = h.producer_epoch
        if validate:
            self._check_producer_epoch(epoch, first_offset)
            self._check_sequence(epoch, h.base_sequence, first_offset)
            if not h.is_transactional and self.updated.current_txn_first_offset >= 0:
                raise InvalidTxnStateError(
                    f"producer {self.producer_id} sent a non-transactional batch to"
                    f" {self.partition} while its transaction is open"
                )
        if h.is_transactional and self.updated.current_txn_first_offset < 0:
            self.updated.current_txn_first_offset = first_offset
        meta = BatchMetadata(
            h.base_sequence,
            h.last_sequence,
            first_offset,
            first_offset + h.last_offset_delta,
            h.max_timestamp if max_timestamp is None else max_timestamp,
        )
        self.updated.add_batch(epoch, meta)
        self._touched = True

    def append_end_txn_marker(
        self, h: BatchHeader, offset: int, kind_is_commit: bool, *, validate: bool = True,
        coordinator_epoch: int = -1,
    ) -> CompletedTxn:
        """The coordinator's COMMIT or ABORT marker at ``offset`` ends the producer's
        transaction here (Kafka's ``appendEndTxnMarker``); a marker of a newer epoch (a fenced
        producer's transaction aborted) also moves the producer to that epoch.  A marker from
        an older coordinator epoch than the last one here is a zombie coordinator's
        (TRANSACTION_COORDINATOR_FENCED); -1 is an administrator's abort, not checked."""
        epoch = h.producer_epoch
        entry = self.updated
        if validate:
            self._check_producer_epoch(epoch, offset)
            if 0 <= coordinator_epoch < entry.coordinator_epoch:
                raise TransactionCoordinatorFencedError(
                    f"marker of producer {self.producer_id} in {self.partition} from coordinator"
                    f" epoch {coordinator_epoch}, older than {entry.coordinator_epoch}")
        entry.coordinator_epoch = max(entry.coordinator_epoch, coordinator_epoch)
        if epoch != entry.producer_epoch:
            entry.batch_metadata.clear()
            entry.producer_epoch = epoch
        first = entry.current_txn_first_offset
        self.completed_txn = CompletedTxn(
            self.producer_id, first if first >= 0 else offset, offset, not kind_is_commit)
        entry.current_txn_first_offset = -1
        entry.last_timestamp = h.max_timestamp
        self._touched = True
        return self.completed_txn

    def _check_producer_epoch(self, epoch: int, offset: int) -> None:
        if epoch < self.updated.producer_epoch:
            # Kafka >= 2.7 answers INVALID_PRODUCER_EPOCH (not PRODUCER_FENCED) on the produce path.
            raise InvalidProducerEpochError(
                f"epoch of producer {self.producer_id} at offset {offset} in {self.partition} is"
                f" {epoch}, smaller than the last seen epoch {self.updated.producer_epoch}"
            )

    def _check_sequence(self, epoch: int, first_seq: int, offset: int) -> None:
        v = self.verification
        if v is not None and epoch == v.epoch and first_seq > v.lowest_sequence \
                and self.updated.current_txn_first_offset < 0:
            # Kafka's VerificationStateEntry check (KIP-890): a batch of the transaction's
            # first sequences is still being verified with the coordinator (or retried after
            # a retriable answer); a later batch must not overtake it.  Above all where the
            # partition knows no epoch of this producer yet, which accepts any sequence: the
            # earlier batch would then be out of sequence for good, and the producer would
            # retry it until the coordinator's transaction timeout fences it.
            raise OutOfOrderSequenceNumberError(
                f"out of order sequence number for producer {self.producer_id} at offset"
                f" {offset} in {self.partition}: {first_seq} (incoming seq. number),"
                f" {v.lowest_sequence} (earliest seen sequence)"
            )
        if epoch != self.updated.producer_epoch:
            # A bumped epoch (or the producer's first batch here) must start at sequence 0 --
            # unless the broker knows no epoch at all for this producer id (see below).
            if first_seq != 0 and self.updated.producer_epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceNumberError(
                    f"invalid sequence number for new epoch of producer {self.producer_id} at"
                    f" offset {offset} in {self.partition}: {epoch} (request epoch),"
                    f" {first_seq} (seq. number), {self.updated.producer_epoch} (current epoch)"
                )
            return
        if self.updated.batch_metadata:
            last_seq = self.updated.last_seq
        elif epoch == self.current.producer_epoch:
            last_seq = self.current.last_seq
        else:
            last_seq = NO_SEQUENCE
        # Kafka 4: with no known epoch (the producer's batches left the log by retention or
        # DeleteRecords, or it never wrote here) any sequence is accepted; KIP-360 removed the
        # broker's UNKNOWN_PRODUCER_ID answer.
        if not (
            self.current.producer_epoch == NO_PRODUCER_EPOCH or in_sequence(last_seq, first_seq)
        ):
            raise OutOfOrderSequenceNumberError(
                f"out of order sequence number for producer {self.producer_id} at offset"
                f" {offset} in {self.partition}: {first_seq} (incoming seq. number),"
                f" {last_seq} (current end sequence number)"
            )


# Snapshot file: version, CRC-32C of what follows, then the entries.  Kafka's own format keeps
# only each producer's last batch; we keep all five so that retries across a restart are still
# recognised as duplicates (the rules applied to them are the same).  Version 2 adds each
# producer's open transaction (its first offset), as Kafka's ``currentTxnFirstOffset``;
# version 3 the coordinator epoch of its last marker.
_SNAPSHOT_VERSION = 3
_HEAD = struct.Struct(">hI")
_ENTRY_V1 = struct.Struct(">qhqb")
_ENTRY_V2 = struct.Struct(">qhqqb")
_ENTRY = struct.Struct(">qhqqib")
_BATCH = struct.Struct(">iiqqq")


class ProducerStateManager:
    """All producers' state for one partition, with ``.snapshot`` files in the log directory."""

    def __init__(self, directory: Path, partition: str = "") -> None:
        self.directory = Path(directory)
        self.partition = partition
        self.producers: dict[int, ProducerStateEntry] = {}
        #: producer id -> first offset of its open transaction (Kafka's ``ongoingTxns``)
        self.ongoing_txns: dict[int, int] = {}
        #: ended transactions whose marker is not yet below the high watermark
        #: (Kafka's ``unreplicatedTxns``): they hold the LSO back until it is
        self.unreplicated_txns: list[CompletedTxn] = []
        #: the log offset up to which the state reflects the log (Kafka's ``mapEndOffset``)
        self.map_end_offset = 0
        #: producer id -> its transaction verification under way (not in snapshots: Kafka
        #: keeps it in memory only, and a new leader verifies again)
        self.verifications: dict[int, VerificationStateEntry] = {}

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)

    def active_producers(self) -> list[ProducerStateEntry]:
        """Every producer known here (DescribeProducers)."""
        return list(self.producers.values())

    def prepare_update(self, producer_id: int) -> ProducerAppendInfo:
        return ProducerAppendInfo(self.partition, self.producers.get(producer_id), producer_id,
                                  self.verifications.get(producer_id))

    def start_verification(self, producer_id: int, epoch: int, base_sequence: int) -> None:
        """A batch of ``producer_id`` that would open its transaction here is sent to be
        verified: remember the lowest such sequence of that epoch (Kafka's
        ``maybeCreateVerificationStateEntry`` and ``maybeUpdateLowestSequenceAndEpoch``).  A
        newer epoch starts over; an older one changes nothing (its batches are fenced)."""
        v = self.verifications.get(producer_id)
        if v is None or epoch > v.epoch:
            self.verifications[producer_id] = VerificationStateEntry(epoch, base_sequence)
        elif epoch == v.epoch:
            v.lowest_sequence = min(v.lowest_sequence, base_sequence)

    def end_verification(self, producer_id: int, epoch: int) -> None:
        """The coordinator refused the producer's transaction at ``epoch`` here for good
        (fenced, not in a transaction): its batches will not come, nothing waits for them."""
        v = self.verifications.get(producer_id)
        if v is not None and v.epoch == epoch:
            del self.verifications[producer_id]

    def update(self, info: ProducerAppendInfo) -> None:
        if info._touched:
            self.producers[info.producer_id] = info.updated
            first = info.updated.current_txn_first_offset
            v = self.verifications.get(info.producer_id)
            if v is not None and (info.updated.producer_epoch > v.epoch
                                  or info.completed_txn is not None
                                  or (first >= 0 and info.updated.producer_epoch == v.epoch)):
                # The transaction opened here (its first batch is written), ended (a marker),
                # or a newer epoch came: the verification is over (Kafka clears it once the
                # batch is written).
                del self.verifications[info.producer_id]
            if first >= 0:
                self.ongoing_txns.setdefault(info.producer_id, first)
            else:
                self.ongoing_txns.pop(info.producer_id, None)
            if info.completed_txn is not None:
                self.unreplicated_txns.append(info.completed_txn)

    def last_stable_offset(self, completed: CompletedTxn) -> int:
        """The LSO once ``completed`` has ended (Kafka's ``lastStableOffset(completedTxn)``):
        the first offset of the earliest other open transaction, or just after the marker."""
        others = [o for pid, o in self.ongoing_txns.items() if pid != completed.producer_id]
        return min(others, default=completed.last_offset + 1)

    def first_unstable_offset(self, high_watermark: int) -> int | None:
        """The earliest offset of a transaction that is open, or ended by a marker not yet
        below ``high_watermark``; None if there is none (the LSO is then the HW)."""
        if self.unreplicated_txns:
            self.unreplicated_txns = [
                t for t in self.unreplicated_txns if t.last_offset >= high_watermark]
        firsts = list(self.ongoing_txns.values())
        firsts.extend(t.first_offset for t in self.unreplicated_txns)
        return min(firsts, default=None)

    def update_map_end_offset(self, offset: int) -> None:
        self.map_end_offset = offset

    def replay(self, h: BatchHeader,
               marker: EndTransactionMarker | None = None) -> CompletedTxn | None:
        """Apply a batch read back from the log (recovery, a follower's copy): Kafka's
        REPLICATION origin, no checks.  ``marker``: what the batch says if it is an
        end-transaction marker; returns the transaction it ended."""
        completed = None
        if h.has_producer_id:
            info = self.prepare_update(h.producer_id)
            if h.is_control:
                if marker is not None:
                    completed = info.append_end_txn_marker(
                        h, h.base_offset, marker.kind == COMMIT, validate=False,
                        coordinator_epoch=marker.coordinator_epoch)
            else:
                info.append(h, h.base_offset, validate=False)
            self.update(info)
        self.map_end_offset = h.last_offset + 1
        return completed

    def remove_expired_producers(self, now_ms: int, expiration_ms: int) -> int:
        expired = [
            pid for pid, e in self.producers.items()
            if now_ms - e.last_timestamp >= expiration_ms and e.current_txn_first_offset < 0
        ]
        for pid in expired:
            del self.producers[pid]
        return len(expired)

    # -- snapshots --------------------------------------------------------------------------------

    def snapshot_offsets(self) -> list[int]:
        out = []
        for p in self.directory.glob("*" + SNAPSHOT_SUFFIX):
            try:
                out.append(int(p.name[: -len(SNAPSHOT_SUFFIX)]))
            except ValueError:
                continue
        return sorted(out)

    def snapshot_path(self, offset: int) -> Path:
        return self.directory / file_name(offset, SNAPSHOT_SUFFIX)

    def take_snapshot(self) -> Path:
        """Write the state at ``map_end_offset`` to ``<offset>.snapshot`` (temp file, fsync,
        rename, so a crash leaves either the old set of snapshots or the new one)."""
        body = [struct.pack(">i", len(self.producers))]
        for e in self.producers.values():
            body.append(
                _ENTRY.pack(
                    e.producer_id, e.producer_epoch, e.last_timestamp,
                    e.current_txn_first_offset, e.coordinator_epoch, len(e.batch_metadata),
                )
            )
            body.extend(_BATCH.pack(*m) for m in e.batch_metadata)
        payload = b"".join(body)
        data = _HEAD.pack(_SNAPSHOT_VERSION, crc32c(payload)) + payload
        path = self.snapshot_path(self.map_end_offset)
        tmp = path.with_suffix(".snapshot.tmp")
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        return path

    @staticmethod
    def read_snapshot(path: Path) -> dict[int, ProducerStateEntry]:
        """Parse a snapshot file; ``CorruptRecordError`` if it is damaged."""
        data = path.read_bytes()
        if len(data) < _HEAD.size + 4:
            raise CorruptRecordError(f"{path.name}: too short for a producer snapshot")
        version, crc = _HEAD.unpack_from(data, 0)
        payload = memoryview(data)[_HEAD.size :]
        if version not in (1, 2, _SNAPSHOT_VERSION) or crc32c(payload) != crc:
            raise CorruptRecordError(f"{path.name}: bad version {version} or CRC")
        out: dict[int, ProducerStateEntry] = {}
        try:
            (count,) = struct.unpack_from(">i", payload, 0)
            pos = 4
            layout = {1: _ENTRY_V1, 2: _ENTRY_V2}.get(version, _ENTRY)
            for _ in range(count):
                txn_first = coordinator_epoch = -1
                if version == _SNAPSHOT_VERSION:
                    pid, epoch, last_ts, txn_first, coordinator_epoch, n = layout.unpack_from(
                        payload, pos)
                elif version == 2:
                    pid, epoch, last_ts, txn_first, n = layout.unpack_from(payload, pos)
                else:
                    pid, epoch, last_ts, n = layout.unpack_from(payload, pos)
                pos += layout.size
                entry = ProducerStateEntry(pid, epoch, last_timestamp=last_ts,
                                           current_txn_first_offset=txn_first,
                                           coordinator_epoch=coordinator_epoch)
                for _ in range(n):
                    entry.batch_metadata.append(BatchMetadata(*_BATCH.unpack_from(payload, pos)))
                    pos += _BATCH.size
                out[pid] = entry
        except struct.error as exc:
            raise CorruptRecordError(f"{path.name}: {exc}") from None
        if pos != len(payload):
            raise CorruptRecordError(f"{path.name}: {len(payload) - pos} bytes after the entries")
        return out

    def load_latest_snapshot(self, max_offset: int) -> int | None:
        """Load the newest readable snapshot at or below ``max_offset``; delete newer ones (they
        describe log that no longer exists) and damaged ones.  Returns its offset, or None."""
        for offset in reversed(self.snapshot_offsets()):
            path = self.snapshot_path(offset)
            if offset > max_offset:
                path.unlink(missing_ok=True)
                continue
            try:
                self.producers = self.read_snapshot(path)
            except (CorruptRecordError, OSError):
                path.unlink(missing_ok=True)
                continue
            self.map_end_offset = offset
            self._reset_transactions()
            return offset
        self.producers = {}
        self.map_end_offset = 0
        self._reset_transactions()
        return None

    def clear(self) -> None:
        """Forget every producer (the log is then replayed from its start)."""
        self.producers = {}
        self.map_end_offset = 0
        self._reset_transactions()

    def _reset_transactions(self) -> None:
        self.ongoing_txns = {pid: e.current_txn_first_offset for pid, e in self.producers.items()
                             if e.current_txn_first_offset >= 0}
        self.unreplicated_txns = []

    def delete_snapshots_below(self, offset: int) -> None:
        """Snapshots older than the log start are useless (Kafka's ``deleteSnapshotsBefore``),
        but the newest one is kept."""
        offsets = self.snapshot_offsets()
        for o in offsets[:-1]:
            if o < offset:
                self.snapshot_path(o).unlink(missing_ok=True)

    def delete_snapshots_after(self, offset: int) -> None:
        for o in self.snapshot_offsets():
            if o > offset:
                self.snapshot_path(o).unlink(missing_ok=True)
