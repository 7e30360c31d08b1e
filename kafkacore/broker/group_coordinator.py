"""The group coordinator, offset storage only: what OffsetCommit writes and OffsetFetch reads.

Kafka's ``GroupCoordinator`` keeps committed offsets in the compacted ``__consumer_offsets``
topic and a cache in memory (``GroupMetadataManager``).  This one broker keeps the same cache and
makes it durable with a journal in the first log dir: one JSON line per commit, appended and
fsync'd before the commit is answered, replayed at start-up (a torn last line, from a crash in
the middle of a write, is ignored: that commit was never acknowledged).  Start-up then rewrites
the journal with only the latest offset per partition, which is what compaction does to
``__consumer_offsets``.

Membership (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) is not here yet: every group is, in
Kafka's words, a group that "is only using Kafka to store offsets".  Such a commit carries
generation -1; a commit with a generation >= 0 names a membership this coordinator never handed
out and gets ILLEGAL_GENERATION, as Kafka answers for a group it does not know.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from kafkacore.broker.files import replace_atomically

NONE = 0
OFFSET_METADATA_TOO_LARGE = 12
ILLEGAL_GENERATION = 22
INVALID_GROUP_ID = 24

#: Kafka's ``offset.metadata.max.bytes`` default.
OFFSET_METADATA_MAX_BYTES = 4096

JOURNAL = "__consumer_offsets.journal"


@dataclass(frozen=True)
class OffsetAndMetadata:
    """One committed position (Kafka's ``OffsetAndMetadata``)."""

    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""
    commit_timestamp_ms: int = -1


class GroupCoordinator:
    """Committed offsets by (group, topic, partition), durable in ``log_dir``."""

    def __init__(
        self, log_dir: str | Path, offset_metadata_max_bytes: int = OFFSET_METADATA_MAX_BYTES
    ) -> None:
        self.path = Path(log_dir) / JOURNAL
        self.offset_metadata_max_bytes = offset_metadata_max_bytes
        self._lock = threading.Lock()
        self._offsets: dict[str, dict[tuple[str, int], OffsetAndMetadata]] = {}
        self._journal: BinaryIO | None = None

    # -- life cycle --------------------------------------------------------------------------

    def startup(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._load()
        self._compact()
        self._journal = open(self.path, "ab")  # noqa: SIM115 - held until shutdown()

    def shutdown(self) -> None:
        with self._lock:
            if self._journal is not None:
                self._journal.close()
                self._journal = None

    def _load(self) -> None:
        if not self.path.exists():
            return
        with open(self.path, "rb") as f:
            for line in f:
                if not line.endswith(b"\n"):
                    break  # torn tail: never acknowledged
                try:
                    entry = json.loads(line)
                    group, topic, partition = entry["g"], entry["t"], int(entry["p"])
                    value = OffsetAndMetadata(
                        int(entry["o"]), int(entry["e"]), entry["m"], int(entry["ts"])
                    )
                except (ValueError, KeyError, TypeError):
                    break  # a damaged line ends what we can trust
                self._offsets.setdefault(group, {})[(topic, partition)] = value

    def _compact(self) -> None:
        replace_atomically(self.path, b"".join(
            self._line(group, topic, partition, value)
            for group, offsets in self._offsets.items()
            for (topic, partition), value in offsets.items()
        ))

    @staticmethod
    def _line(group: str, topic: str, partition: int, value: OffsetAndMetadata) -> bytes:
        entry = {
            "g": group,
            "t": topic,
            "p": partition,
            "o": value.offset,
            "e": value.leader_epoch,
            "m": value.metadata,
            "ts": value.commit_timestamp_ms,
        }
        return json.dumps(entry, separators=(",", ":")).encode() + b"\n"

    # -- OffsetCommit --------------------------------------------------------------------------

    def handle_commit_offsets(
        self,
        group_id: str,
        generation_id: int,
        offsets: dict[tuple[str, int], OffsetAndMetadata],
    ) -> dict[tuple[str, int], int]:
        """Store ``offsets`` for ``group_id``; the error code of each partition.

        Every accepted offset is on disk (fsync'd) when this returns.
        """
        if not group_id:
            return dict.fromkeys(offsets, INVALID_GROUP_ID)
        if generation_id >= 0:
            return dict.fromkeys(offsets, ILLEGAL_GENERATION)
        now_ms = int(time.time() * 1000)
        errors: dict[tuple[str, int], int] = {}
        lines = []
        accepted = {}
        for tp, value in offsets.items():
            metadata = value.metadata
            if metadata is not None and len(metadata.encode()) > self.offset_metadata_max_bytes:
                errors[tp] = OFFSET_METADATA_TOO_LARGE
                continue
            if value.commit_timestamp_ms < 0:
                value = OffsetAndMetadata(value.offset, value.leader_epoch, metadata, now_ms)
            accepted[tp] = value
            lines.append(self._line(group_id, tp[0], tp[1], value))
            errors[tp] = NONE
        with self._lock:
            if self._journal is None:
                raise RuntimeError("GroupCoordinator is not started")
            if lines:
                self._journal.write(b"".join(lines))
                self._journal.flush()
                os.fsync(self._journal.fileno())
            self._offsets.setdefault(group_id, {}).update(accepted)
        return errors

    # -- OffsetFetch ---------------------------------------------------------------------------

    def handle_fetch_offsets(
        self, group_id: str, partitions: list[tuple[str, int]] | None = None
    ) -> dict[tuple[str, int], OffsetAndMetadata | None]:
        """The committed offset of each partition (None: nothing committed).

        ``partitions=None`` asks for every partition the group has committed (OffsetFetch v2+
        with null topics).
        """
        with self._lock:
            stored = dict(self._offsets.get(group_id, {}))
        if partitions is None:
            return dict(stored)
        return {tp: stored.get(tp) for tp in partitions}
