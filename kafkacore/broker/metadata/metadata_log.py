"""``MetadataLog``: metadata changes appended as records, with a snapshot now and then.

Kafka's controller does not rewrite its state on each change: it appends records
(``TopicRecord``, ``PartitionRecord``, ``ConfigRecord``, ...) to the ``__cluster_metadata``
log, and every so often writes a snapshot of the whole state at an offset, after which the
records before it are no longer needed (``KafkaMetadataLog``, ``SnapshotGenerator``).  We keep
the same two pieces in two small files of a log dir:

- ``<name>.log``: one line per batch, ``<crc32 in hex> <json>``, the json being
  ``{"base_offset": n, "records": [...]}``.  A batch is the records of one change (all the
  topics of one CreateTopics request), written with one ``write`` and one ``fsync``: a crash
  leaves it whole or not at all, as a torn last line fails its CRC and is cut off on reading
  (:mod:`kafkacore.raft.line_file`, the reader the quorum's ``KafkaMetadataLog`` uses too).
- ``<name>.json``: the snapshot, the whole state and its ``end_offset`` (the offset of the first
  record it does not hold), replaced atomically.  It is taken when the log has grown by
  ``metadata.log.max.record.bytes.between.snapshots`` or is older than
  ``metadata.log.max.snapshot.interval.ms``, never per change; the log then starts empty.

A change therefore costs what its own records cost, however many topics the state holds.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafkacore.broker.server_common.files import replace_atomically
from kafkacore.errors import KafkaStorageError
from kafkacore.raft.line_file import encode_line, open_line_file

#: Kafka's ``metadata.log.max.record.bytes.between.snapshots`` (its default, 20 MiB)
MAX_RECORD_BYTES_BETWEEN_SNAPSHOTS = 20 * 1024 * 1024
#: Kafka's ``metadata.log.max.snapshot.interval.ms`` (its default, one hour)
MAX_SNAPSHOT_INTERVAL_MS = 3_600_000

#: Kafka's ``Uuid.METADATA_TOPIC_ID``: the topic id of ``__cluster_metadata``, the log brokers
#: fetch the controller's records from
METADATA_TOPIC_ID = uuid.UUID(int=1)

Record = dict[str, Any]


class MetadataLog:
    """The records of ``<directory>/<name>.log`` after the snapshot ``<directory>/<name>.json``.

    Not thread-safe: its owner (the metadata cache, the controller) calls it under its own lock.
    """

    def __init__(self, directory: str | Path, name: str, *,
                 max_bytes_between_snapshots: int = MAX_RECORD_BYTES_BETWEEN_SNAPSHOTS,
                 max_snapshot_interval_ms: int = MAX_SNAPSHOT_INTERVAL_MS) -> None:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.snapshot_path = directory / f"{name}.json"
        self.log_path = directory / f"{name}.log"
        self.max_bytes_between_snapshots = max_bytes_between_snapshots
        self.max_snapshot_interval_ms = max_snapshot_interval_ms
        #: the offset the next record gets
        self.end_offset = 0
        self._fd = -1
        self._log_bytes = 0
        self._last_snapshot = time.monotonic()

    def load(self) -> tuple[dict[str, Any] | None, list[Record]]:
        """The snapshot (None if there is none) and the records after it, in order.  A torn
        last batch (a crash during its write: it was never acknowledged) is cut off."""
        try:
            snapshot = json.loads(self.snapshot_path.read_text())
        except FileNotFoundError:
            snapshot = None
        except ValueError as exc:
            raise KafkaStorageError(f"{self.snapshot_path} is damaged: {exc}") from None
        self.end_offset = snapshot.get("end_offset", 0) if snapshot else 0
        opened = open_line_file(self.log_path, _decode, what="batch")
        records: list[Record] = []
        for batch in opened.items:
            base = batch["base_offset"]
            if base + len(batch["records"]) <= self.end_offset:
                continue  # already in the snapshot (a crash between the snapshot and the reset)
            records.extend(batch["records"][max(self.end_offset - base, 0):])
            self.end_offset = base + len(batch["records"])
        self._fd = opened.fd
        self._log_bytes = opened.size
        return snapshot, records

    def append(self, records: list[Record]) -> None:
        """Append ``records`` as one batch and fsync it: durable when this returns."""
        if not records:
            return
        if self._fd < 0:
            raise KafkaStorageError(f"{self.log_path}: append before load")
        line = encode_line(json.dumps({"base_offset": self.end_offset, "records": records},
                                      separators=(",", ":")).encode())
        try:
            os.write(self._fd, line)
            os.fsync(self._fd)
        except OSError as exc:
            raise KafkaStorageError(f"cannot append to {self.log_path}: {exc}") from exc
        self.end_offset += len(records)
        self._log_bytes += len(line)

    def maybe_snapshot(self, state: Callable[[], dict[str, Any]]) -> bool:
        """Write ``state()`` as the snapshot if the log is large or old enough (Kafka's
        ``SnapshotGenerator``), then start the log again empty."""
        age_ms = (time.monotonic() - self._last_snapshot) * 1000
        if self._log_bytes < self.max_bytes_between_snapshots and not (
                self._log_bytes and age_ms >= self.max_snapshot_interval_ms):
            return False
        self.snapshot(state())
        return True

    def snapshot(self, data: dict[str, Any]) -> None:
        """Replace the snapshot by ``data`` (the state after every record appended so far),
        then empty the log.  A crash between the two leaves records the snapshot already holds:
        :meth:`load` skips them by offset."""
        replace_atomically(self.snapshot_path, json.dumps(
            {**data, "end_offset": self.end_offset}).encode())
        os.ftruncate(self._fd, 0)
        os.fsync(self._fd)
        self._log_bytes = 0
        self._last_snapshot = time.monotonic()

    def close(self) -> None:
        fd, self._fd = self._fd, -1  # taken first: a number closed twice may be another file's
        if fd >= 0:
            os.close(fd)


def _decode(body: bytes, index: int) -> dict[str, Any] | None:
    """A batch from a line's body, or None if it is not one (damaged)."""
    try:
        batch = json.loads(body)
    except ValueError:
        return None
    return batch if isinstance(batch, dict) and "records" in batch else None
