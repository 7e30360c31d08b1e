"""``KafkaMetadataLog``: the quorum's log on disk, so that a restarted voter keeps what it had.

Kafka keeps ``__cluster_metadata-0`` as an ordinary partition log under ``metadata.log.dir``.
Ours is one small file, ``<directory>/__cluster_metadata-0/raft.log``, one line per entry:
``<crc32 in hex> <json>``, the json holding the entry's offset, epoch, value (base64) and, for a
leader's ``LeaderChange``, its fields.  An append writes its entries with one ``write`` and one
``fsync`` before it returns, so an entry a voter acknowledged (by fetching past it, or as the
leader counting itself) survives a crash; a torn last line (a crash during the write) fails its
CRC and is cut off at the next start (:mod:`kafkacore.raft.line_file`, the reader the lone
controller's ``MetadataLog`` uses too).  A truncation (a follower whose log diverged) cuts the
file at the first entry removed.

The entries are also kept in memory (``MemoryRaftLog``'s list): the log is small, and the
protocol reads it on every Fetch.  The high watermark is not persisted, as in Kafka: a
restarted voter learns it again from the leader, and until then treats nothing as committed.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Sequence
from pathlib import Path

from kafkacore.errors import KafkaStorageError
from kafkacore.raft.line_file import encode_line, open_line_file
from kafkacore.raft.raft_log import LeaderChangeMessage, LogEntry, MemoryRaftLog

#: the quorum's one partition, whose directory holds the log
METADATA_PARTITION_DIR = "__cluster_metadata-0"
LOG_FILE_NAME = "raft.log"


def _encode(entry: LogEntry) -> bytes:
    change = entry.leader_change
    return encode_line(json.dumps({
        "offset": entry.offset, "epoch": entry.epoch,
        "value": base64.b64encode(entry.value).decode(),
        "leader_change": None if change is None else {
            "leader_id": change.leader_id, "voters": list(change.voters),
            "granting_voters": list(change.granting_voters), "version": change.version},
    }, separators=(",", ":")).encode())


def _decode(body: bytes, index: int) -> LogEntry | None:
    """The entry of a line's body if it is the ``index``-th entry, else None (damaged)."""
    try:
        d = json.loads(body)
        change = d["leader_change"]
        entry = LogEntry(d["offset"], d["epoch"], base64.b64decode(d["value"]),
                         None if change is None else LeaderChangeMessage(
                             change["leader_id"], tuple(change["voters"]),
                             tuple(change["granting_voters"]), change["version"]))
    except (ValueError, KeyError, TypeError):
        return None
    return entry if entry.offset == index else None


class KafkaMetadataLog(MemoryRaftLog):
    """A ``RaftLog`` whose entries are fsynced to ``<directory>/__cluster_metadata-0/raft.log``
    before an append returns (Kafka's ``KafkaMetadataLog``).  Driven by one thread (the
    ``KafkaRaftManager``'s), as the protocol is."""

    def __init__(self, directory: str | Path) -> None:
        super().__init__()
        self.directory = Path(directory) / METADATA_PARTITION_DIR
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / LOG_FILE_NAME
        opened = open_line_file(self.path, _decode)
        self.entries.extend(opened.items)
        #: the byte position where each entry's line starts (truncation cuts the file there)
        self._positions = opened.positions
        self._fd = opened.fd
        self._size = opened.size

    def _write(self, first: int) -> None:
        """Write the entries from index ``first`` on, fsynced."""
        lines = [_encode(e) for e in self.entries[first:]]
        for line in lines:
            self._positions.append(self._size)
            self._size += len(line)
        try:
            os.write(self._fd, b"".join(lines))
            os.fsync(self._fd)
        except OSError as exc:
            raise KafkaStorageError(f"cannot append to {self.path}: {exc}") from exc

    def append_as_leader(self, values: Sequence[bytes | LeaderChangeMessage], epoch: int) -> int:
        first = len(self.entries)
        last = super().append_as_leader(values, epoch)
        self._write(first)
        return last

    def append_as_follower(self, entries: Sequence[LogEntry]) -> None:
        first = len(self.entries)
        super().append_as_follower(entries)
        self._write(first)

    def truncate_to(self, offset: int) -> None:
        super().truncate_to(offset)
        if offset < len(self._positions):
            self._size = self._positions[offset]
            del self._positions[offset:]
            try:
                os.ftruncate(self._fd, self._size)
                os.fsync(self._fd)
            except OSError as exc:
                raise KafkaStorageError(f"cannot truncate {self.path}: {exc}") from exc

    def close(self) -> None:
        fd, self._fd = self._fd, -1  # taken first: a number closed twice may be another file's
        if fd >= 0:
            os.close(fd)
