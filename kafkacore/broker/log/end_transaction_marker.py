"""Control batches that end a transaction (Kafka's ``EndTransactionMarker`` and
``MemoryRecords.withEndTransactionMarker``).

A transaction ends in each of its partitions with a batch of one control record, written by the
partition's leader when the transaction coordinator asks (WriteTxnMarkers).  The batch carries the
producer's id and epoch and has the transactional and control attributes set; its record's key
says COMMIT or ABORT, its value the coordinator epoch::

    key:   version int16 (0) | type int16 (0 = ABORT, 1 = COMMIT)
    value: version int16 (0) | coordinator epoch int32

Consumers never return control records to the application; read_committed ones use them to end
the aborted transactions listed in the fetch answer.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from kafkacore.broker.log.log_validator import (
    CONTROL_FLAG,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    TRANSACTIONAL_FLAG,
    BatchHeader,
)
from kafkacore.broker.log.varint import read_varint, varint
from kafkacore.core.crc import crc32c

ABORT = 0
COMMIT = 1
_CONTROL_KEY = struct.Struct(">hh")
_MARKER_VALUE = struct.Struct(">hi")
# baseOffset, length, partitionLeaderEpoch, magic, crc, then what the CRC covers: 21 bytes,
# log_validator's ATTRIBUTES (its CRC check of every marker, on append, holds the two together)
_PREFIX = struct.Struct(">qiibI")
_REST = struct.Struct(">hiqqqhii")


def end_transaction_marker(producer_id: int, producer_epoch: int, commit: bool,
                           coordinator_epoch: int, timestamp_ms: int) -> bytes:
    """One control batch (offset 0; the leader gives it its offset) ending the transaction."""
    key = _CONTROL_KEY.pack(0, COMMIT if commit else ABORT)
    value = _MARKER_VALUE.pack(0, coordinator_epoch)
    body = (b"\x00" + varint(0) + varint(0)  # attributes, timestamp delta, offset delta
            + varint(len(key)) + key + varint(len(value)) + value + varint(0))
    record = varint(len(body)) + body
    attributes = TRANSACTIONAL_FLAG | CONTROL_FLAG
    covered = _REST.pack(attributes, 0, timestamp_ms, timestamp_ms, producer_id, producer_epoch,
                         -1, 1) + record
    length = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD + len(record)
    return _PREFIX.pack(0, length, -1, 2, crc32c(covered)) + covered


class EndTransactionMarker(NamedTuple):
    """What an end-transaction control record says."""

    kind: int  # COMMIT or ABORT
    coordinator_epoch: int


def read_marker(batch: bytes | bytearray | memoryview, h: BatchHeader
                ) -> EndTransactionMarker | None:
    """The COMMIT or ABORT marker of the control batch at ``h.position`` in ``batch``; None for
    another control type or a record we cannot read (Kafka ignores unknown types)."""
    if not h.is_control or h.record_count < 1:
        return None
    data = bytes(batch[h.position + RECORD_BATCH_OVERHEAD: h.position + h.size])
    try:
        pos = read_varint(data, 0)[1] + 1  # record length, attributes
        pos = read_varint(data, pos)[1]  # timestamp delta
        pos = read_varint(data, pos)[1]  # offset delta
        key_len, pos = read_varint(data, pos)
        if key_len < _CONTROL_KEY.size or pos + key_len > len(data):
            return None
        _version, kind = _CONTROL_KEY.unpack_from(data, pos)
        value_len, pos = read_varint(data, pos + key_len)
        coordinator_epoch = -1
        if value_len >= _MARKER_VALUE.size and pos + value_len <= len(data):
            coordinator_epoch = _MARKER_VALUE.unpack_from(data, pos)[1]
    except (ValueError, struct.error):
        return None
    return EndTransactionMarker(kind, coordinator_epoch) if kind in (ABORT, COMMIT) else None


def control_type(batch: bytes | bytearray | memoryview, h: BatchHeader) -> int | None:
    """COMMIT or ABORT for an end-transaction control batch, None otherwise."""
    marker = read_marker(batch, h)
    return None if marker is None else marker.kind

