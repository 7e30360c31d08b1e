"""The records of ``__transaction_state`` (Kafka's ``TransactionLog``, ``TransactionLogKey`` and
``TransactionLogValue`` version 0).

Key and value are big-endian; strings are an ``int16`` length and UTF-8::

    key:   version int16 (0) | transactional id string
    value: version int16 (0) | producer id int64 | producer epoch int16 | timeout ms int32
           | state int8 | partitions: count int32, each (topic string, count int32, int32...)
           | last update timestamp int64 | start timestamp int64

A record with a null value (a tombstone) removes the transactional id (its expiration).
"""

from __future__ import annotations

import struct
from typing import Any

from kafkacore.broker.transaction.transaction_metadata import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TransactionState,
    TxnTransitMetadata,
)

KEY_VERSION = 0
VALUE_VERSION = 0
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_HEAD = struct.Struct(">hqhib")
_TAIL = struct.Struct(">qq")


def _string(s: str) -> bytes:
    data = s.encode()
    return _I16.pack(len(data)) + data


def key_bytes(transactional_id: str) -> bytes:
    return _I16.pack(KEY_VERSION) + _string(transactional_id)


def value_bytes(t: TxnTransitMetadata) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(t.topic_partitions):
        by_topic.setdefault(topic, []).append(partition)
    parts = [_I32.pack(len(by_topic))]
    for topic, indexes in by_topic.items():
        parts.append(_string(topic) + _I32.pack(len(indexes))
                     + struct.pack(f">{len(indexes)}i", *indexes))
    return (_HEAD.pack(VALUE_VERSION, t.producer_id, t.producer_epoch, t.txn_timeout_ms,
                       int(t.state))
            + b"".join(parts) + _TAIL.pack(t.txn_last_update_timestamp, t.txn_start_timestamp))


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, s: struct.Struct) -> tuple[Any, ...]:
        if self.pos + s.size > len(self.data):
            raise ValueError("record shorter than its fields")
        out = s.unpack_from(self.data, self.pos)
        self.pos += s.size
        return out

    def string(self) -> str:
        (n,) = self.take(_I16)
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError("bad string length")
        out = self.data[self.pos:self.pos + n].decode()
        self.pos += n
        return out


def read_key(key: bytes) -> str | None:
    """The transactional id of a key; None for a key version we do not know."""
    r = _Reader(key)
    (version,) = r.take(_I16)
    return r.string() if version == KEY_VERSION else None


def read_value(value: bytes) -> TxnTransitMetadata:
    r = _Reader(value)
    version, producer_id, epoch, timeout_ms, state = r.take(_HEAD)
    if version != VALUE_VERSION:
        raise ValueError(f"transaction log value version {version} is not read here")
    (topics,) = r.take(_I32)
    partitions = set()
    for _ in range(max(topics, 0)):
        topic = r.string()
        (count,) = r.take(_I32)
        for _ in range(count):
            partitions.add((topic, r.take(_I32)[0]))
    last_update, start = r.take(_TAIL)
    return TxnTransitMetadata(producer_id, NO_PRODUCER_ID, epoch, NO_PRODUCER_EPOCH, timeout_ms,
                              TransactionState(state), frozenset(partitions), start, last_update)
