"""The embedded consumer protocol (Kafka's ``ConsumerProtocol``): what a classic consumer puts
in its JoinGroup metadata (``ConsumerProtocolSubscription``: its topics and, from v1, the
partitions it owns) and what it receives in SyncGroup (``ConsumerProtocolAssignment``: its
partitions).  The classic coordinator never reads them; a consumer group (KIP-848) does, to take
classic members in: it reads their subscriptions and writes their assignments.

Each is an ``int16`` version, then the fields in the non-flexible encoding.  A version newer
than we know is read as the newest we know: later versions only append fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafkacore.protocol import codec

#: The ``protocol_type`` of consumers' groups.
PROTOCOL_TYPE = "consumer"
HIGHEST_VERSION = 3

_TOPIC_PARTITIONS = [{"name": "Topic", "type": "string", "versions": "0+"},
                     {"name": "Partitions", "type": "[]int32", "versions": "0+"}]

_SUBSCRIPTION = codec.compile_message({
    "type": "data", "name": "ConsumerProtocolSubscription", "validVersions": "0-3",
    "flexibleVersions": "none", "fields": [
        {"name": "Topics", "type": "[]string", "versions": "0+"},
        {"name": "UserData", "type": "bytes", "versions": "0+", "nullableVersions": "0+",
         "default": None},
        {"name": "OwnedPartitions", "type": "[]TopicPartition", "versions": "1+",
         "fields": _TOPIC_PARTITIONS},
        {"name": "GenerationId", "type": "int32", "versions": "2+", "default": -1},
        {"name": "RackId", "type": "string", "versions": "3+", "nullableVersions": "3+",
         "default": None}]})

_ASSIGNMENT = codec.compile_message({
    "type": "data", "name": "ConsumerProtocolAssignment", "validVersions": "0-3",
    "flexibleVersions": "none", "fields": [
        {"name": "AssignedPartitions", "type": "[]TopicPartition", "versions": "0+",
         "fields": _TOPIC_PARTITIONS},
        {"name": "UserData", "type": "bytes", "versions": "0+", "nullableVersions": "0+",
         "default": None}]})

#: topic name -> partitions
TopicPartitions = dict[str, frozenset[int]]


class ConsumerProtocolError(ValueError):
    """Metadata that is not the consumer protocol (Kafka's ``SchemaException``)."""


@dataclass(frozen=True)
class Subscription:
    topics: tuple[str, ...]
    owned: TopicPartitions
    rack_id: str | None = None


def version_of(data: bytes) -> int:
    """The version a consumer wrote its metadata in (its assignment is written in the same)."""
    if len(data) < 2:
        raise ConsumerProtocolError("consumer protocol metadata shorter than its version")
    return min(int.from_bytes(data[:2], "big", signed=True), HIGHEST_VERSION)


def _decode(message: codec.Message, data: bytes) -> dict[str, Any]:
    version = version_of(data)
    if version < 0:
        raise ConsumerProtocolError(f"consumer protocol version {version}")
    try:
        return codec.decode(message, version, data[2:])[0]
    except Exception as exc:
        raise ConsumerProtocolError(f"malformed consumer protocol metadata: {exc}") from None


def deserialize_subscription(data: bytes) -> Subscription:
    body = _decode(_SUBSCRIPTION, data)
    return Subscription(tuple(body["topics"]),
                        {t["topic"]: frozenset(t["partitions"])
                         for t in body.get("owned_partitions") or () if t["partitions"]},
                        body.get("rack_id"))


def deserialize_assignment(data: bytes) -> TopicPartitions:
    if not data:  # a member the leader gave nothing
        return {}
    body = _decode(_ASSIGNMENT, data)
    return {t["topic"]: frozenset(t["partitions"])
            for t in body["assigned_partitions"] if t["partitions"]}


def serialize_assignment(partitions: TopicPartitions, version: int) -> bytes:
    version = max(0, min(version, HIGHEST_VERSION))
    return version.to_bytes(2, "big") + codec.encode_bytes(_ASSIGNMENT, version, {
        "assigned_partitions": [{"topic": t, "partitions": sorted(ps)}
                                for t, ps in sorted(partitions.items())],
        "user_data": None})
