"""The records of ``__transaction_state`` (Kafka's ``TransactionLog``, ``TransactionLogKey`` and
``TransactionLogValue``).

The key is ``version int16 (0) | transactional id string``.  The value is a version (int16) and
then :data:`TRANSACTION_LOG_VALUE` of that version, encoded by the protocol codec: version 0 (the
fixed layout every Kafka reads) for a transaction version 1 state, version 1 (flexible, with the
tagged fields of transaction version 2: the previous and next producer ids and the client's
transaction version) once a client uses transaction version 2 (KIP-890 part 2).

A record with a null value (a tombstone) removes the transactional id (its expiration).
"""

from __future__ import annotations

import struct

from kafkacore.broker.transaction.transaction_metadata import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TransactionState,
    TxnTransitMetadata,
)
from kafkacore.protocol import codec

KEY_VERSION = 0
_I16 = struct.Struct(">h")

TRANSACTION_LOG_VALUE = codec.compile_message({
    "type": "data",
    "name": "TransactionLogValue",
    "validVersions": "0-1",
    "flexibleVersions": "1+",
    "fields": [
        {"name": "ProducerId", "type": "int64", "versions": "0+"},
        {"name": "PreviousProducerId", "type": "int64", "versions": "1+",
         "taggedVersions": "1+", "tag": 0, "default": NO_PRODUCER_ID},
        {"name": "NextProducerId", "type": "int64", "versions": "1+",
         "taggedVersions": "1+", "tag": 1, "default": NO_PRODUCER_ID},
        {"name": "ProducerEpoch", "type": "int16", "versions": "0+"},
        {"name": "TransactionTimeoutMs", "type": "int32", "versions": "0+"},
        {"name": "TransactionStatus", "type": "int8", "versions": "0+"},
        {"name": "TransactionPartitions", "type": "[]PartitionsSchema", "versions": "0+",
         "nullableVersions": "0+", "fields": [
             {"name": "Topic", "type": "string", "versions": "0+"},
             {"name": "PartitionIds", "type": "[]int32", "versions": "0+"}]},
        {"name": "TransactionLastUpdateTimestampMs", "type": "int64", "versions": "0+"},
        {"name": "TransactionStartTimestampMs", "type": "int64", "versions": "0+"},
        {"name": "ClientTransactionVersion", "type": "int16", "versions": "1+",
         "taggedVersions": "1+", "tag": 2, "default": 0},
    ],
})


def _string(s: str) -> bytes:
    data = s.encode()
    return _I16.pack(len(data)) + data


def key_bytes(transactional_id: str) -> bytes:
    return _I16.pack(KEY_VERSION) + _string(transactional_id)


def value_bytes(t: TxnTransitMetadata) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(t.topic_partitions):
        by_topic.setdefault(topic, []).append(partition)
    version = 1 if t.client_transaction_version >= 2 else 0
    body = {
        "producer_id": t.producer_id,
        "producer_epoch": t.producer_epoch,
        "transaction_timeout_ms": t.txn_timeout_ms,
        "transaction_status": int(t.state),
        "transaction_partitions": [{"topic": topic, "partition_ids": ids}
                                   for topic, ids in by_topic.items()],
        "transaction_last_update_timestamp_ms": t.txn_last_update_timestamp,
        "transaction_start_timestamp_ms": t.txn_start_timestamp,
    }
    if version == 1:
        body.update(previous_producer_id=t.last_producer_id,
                    next_producer_id=t.next_producer_id,
                    client_transaction_version=t.client_transaction_version)
    return _I16.pack(version) + codec.encode_bytes(TRANSACTION_LOG_VALUE, version, body)


def read_key(key: bytes) -> str | None:
    """The transactional id of a key; None for a key version we do not know."""
    if len(key) < 4:
        raise ValueError("record shorter than its fields")
    (version,) = _I16.unpack_from(key, 0)
    if version != KEY_VERSION:
        return None
    (n,) = _I16.unpack_from(key, 2)
    if n < 0 or 4 + n > len(key):
        raise ValueError("bad string length")
    return key[4:4 + n].decode()


def read_value(value: bytes) -> TxnTransitMetadata:
    if len(value) < 2:
        raise ValueError("record shorter than its fields")
    (version,) = _I16.unpack_from(value, 0)
    if version not in TRANSACTION_LOG_VALUE.valid:
        raise ValueError(f"transaction log value version {version} is not read here")
    try:
        v, _end = codec.decode(TRANSACTION_LOG_VALUE, version, value, 2)
    except codec.ProtocolError as exc:
        raise ValueError(str(exc)) from exc
    partitions = {(p["topic"], i) for p in v["transaction_partitions"] or ()
                  for i in p["partition_ids"]}
    return TxnTransitMetadata(
        v["producer_id"], v.get("previous_producer_id", NO_PRODUCER_ID), v["producer_epoch"],
        NO_PRODUCER_EPOCH, v["transaction_timeout_ms"],
        TransactionState(v["transaction_status"]), frozenset(partitions),
        v["transaction_start_timestamp_ms"], v["transaction_last_update_timestamp_ms"],
        next_producer_id=v.get("next_producer_id", NO_PRODUCER_ID),
        client_transaction_version=v.get("client_transaction_version", 0))
