"""The log the quorum replicates, as the protocol sees it (Kafka's ``ReplicatedLog``).

The protocol needs little of a log: append entries under an epoch, the end offset, the epoch of
the last entry, where an epoch's entries end (to find a follower's diverging point), truncation
to that point, and the high watermark.  ``RaftLog`` is that interface; ``MemoryRaftLog`` keeps
the entries in a list, for the model test (the ``__cluster_metadata`` log on disk will implement
the same interface over the broker's log later).

Offsets start at 0.  With snapshots (KIP-630) the log also holds the state machine's snapshots,
each at a committed offset (``create_new_snapshot``), and forgets the entries before its oldest
snapshot (``delete_before_snapshot``): the *log start offset* advances to that snapshot's end
offset, never past the high watermark, and a log that starts there still knows the epoch of the
entry before it (the snapshot id's).  Epochs start at 1; an empty log reports epoch 0, as Kafka's
does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from kafkacore.errors import IllegalStateError
from kafkacore.raft.raw_snapshot_reader import OffsetAndEpoch, RawSnapshotReader, encode_snapshot


@dataclass(frozen=True, slots=True)
class LeaderChangeMessage:
    """The control record a new leader appends first in its epoch (Kafka's ``LeaderChange``)."""

    leader_id: int
    voters: tuple[int, ...]
    granting_voters: tuple[int, ...]
    version: int = 0


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One record of the log: its offset, the epoch of the leader that appended it, its value.

    A control record (the ``LeaderChange`` a leader writes first) has ``leader_change`` set and an
    empty value.
    """

    offset: int
    epoch: int
    value: bytes = b""
    leader_change: LeaderChangeMessage | None = None


class RaftLog(Protocol):
    """What the protocol asks of a log."""

    def end_offset(self) -> int:
        """The offset the next entry gets."""
        ...

    def last_fetched_epoch(self) -> int:
        """The epoch of the last entry, 0 for an empty log."""
        ...

    def append_as_leader(self, values: Sequence[bytes | LeaderChangeMessage], epoch: int) -> int:
        """Append under ``epoch``; returns the offset of the last entry appended."""
        ...

    def append_as_follower(self, entries: Sequence[LogEntry]) -> None:
        """Append entries read from the leader; the first one must be at ``end_offset()``."""
        ...

    def truncate_to(self, offset: int) -> None:
        """Remove every entry at ``offset`` and after; never below the high watermark."""
        ...

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """The largest epoch <= ``epoch`` in the log and the offset where its entries end."""
        ...

    def read(self, start_offset: int, max_entries: int) -> tuple[LogEntry, ...]:
        """Up to ``max_entries`` entries from ``start_offset``."""
        ...

    @property
    def high_watermark(self) -> int:
        """The offset below which every entry is committed."""
        ...

    def update_high_watermark(self, offset: int) -> None:
        """Raise the high watermark (never lowers it; never past the end offset)."""
        ...

    @property
    def log_start_offset(self) -> int:
        """The offset of the first entry held (the oldest snapshot's end offset, or 0)."""
        ...

    def create_new_snapshot(self, snapshot_id: OffsetAndEpoch, records: Sequence[bytes]) -> None:
        """Store a frozen snapshot of the state at ``snapshot_id`` (committed, in this log)."""
        ...

    def latest_snapshot_id(self) -> OffsetAndEpoch | None:
        ...

    def snapshot_ids(self) -> list[OffsetAndEpoch]:
        """The ids of the snapshots held, oldest first."""
        ...

    def epoch_at(self, offset: int) -> int | None:
        """The epoch of the entry before ``offset``, None if the log cannot tell."""
        ...

    def earliest_snapshot_id(self) -> OffsetAndEpoch | None:
        ...

    def read_snapshot(self, snapshot_id: OffsetAndEpoch) -> RawSnapshotReader | None:
        ...

    def delete_before_snapshot(self, snapshot_id: OffsetAndEpoch) -> bool:
        """Forget the entries (and snapshots) before ``snapshot_id``; True if any went."""
        ...

    def install_snapshot(self, snapshot: RawSnapshotReader) -> None:
        """A snapshot fetched from the leader: store it and start the log empty at its end."""
        ...


class MemoryRaftLog:
    """A ``RaftLog`` in a list (the model test's log; Kafka's tests have ``MockLog``).

    ``entries[i]`` is the entry at offset ``log_start_offset + i``; ``snapshots`` holds the
    frozen snapshots by id, oldest first."""

    def __init__(self) -> None:
        self.entries: list[LogEntry] = []
        self._high_watermark = 0
        self._start = 0
        #: the epoch of the entry before ``_start`` (the snapshot id's), 0 at offset 0
        self._start_epoch = 0
        self.snapshots: dict[OffsetAndEpoch, bytes] = {}
        #: snapshots installed from a leader since the start (FetchSnapshot)
        self.snapshots_installed = 0

    @property
    def log_start_offset(self) -> int:
        return self._start

    def end_offset(self) -> int:
        return self._start + len(self.entries)

    def last_fetched_epoch(self) -> int:
        return self.entries[-1].epoch if self.entries else self._start_epoch

    def append_as_leader(self, values: Sequence[bytes | LeaderChangeMessage], epoch: int) -> int:
        if epoch < self.last_fetched_epoch():
            raise IllegalStateError(
                f"append under epoch {epoch} after an entry of epoch {self.last_fetched_epoch()}"
            )
        for value in values:
            offset = self.end_offset()
            if isinstance(value, LeaderChangeMessage):
                self.entries.append(LogEntry(offset, epoch, b"", value))
            else:
                self.entries.append(LogEntry(offset, epoch, value))
        return self.end_offset() - 1

    def append_as_follower(self, entries: Sequence[LogEntry]) -> None:
        for entry in entries:
            if entry.offset != self.end_offset():
                raise IllegalStateError(
                    f"follower append at offset {entry.offset}, the log ends at {self.end_offset()}"
                )
            if entry.epoch < self.last_fetched_epoch():
                raise IllegalStateError(
                    f"entry of epoch {entry.epoch} after one of epoch {self.last_fetched_epoch()}"
                )
            self.entries.append(entry)

    def truncate_to(self, offset: int) -> None:
        # Committed entries are never taken back: a truncation below the high watermark means
        # the protocol is broken, and must stop here rather than lose them.
        if offset < self._high_watermark or offset < self._start:
            raise IllegalStateError(
                f"truncation to {offset}, below the high watermark {self._high_watermark} or "
                f"the log start offset {self._start}"
            )
        del self.entries[offset - self._start:]

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        # Walk back over the epochs after the one asked for; the entries of the largest epoch
        # <= it end where the next epoch starts (or at the log's end).  Past the first entry,
        # the snapshot id at the log start stands for the entries before it.
        end = self.end_offset()
        index = len(self.entries) - 1
        while index >= 0 and self.entries[index].epoch > epoch:
            end = self._start + index
            index -= 1
        if index < 0:
            if self._start > 0 and self._start_epoch <= epoch:
                return OffsetAndEpoch(self._start, self._start_epoch)
            return OffsetAndEpoch(0, 0)
        return OffsetAndEpoch(end, self.entries[index].epoch)

    def read(self, start_offset: int, max_entries: int) -> tuple[LogEntry, ...]:
        first = max(0, start_offset - self._start)
        return tuple(self.entries[first : first + max(0, max_entries)])

    def epoch_at(self, offset: int) -> int | None:
        """The epoch of the entry before ``offset`` (what a snapshot ending there is
        stamped with), None if the log cannot tell (before its start or past its end)."""
        if offset == self._start:
            return self._start_epoch
        if self._start < offset <= self.end_offset():
            return self.entries[offset - 1 - self._start].epoch
        return None

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    def update_high_watermark(self, offset: int) -> None:
        if offset > self.end_offset():
            raise IllegalStateError(
                f"high watermark {offset} past the end offset {self.end_offset()}"
            )
        self._high_watermark = max(self._high_watermark, offset)

    # -- snapshots (KIP-630) -------------------------------------------------------------------

    def create_new_snapshot(self, snapshot_id: OffsetAndEpoch, records: Sequence[bytes]) -> None:
        # Only the committed state: a snapshot of entries a new leader could still replace
        # would outlive them.
        if snapshot_id.offset > self._high_watermark:
            raise IllegalStateError(
                f"snapshot at {snapshot_id.offset}, past the high watermark {self._high_watermark}"
            )
        if self.epoch_at(snapshot_id.offset) != snapshot_id.epoch:
            raise IllegalStateError(
                f"snapshot {snapshot_id}: the log's entry before it is of epoch "
                f"{self.epoch_at(snapshot_id.offset)}"
            )
        latest = self.latest_snapshot_id()
        if latest is not None and snapshot_id.offset <= latest.offset:
            return  # the state at that offset is snapshotted already
        self._store_snapshot(snapshot_id, encode_snapshot(records))

    def _store_snapshot(self, snapshot_id: OffsetAndEpoch, data: bytes) -> None:
        self.snapshots[snapshot_id] = data

    def latest_snapshot_id(self) -> OffsetAndEpoch | None:
        return max(self.snapshots, default=None)

    def snapshot_ids(self) -> list[OffsetAndEpoch]:
        return sorted(self.snapshots)

    def earliest_snapshot_id(self) -> OffsetAndEpoch | None:
        return min(self.snapshots, default=None)

    def read_snapshot(self, snapshot_id: OffsetAndEpoch) -> RawSnapshotReader | None:
        data = self.snapshots.get(snapshot_id)
        return None if data is None else RawSnapshotReader(snapshot_id, data)

    def delete_before_snapshot(self, snapshot_id: OffsetAndEpoch) -> bool:
        if snapshot_id not in self.snapshots:
            raise IllegalStateError(f"no snapshot {snapshot_id} to delete before")
        if snapshot_id.offset > self._high_watermark or snapshot_id.offset > self.end_offset():
            raise IllegalStateError(
                f"log start {snapshot_id.offset} past the high watermark {self._high_watermark}"
            )
        old = [s for s in self.snapshots if s.offset < snapshot_id.offset]
        if snapshot_id.offset <= self._start and not old:
            return False
        for s in old:
            self._delete_snapshot(s)
        if snapshot_id.offset > self._start:
            del self.entries[: snapshot_id.offset - self._start]
            self._start, self._start_epoch = snapshot_id
            self._entries_deleted()
        return True

    def _delete_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        del self.snapshots[snapshot_id]

    def _entries_deleted(self) -> None:
        """The log start moved or the log was emptied (a file log rewrites its file)."""

    def install_snapshot(self, snapshot: RawSnapshotReader) -> None:
        snapshot_id = snapshot.snapshot_id
        if snapshot_id.offset < self._high_watermark:
            raise IllegalStateError(
                f"snapshot {snapshot_id} from the leader is behind the high watermark "
                f"{self._high_watermark}"
            )
        snapshot.records()  # KafkaStorageError if damaged: never installed half
        self._store_snapshot(snapshot_id, snapshot.data)
        # The whole log goes (Kafka's truncateToLatestSnapshot): it starts at the snapshot, and
        # everything the snapshot holds is committed.
        self.entries.clear()
        self._start, self._start_epoch = snapshot_id
        for s in [s for s in self.snapshots if s.offset < snapshot_id.offset]:
            self._delete_snapshot(s)
        self._entries_deleted()
        self._high_watermark = snapshot_id.offset
        self.snapshots_installed += 1
