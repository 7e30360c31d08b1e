"""The log the quorum replicates, as the protocol sees it (Kafka's ``ReplicatedLog``).

The protocol needs little of a log: append entries under an epoch, the end offset, the epoch of
the last entry, where an epoch's entries end (to find a follower's diverging point), truncation
to that point, and the high watermark.  ``RaftLog`` is that interface; ``MemoryRaftLog`` keeps
the entries in a list, for the model test (the ``__cluster_metadata`` log on disk will implement
the same interface over the broker's log later).

Offsets start at 0 (no snapshot yet: the log start offset is always 0).  Epochs start at 1; a log
with no entries reports epoch 0, as Kafka's does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from kafkacore.errors import IllegalStateError


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


class OffsetAndEpoch(NamedTuple):
    """An offset and an epoch, compared epoch first (Kafka's ``OffsetAndEpoch``)."""

    offset: int
    epoch: int


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


class MemoryRaftLog:
    """A ``RaftLog`` in a list (the model test's log; Kafka's tests have ``MockLog``)."""

    def __init__(self) -> None:
        self.entries: list[LogEntry] = []
        self._high_watermark = 0

    def end_offset(self) -> int:
        return len(self.entries)

    def last_fetched_epoch(self) -> int:
        return self.entries[-1].epoch if self.entries else 0

    def append_as_leader(self, values: Sequence[bytes | LeaderChangeMessage], epoch: int) -> int:
        if epoch < self.last_fetched_epoch():
            raise IllegalStateError(
                f"append under epoch {epoch} after an entry of epoch {self.last_fetched_epoch()}"
            )
        for value in values:
            offset = len(self.entries)
            if isinstance(value, LeaderChangeMessage):
                self.entries.append(LogEntry(offset, epoch, b"", value))
            else:
                self.entries.append(LogEntry(offset, epoch, value))
        return len(self.entries) - 1

    def append_as_follower(self, entries: Sequence[LogEntry]) -> None:
        for entry in entries:
            if entry.offset != len(self.entries):
                raise IllegalStateError(
                    f"follower append at offset {entry.offset}, the log ends at {len(self.entries)}"
                )
            if entry.epoch < self.last_fetched_epoch():
                raise IllegalStateError(
                    f"entry of epoch {entry.epoch} after one of epoch {self.last_fetched_epoch()}"
                )
            self.entries.append(entry)

    def truncate_to(self, offset: int) -> None:
        # Committed entries are never taken back: a truncation below the high watermark means
        # the protocol is broken, and must stop here rather than lose them.
        if offset < self._high_watermark:
            raise IllegalStateError(
                f"truncation to {offset}, below the high watermark {self._high_watermark}"
            )
        del self.entries[offset:]

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        # Walk back over the epochs after the one asked for; the entries of the largest epoch
        # <= it end where the next epoch starts (or at the log's end).
        end = len(self.entries)
        index = end - 1
        while index >= 0 and self.entries[index].epoch > epoch:
            end = index
            index -= 1
        if index < 0:
            return OffsetAndEpoch(0, 0)
        return OffsetAndEpoch(end, self.entries[index].epoch)

    def read(self, start_offset: int, max_entries: int) -> tuple[LogEntry, ...]:
        return tuple(self.entries[start_offset : start_offset + max_entries])

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    def update_high_watermark(self, offset: int) -> None:
        if offset > len(self.entries):
            raise IllegalStateError(
                f"high watermark {offset} past the end offset {len(self.entries)}"
            )
        self._high_watermark = max(self._high_watermark, offset)
