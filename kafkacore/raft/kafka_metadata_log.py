"""``KafkaMetadataLog``: the quorum's log on disk, so that a restarted voter keeps what it had.

Kafka keeps ``__cluster_metadata-0`` as an ordinary partition log under ``metadata.log.dir``.
Ours is one small file, ``<directory>/__cluster_metadata-0/raft.log``, one line per entry:
``<crc32 in hex> <json>``, the json holding the entry's offset, epoch, value (base64) and, for a
leader's ``LeaderChange``, its fields.  An append writes its entries with one ``write`` and one
``fsync`` before it returns, so an entry a voter acknowledged (by fetching past it, or as the
leader counting itself) survives a crash; a torn last line (a crash during the write) fails its
CRC and is cut off at the next start.  A truncation (a follower whose log diverged) cuts the
file at the first entry removed.

The entries are also kept in memory (``MemoryRaftLog``'s list): the log is small, and the
protocol reads it on every Fetch.  The high watermark is not persisted, as in Kafka: a
restarted voter learns it again from the leader, and until then treats nothing as committed.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import zlib
from collections.abc import Sequence
from pathlib import Path

from kafkacore.errors import KafkaStorageError
from kafkacore.raft.raft_log import LeaderChangeMessage, LogEntry, MemoryRaftLog

log = logging.getLogger(__name__)

#: the quorum's one partition, whose directory holds the log
METADATA_PARTITION_DIR = "__cluster_metadata-0"
LOG_FILE_NAME = "raft.log"


def _encode(entry: LogEntry) -> bytes:
    change = entry.leader_change
    body = json.dumps({
        "offset": entry.offset, "epoch": entry.epoch,
        "value": base64.b64encode(entry.value).decode(),
        "leader_change": None if change is None else {
            "leader_id": change.leader_id, "voters": list(change.voters),
            "granting_voters": list(change.granting_voters), "version": change.version},
    }, separators=(",", ":")).encode()
    return b"%08x %s\n" % (zlib.crc32(body), body)


def _decode(line: bytes) -> LogEntry | None:
    """The entry of one line, or None if the line is torn or damaged."""
    crc, _, body = line.rstrip(b"\n").partition(b" ")
    if not line.endswith(b"\n") or len(crc) != 8:
        return None
    try:
        if int(crc, 16) != zlib.crc32(body):
            return None
        d = json.loads(body)
        change = d["leader_change"]
        return LogEntry(d["offset"], d["epoch"], base64.b64decode(d["value"]),
                        None if change is None else LeaderChangeMessage(
                            change["leader_id"], tuple(change["voters"]),
                            tuple(change["granting_voters"]), change["version"]))
    except (ValueError, KeyError, TypeError):
        return None


class KafkaMetadataLog(MemoryRaftLog):
    """A ``RaftLog`` whose entries are fsynced to ``<directory>/__cluster_metadata-0/raft.log``
    before an append returns (Kafka's ``KafkaMetadataLog``).  Driven by one thread (the
    ``KafkaRaftManager``'s), as the protocol is."""

    def __init__(self, directory: str | Path) -> None:
        super().__init__()
        self.directory = Path(directory) / METADATA_PARTITION_DIR
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / LOG_FILE_NAME
        #: the byte position where each entry's line starts (truncation cuts the file there)
        self._positions: list[int] = []
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            data = b""
        good = 0
        for line in data.splitlines(keepends=True):
            entry = _decode(line)
            if entry is None or entry.offset != len(self.entries):
                if good + len(line) < len(data):
                    raise KafkaStorageError(f"{self.path} is damaged at byte {good}")
                log.warning("%s: cutting off a torn last entry (%d bytes)", self.path, len(line))
                break
            self._positions.append(good)
            self.entries.append(entry)
            good += len(line)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._size = good
        if good < len(data):
            os.ftruncate(self._fd, good)
            os.fsync(self._fd)
        if not data:
            # A new file: its name must survive a crash too (a file's fsync covers its data,
            # not its directory entry), or a voter could restart with no log after acknowledging.
            self._fsync_directory()

    def _fsync_directory(self) -> None:
        fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

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
