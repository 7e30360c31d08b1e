"""``LeaderEpochFileCache``: where each leader epoch began in one replica's log (KIP-101).

Every batch carries the leader epoch it was written in (the batch header's
``partition_leader_epoch``).  The cache keeps, per epoch, the first offset written in it, and is
checkpointed to ``leader-epoch-checkpoint`` in the partition's directory in Kafka's text format
(a version line, a count line, then ``epoch start_offset`` lines).  It answers
OffsetForLeaderEpoch: "where does epoch E end in your log?", which tells a follower (or a
restarted old leader) where its log diverges from the leader's.  See docs/broker/replication.rst.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import NamedTuple

from kafkacore.broker.server_common.files import replace_atomically

CHECKPOINT_FILE = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class LeaderEpochFileCache:
    def __init__(self, directory: str | Path) -> None:
        self.path = Path(directory) / CHECKPOINT_FILE
        # Lock order: leaf (after Partition.lock and Log._lock). Guards _entries and the file.
        self._lock = threading.Lock()
        self._entries: list[EpochEntry] = []
        try:
            lines = self.path.read_text().split("\n")
            count = int(lines[1])
            for line in lines[2:2 + count]:
                epoch, offset = line.split()
                self._entries.append(EpochEntry(int(epoch), int(offset)))
        except (FileNotFoundError, IndexError, ValueError):
            self._entries = []

    def entries(self) -> list[EpochEntry]:
        with self._lock:
            return list(self._entries)

    @property
    def latest_epoch(self) -> int:
        with self._lock:
            return self._entries[-1].epoch if self._entries else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int) -> None:
        """Epoch ``epoch`` begins at ``start_offset`` (ignored unless it is a newer epoch)."""
        if epoch < 0:
            return
        with self._lock:
            if self._entries and epoch <= self._entries[-1].epoch:
                return
            # A newer epoch starting at or before older entries' starts replaces them.
            while self._entries and self._entries[-1].start_offset >= start_offset:
                self._entries.pop()
            self._entries.append(EpochEntry(epoch, start_offset))
            self._flush()

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(the largest epoch <= ``requested_epoch``, the offset where it ends): the start of the
        next epoch, or the log end for the latest one (Kafka's ``endOffsetFor``)."""
        with self._lock:
            if not self._entries or requested_epoch == UNDEFINED_EPOCH:
                return UNDEFINED_EPOCH, UNDEFINED_OFFSET
            if requested_epoch >= self._entries[-1].epoch:
                return self._entries[-1].epoch, log_end_offset
            found = None
            for entry in self._entries:
                if entry.epoch > requested_epoch:
                    if found is None:  # older than anything we know: we start at this entry
                        return requested_epoch, entry.start_offset
                    return found.epoch, entry.start_offset
                found = entry
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET

    def truncate_from_end(self, end_offset: int) -> None:
        """The log was cut at ``end_offset``: forget the epochs that began at or after it."""
        with self._lock:
            before = len(self._entries)
            self._entries = [e for e in self._entries if e.start_offset < end_offset]
            if len(self._entries) != before:
                self._flush()

    def _flush(self) -> None:
        text = f"0\n{len(self._entries)}\n" + "".join(
            f"{e.epoch} {e.start_offset}\n" for e in self._entries)
        replace_atomically(self.path, text.encode())
