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

Snapshots (KIP-630) are files beside it, one per snapshot, named as Kafka names them,
``<end offset, 20 digits>-<epoch, 10 digits>.checkpoint``: written to a ``.part`` file, fsynced
and renamed, so a ``.checkpoint`` file is always whole (a ``.part`` left by a crash is removed at
the next start).  When the entries before a snapshot are deleted, the log file is rewritten with
the entries kept (the same way: written aside, fsynced, renamed): its first line's offset is
the log start offset, and the snapshot at that offset gives the epoch before it.  A crash
between storing a fetched snapshot and emptying the log leaves a snapshot past the log's end:
the next start empties the log up to it, as the follower was doing.

The entries are also kept in memory (``MemoryRaftLog``'s list): the log is small, and the
protocol reads it on every Fetch.  The high watermark is not persisted, as in Kafka: a
restarted voter learns it again from the leader, and until then treats as committed only what
its snapshots hold (up to the latest snapshot's end offset).
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Sequence
from pathlib import Path

from kafkacore.errors import KafkaStorageError
from kafkacore.raft.line_file import encode_line, fsync_directory, open_line_file
from kafkacore.raft.raft_log import LeaderChangeMessage, LogEntry, MemoryRaftLog
from kafkacore.raft.raw_snapshot_reader import OffsetAndEpoch, decode_snapshot

#: the quorum's one partition, whose directory holds the log
METADATA_PARTITION_DIR = "__cluster_metadata-0"
LOG_FILE_NAME = "raft.log"
SNAPSHOT_SUFFIX = ".checkpoint"


def snapshot_file_name(snapshot_id: OffsetAndEpoch) -> str:
    """Kafka's name of a snapshot's file."""
    return f"{snapshot_id.offset:020d}-{snapshot_id.epoch:010d}{SNAPSHOT_SUFFIX}"


def _write_aside(path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data``: written to ``<path>.part``, fsynced, renamed, and the
    rename fsynced (the package imports nothing of the broker's file helpers)."""
    part = path.with_name(path.name + ".part")
    try:
        with open(part, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(part, path)
        fsync_directory(path.parent)
    except OSError as exc:
        raise KafkaStorageError(f"cannot write {path}: {exc}") from exc


def _encode(entry: LogEntry) -> bytes:
    change = entry.leader_change
    return encode_line(json.dumps({
        "offset": entry.offset, "epoch": entry.epoch,
        "value": base64.b64encode(entry.value).decode(),
        "leader_change": None if change is None else {
            "leader_id": change.leader_id, "voters": list(change.voters),
            "granting_voters": list(change.granting_voters), "version": change.version},
    }, separators=(",", ":")).encode())


def _decode_entry(body: bytes) -> LogEntry | None:
    """The entry of a line's body, else None (damaged)."""
    try:
        d = json.loads(body)
        change = d["leader_change"]
        return LogEntry(d["offset"], d["epoch"], base64.b64decode(d["value"]),
                        None if change is None else LeaderChangeMessage(
                            change["leader_id"], tuple(change["voters"]),
                            tuple(change["granting_voters"]), change["version"]))
    except (ValueError, KeyError, TypeError):
        return None


class _Decoder:
    """Decodes the lines of the log file: the first entry's offset is the log start, each
    next one must follow it (else the line is damaged)."""

    def __init__(self) -> None:
        self.base: int | None = None

    def __call__(self, body: bytes, index: int) -> LogEntry | None:
        entry = _decode_entry(body)
        if entry is None:
            return None
        if self.base is None:
            self.base = entry.offset
        return entry if entry.offset == self.base + index else None


class KafkaMetadataLog(MemoryRaftLog):
    """A ``RaftLog`` whose entries are fsynced to ``<directory>/__cluster_metadata-0/raft.log``
    before an append returns (Kafka's ``KafkaMetadataLog``).  Driven by one thread (the
    ``KafkaRaftManager``'s), as the protocol is."""

    def __init__(self, directory: str | Path) -> None:
        super().__init__()
        self.directory = Path(directory) / METADATA_PARTITION_DIR
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / LOG_FILE_NAME
        self._load_snapshots()
        opened = open_line_file(self.path, _Decoder())
        self.entries.extend(opened.items)
        #: the byte position where each entry's line starts (truncation cuts the file there)
        self._positions = opened.positions
        self._fd = opened.fd
        self._size = opened.size
        self._find_start()

    def _load_snapshots(self) -> None:
        for part in self.directory.glob("*.part"):
            part.unlink()  # a write a crash interrupted: never renamed, never used
        for path in sorted(self.directory.glob("*" + SNAPSHOT_SUFFIX)):
            offset, _, epoch = path.name[: -len(SNAPSHOT_SUFFIX)].partition("-")
            if not (offset.isdigit() and epoch.isdigit()):
                raise KafkaStorageError(f"{path}: not a snapshot's name")
            data = path.read_bytes()
            decode_snapshot(data)  # KafkaStorageError if damaged
            self.snapshots[OffsetAndEpoch(int(offset), int(epoch))] = data

    def _find_start(self) -> None:
        """The log start offset and the epoch before it, from the first entry and the
        snapshots; everything the snapshots hold is committed."""
        latest = self.latest_snapshot_id()
        if self.entries:
            self._start = self.entries[0].offset
        if latest is not None and latest.offset > self.end_offset():
            # A snapshot fetched from the leader, stored before a crash emptied the log.
            self.entries.clear()
            self._start, self._start_epoch = latest
            self._entries_deleted()
        elif self.entries and self.entries[0].offset > 0:
            first = self.entries[0].offset
            at = [s for s in self.snapshots if s.offset == first]
            if not at:
                raise KafkaStorageError(f"{self.path} starts at offset {first}, where no "
                                        "snapshot ends")
            self._start, self._start_epoch = at[0]
        elif not self.entries and latest is not None:
            self._start, self._start_epoch = latest
        for s in [s for s in self.snapshots if s.offset < self._start]:
            self._delete_snapshot(s)
        # A snapshot is only ever taken of committed entries.
        latest = self.latest_snapshot_id()
        self._high_watermark = max(self._start, latest.offset if latest is not None else 0)

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
        index = offset - self._start
        if index < len(self._positions):
            self._size = self._positions[index]
            del self._positions[index:]
            try:
                os.ftruncate(self._fd, self._size)
                os.fsync(self._fd)
            except OSError as exc:
                raise KafkaStorageError(f"cannot truncate {self.path}: {exc}") from exc

    # -- snapshots ---------------------------------------------------------------------------

    def _store_snapshot(self, snapshot_id: OffsetAndEpoch, data: bytes) -> None:
        _write_aside(self.directory / snapshot_file_name(snapshot_id), data)
        super()._store_snapshot(snapshot_id, data)

    def _delete_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        super()._delete_snapshot(snapshot_id)
        try:
            (self.directory / snapshot_file_name(snapshot_id)).unlink(missing_ok=True)
        except OSError as exc:
            raise KafkaStorageError(f"cannot delete snapshot {snapshot_id}: {exc}") from exc

    def _entries_deleted(self) -> None:
        """Rewrite the file with the entries kept (its first line is the new log start)."""
        lines = [_encode(e) for e in self.entries]
        _write_aside(self.path, b"".join(lines))
        if getattr(self, "_fd", -1) >= 0:
            os.close(self._fd)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        self._positions = []
        self._size = 0
        for line in lines:
            self._positions.append(self._size)
            self._size += len(line)

    def close(self) -> None:
        fd, self._fd = self._fd, -1  # taken first: a number closed twice may be another file's
        if fd >= 0:
            os.close(fd)
