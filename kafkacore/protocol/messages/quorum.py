"""The controller quorum's messages (KRaft, KIP-595): DescribeQuorum (55), which any client may
send to a broker (forwarded to the controller) or a controller to learn the ``__cluster_metadata``
partition's leader, its epoch, its high watermark, and how far each voter and observer has
fetched.  v1 adds each replica's last fetch and caught-up times (KIP-836), v2 the error messages,
each replica's directory id and the voters' endpoints (KIP-853).  The votes and epochs of the
quorum itself (Vote, BeginQuorumEpoch, EndQuorumEpoch) come here when the quorum lands; see
docs/broker/controller.rst.
"""

from __future__ import annotations

from kafkacore.protocol.api_keys import ApiKey
from kafkacore.protocol.messages.message_spec import Declaration

__all__ = ["DESCRIBE_QUORUM_REQUEST", "DESCRIBE_QUORUM_RESPONSE"]

# -- DescribeQuorum (55) -----------------------------------------------------------------------

DESCRIBE_QUORUM_REQUEST: Declaration = {
    "apiKey": ApiKey.DESCRIBE_QUORUM,
    "type": "request",
    "name": "DescribeQuorumRequest",
    # v1 and v2 change only the response (KIP-836, KIP-853).
    "validVersions": "0-2",
    "flexibleVersions": "0+",
    "fields": [
        {
            "name": "Topics",
            "type": "[]TopicData",
            "versions": "0+",
            "fields": [
                {"name": "TopicName", "type": "string", "versions": "0+"},
                {
                    "name": "Partitions",
                    "type": "[]PartitionData",
                    "versions": "0+",
                    "fields": [
                        {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
                    ],
                },
            ],
        },
    ],
}


def _replica_state() -> list[dict[str, object]]:
    """Kafka's common struct ``ReplicaState``: a voter's or an observer's progress (each array
    of them gets its own copy of the fields)."""
    return [
        {"name": "ReplicaId", "type": "int32", "versions": "0+"},
        {"name": "ReplicaDirectoryId", "type": "uuid", "versions": "2+"},
        {"name": "LogEndOffset", "type": "int64", "versions": "0+"},
        {"name": "LastFetchTimestamp", "type": "int64", "versions": "1+", "ignorable": True,
         "default": -1},
        {"name": "LastCaughtUpTimestamp", "type": "int64", "versions": "1+", "ignorable": True,
         "default": -1},
    ]


DESCRIBE_QUORUM_RESPONSE: Declaration = {
    "apiKey": ApiKey.DESCRIBE_QUORUM,
    "type": "response",
    "name": "DescribeQuorumResponse",
    "validVersions": "0-2",
    "flexibleVersions": "0+",
    "fields": [
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {"name": "ErrorMessage", "type": "string", "versions": "2+", "nullableVersions": "2+",
         "ignorable": True},
        {
            "name": "Topics",
            "type": "[]TopicData",
            "versions": "0+",
            "fields": [
                {"name": "TopicName", "type": "string", "versions": "0+"},
                {
                    "name": "Partitions",
                    "type": "[]PartitionData",
                    "versions": "0+",
                    "fields": [
                        {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
                        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                        {"name": "ErrorMessage", "type": "string", "versions": "2+",
                         "nullableVersions": "2+", "ignorable": True},
                        {"name": "LeaderId", "type": "int32", "versions": "0+"},
                        {"name": "LeaderEpoch", "type": "int32", "versions": "0+"},
                        {"name": "HighWatermark", "type": "int64", "versions": "0+"},
                        {"name": "CurrentVoters", "type": "[]ReplicaState", "versions": "0+",
                         "fields": _replica_state()},
                        {"name": "Observers", "type": "[]ReplicaState", "versions": "0+",
                         "fields": _replica_state()},
                    ],
                },
            ],
        },
        {
            "name": "Nodes",
            "type": "[]Node",
            "versions": "2+",
            "fields": [
                {"name": "NodeId", "type": "int32", "versions": "2+"},
                {
                    "name": "Listeners",
                    "type": "[]Listener",
                    "versions": "2+",
                    "fields": [
                        {"name": "Name", "type": "string", "versions": "2+"},
                        {"name": "Host", "type": "string", "versions": "2+"},
                        {"name": "Port", "type": "uint16", "versions": "2+"},
                    ],
                },
            ],
        },
    ],
}
