"""``RawSnapshotReader``: a frozen snapshot of the quorum's state machine, as bytes (KIP-630).

A snapshot is what the state machine (the ``QuorumController``) wrote at a committed offset: the
records that rebuild its image, and nothing of the log's own (no ``LeaderChange``).  Its id is an
``OffsetAndEpoch``: the *end offset*, the first offset it does not hold, and the epoch of the
entry before it, so that a log that starts at a snapshot still knows the epoch its entries follow
(Kafka's ``snapshotId``).

The bytes are the records as lines of :mod:`kafkacore.raft.line_file` (``<crc32> <record>``, a
record must hold no newline: the controllers write JSON), so a snapshot fetched in chunks
(FetchSnapshot) is checked whole before it is installed: :func:`decode_snapshot` refuses a damaged
one with ``KafkaStorageError``.  The Raft core never looks inside a snapshot; it stores it,
serves it by ``slice(position, max_bytes)``, and hands it back to the state machine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from kafkacore.errors import KafkaStorageError
from kafkacore.raft.line_file import checked_body, encode_line


class OffsetAndEpoch(NamedTuple):
    """An offset and an epoch (Kafka's ``OffsetAndEpoch``); a snapshot's id."""

    offset: int
    epoch: int


def encode_snapshot(records: Sequence[bytes]) -> bytes:
    """The bytes of a snapshot holding ``records`` (ValueError for a record with a newline)."""
    if any(b"\n" in r for r in records):
        raise ValueError("a snapshot record must not contain a newline")
    return b"".join(encode_line(r) for r in records)


def decode_snapshot(data: bytes) -> list[bytes]:
    """The records of a snapshot's bytes; ``KafkaStorageError`` if one line is damaged."""
    records = []
    position = 0
    for line in data.splitlines(keepends=True):
        body = checked_body(line)
        if body is None:
            raise KafkaStorageError(f"snapshot damaged at byte {position}")
        records.append(body)
        position += len(line)
    return records


class RawSnapshotReader:
    """One frozen snapshot: its id and bytes (Kafka's ``RawSnapshotReader``)."""

    __slots__ = ("snapshot_id", "data")

    def __init__(self, snapshot_id: OffsetAndEpoch, data: bytes) -> None:
        self.snapshot_id = snapshot_id
        self.data = data

    def size_in_bytes(self) -> int:
        return len(self.data)

    def slice(self, position: int, max_bytes: int) -> bytes:
        """Up to ``max_bytes`` bytes from ``position`` (a FetchSnapshot's chunk)."""
        if not 0 <= position <= len(self.data):
            raise ValueError(f"position {position} outside the snapshot's {len(self.data)} bytes")
        return self.data[position:position + max(0, max_bytes)]

    def records(self) -> list[bytes]:
        """The state machine's records, checked."""
        return decode_snapshot(self.data)

    def __repr__(self) -> str:
        return f"RawSnapshotReader({self.snapshot_id}, {len(self.data)} bytes)"
