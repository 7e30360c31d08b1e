"""The APIs named after offsets: ListOffsets (2), OffsetCommit (8), OffsetFetch (9),
OffsetForLeaderEpoch (23) and OffsetDelete (47).

ListOffsets and OffsetForLeaderEpoch ask a partition's leader about its log; OffsetCommit,
OffsetFetch and OffsetDelete ask a group coordinator about a group's committed offsets
(TxnOffsetCommit, the transactional commit, is in :mod:`~kafkacore.protocol.messages.transactions`).
"""

from __future__ import annotations

from kafkacore.protocol.api_keys import ApiKey
from kafkacore.protocol.messages.message_spec import Declaration

__all__ = [
    "LIST_OFFSETS_REQUEST", "LIST_OFFSETS_RESPONSE", "OFFSET_COMMIT_REQUEST",
    "OFFSET_COMMIT_RESPONSE", "OFFSET_FETCH_REQUEST", "OFFSET_FETCH_RESPONSE",
    "OFFSET_FOR_LEADER_EPOCH_REQUEST", "OFFSET_FOR_LEADER_EPOCH_RESPONSE", "OFFSET_DELETE_REQUEST",
    "OFFSET_DELETE_RESPONSE",
]

# -- ListOffsets (2) ------------------------------------------------------------------------------

LIST_OFFSETS_REQUEST: Declaration = {
    "apiKey": ApiKey.LIST_OFFSETS,
    "type": "request",
    "name": "ListOffsetsRequest",
    # v1 one offset per partition (v0 a list); v2 isolation level; v4 leader epochs; v6 flexible;
    # v10 a timeout.  Timestamp -1 asks for the end of the log, -2 for its start.
    "validVersions": "0-10",
    "flexibleVersions": "6+",
    "fields": [
        {"name": "ReplicaId", "type": "int32", "versions": "0+"},
        {"name": "IsolationLevel", "type": "int8", "versions": "2+"},
        {
            "name": "Topics",
            "type": "[]ListOffsetsTopic",
            "versions": "0+",
            "fields": [
                {"name": "Name", "type": "string", "versions": "0+"},
                {
                    "name": "Partitions",
                    "type": "[]ListOffsetsPartition",
                    "versions": "0+",
                    "fields": [
                        {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
                        {
                            "name": "CurrentLeaderEpoch",
                            "type": "int32",
                            "versions": "4+",
                            "default": -1,
                            "ignorable": True,
                        },
                        {"name": "Timestamp", "type": "int64", "versions": "0+"},
                        {"name": "MaxNumOffsets", "type": "int32", "versions": "0", "default": 1},
                    ],
                },
            ],
        },
        {"name": "TimeoutMs", "type": "int32", "versions": "10+", "ignorable": True},
    ],
}

LIST_OFFSETS_RESPONSE: Declaration = {
    "apiKey": ApiKey.LIST_OFFSETS,
    "type": "response",
    "name": "ListOffsetsResponse",
    "validVersions": "0-10",
    "flexibleVersions": "6+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "2+", "ignorable": True},
        {
            "name": "Topics",
            "type": "[]ListOffsetsTopicResponse",
            "versions": "0+",
            "fields": [
                {"name": "Name", "type": "string", "versions": "0+"},
                {
                    "name": "Partitions",
                    "type": "[]ListOffsetsPartitionResponse",
                    "versions": "0+",
                    "fields": [
                        {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
                        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                        {"name": "OldStyleOffsets", "type": "[]int64", "versions": "0"},
                        {"name": "Timestamp", "type": "int64", "versions": "1+", "default": -1},
                        {"name": "Offset", "type": "int64", "versions": "1+", "default": -1},
                        {"name": "LeaderEpoch", "type": "int32", "versions": "4+", "default": -1},
                    ],
                },
            ],
        },
    ],
}

# -- OffsetCommit (8) ----------------------------------------------------------------------------

OFFSET_COMMIT_REQUEST: Declaration = {
    "apiKey": ApiKey.OFFSET_COMMIT,
    "type": "request",
    "name": "OffsetCommitRequest",
    # Kafka 4.0 keeps v2+; v5 drops the retention time; v6 leader epoch; v7 static members
    # (KIP-345); v8 flexible; v10 topics by id (KIP-848).
    "validVersions": "2-10",
    "flexibleVersions": "8+",
    "fields": [
        {"name": "GroupId", "type": "string", "versions": "0+"},
        {
            "name": "GenerationIdOrMemberEpoch",
            "type": "int32",
            "versions": "1+",
            "default": -1,
            "ignorable": True,
        },
        {"name": "MemberId", "type": "string", "versions": "1+", "ignorable": True},
        {
            "name": "GroupInstanceId",
            "type": "string",
            "versions": "7+",
            "nullableVersions": "7+",
            "default": None,
        },
        {
            "name": "RetentionTimeMs",
            "type": "int64",
            "versions": "2-4",
            "default": -1,
            "ignorable": True,
        },
        {
            "name": "Topics",
            "type": "[]OffsetCommitRequestTopic",
            "versions": "0+",
            "fields": [
                {"name": "Name", "type": "string", "versions": "0-9", "ignorable": True},
                {"name": "TopicId", "type": "uuid", "versions": "10+", "ignorable": True},
                {
                    "name": "Partitions",
                    "type": "[]OffsetCommitRequestPartition",
                    "versions": "0+",
                    "fields": [
                        {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
                        {"name": "CommittedOffset", "type": "int64", "versions": "0+"},
                        {
                            "name": "CommittedLeaderEpoch",
                            "type": "int32",
                            "versions": "6+",
                            "default": -1,
                            "ignorable": True,
                        },
                        {
                            "name": "CommitTimestamp",
                            "type": "int64",
                            "versions": "1",
                            "default": -1,
                        },
                        {
                            "name": "CommittedMetadata",
                            "type": "string",
                            "versions": "0+",
                            "nullableVersions": "0+",
                        },
                    ],
                },
            ],
        },
    ],
}

OFFSET_COMMIT_RESPONSE: Declaration = {
    "apiKey": ApiKey.OFFSET_COMMIT,
    "type": "response",
    "name": "OffsetCommitResponse",
    "validVersions": "2-10",
    "flexibleVersions": "8+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "3+", "ignorable": True},
        {
            "name": "Topics",
            "type": "[]OffsetCommitResponseTopic",
            "versions": "0+",
            "fields": [
                {"name": "Name", "type": "string", "versions": "0-9", "ignorable": True},
                {"name": "TopicId", "type": "uuid", "versions": "10+", "ignorable": True},
                {
                    "name": "Partitions",
                    "type": "[]OffsetCommitResponsePartition",
                    "versions": "0+",
                    "fields": [
                        {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
                        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                    ],
                },
            ],
        },
    ],
}

# -- OffsetFetch (9) -----------------------------------------------------------------------------

OFFSET_FETCH_REQUEST: Declaration = {
    "apiKey": ApiKey.OFFSET_FETCH,
    "type": "request",
    "name": "OffsetFetchRequest",
    # Kafka 4.0 keeps v1+; v2 null topics = all; v6 flexible; v7 require stable (KIP-447);
    # v8 several groups at once (KIP-709); v9 member id/epoch (KIP-848); v10 topic ids.
    "validVersions": "1-10",
    "flexibleVersions": "6+",
    "fields": [
        {"name": "GroupId", "type": "string", "versions": "0-7"},
        {
            "name": "Topics",
            "type": "[]OffsetFetchRequestTopic",
            "versions": "0-7",
            "nullableVersions": "2-7",
            "fields": [
                {"name": "Name", "type": "string", "versions": "0-7"},
                {"name": "PartitionIndexes", "type": "[]int32", "versions": "0-7"},
            ],
        },
        {
            "name": "Groups",
            "type": "[]OffsetFetchRequestGroup",
            "versions": "8+",
            "fields": [
                {"name": "GroupId", "type": "string", "versions": "8+"},
                {
                    "name": "MemberId",
                    "type": "string",
                    "versions": "9+",
                    "nullableVersions": "9+",
                    "default": None,
                    "ignorable": True,
                },
                {
                    "name": "MemberEpoch",
                    "type": "int32",
                    "versions": "9+",
                    "default": -1,
                    "ignorable": True,
                },
                {
                    "name": "Topics",
                    "type": "[]OffsetFetchRequestTopics",
                    "versions": "8+",
                    "nullableVersions": "8+",
                    "fields": [
                        {"name": "Name", "type": "string", "versions": "8-9", "ignorable": True},
                        {"name": "TopicId", "type": "uuid", "versions": "10+", "ignorable": True},
                        {"name": "PartitionIndexes", "type": "[]int32", "versions": "8+"},
                    ],
                },
            ],
        },
        {"name": "RequireStable", "type": "bool", "versions": "7+", "default": False},
    ],
}

OFFSET_FETCH_RESPONSE: Declaration = {
    "apiKey": ApiKey.OFFSET_FETCH,
    "type": "response",
    "name": "OffsetFetchResponse",
    "validVersions": "1-10",
    "flexibleVersions": "6+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "3+", "ignorable": True},
        {
            "name": "Topics",
            "type": "[]OffsetFetchResponseTopic",
            "versions": "0-7",
            "fields": [
                {"name": "Name", "type": "string", "versions": "0-7"},
                {
                    "name": "Partitions",
                    "type": "[]OffsetFetchResponsePartition",
                    "versions": "0-7",
                    "fields": [
                        {"name": "PartitionIndex", "type": "int32", "versions": "0-7"},
                        {"name": "CommittedOffset", "type": "int64", "versions": "0-7"},
                        {
                            "name": "CommittedLeaderEpoch",
                            "type": "int32",
                            "versions": "5-7",
                            "default": -1,
                            "ignorable": True,
                        },
                        {
                            "name": "Metadata",
                            "type": "string",
                            "versions": "0-7",
                            "nullableVersions": "0-7",
                        },
                        {"name": "ErrorCode", "type": "int16", "versions": "0-7"},
                    ],
                },
            ],
        },
        {
            "name": "ErrorCode",
            "type": "int16",
            "versions": "2-7",
            "default": 0,
            "ignorable": True,
        },
        {
            "name": "Groups",
            "type": "[]OffsetFetchResponseGroup",
            "versions": "8+",
            "fields": [
                {"name": "GroupId", "type": "string", "versions": "8+"},
                {
                    "name": "Topics",
                    "type": "[]OffsetFetchResponseTopics",
                    "versions": "8+",
                    "fields": [
                        {"name": "Name", "type": "string", "versions": "8-9", "ignorable": True},
                        {"name": "TopicId", "type": "uuid", "versions": "10+", "ignorable": True},
                        {
                            "name": "Partitions",
                            "type": "[]OffsetFetchResponsePartitions",
                            "versions": "8+",
                            "fields": [
                                {"name": "PartitionIndex", "type": "int32", "versions": "8+"},
                                {"name": "CommittedOffset", "type": "int64", "versions": "8+"},
                                {
                                    "name": "CommittedLeaderEpoch",
                                    "type": "int32",
                                    "versions": "8+",
                                    "default": -1,
                                    "ignorable": True,
                                },
                                {
                                    "name": "Metadata",
                                    "type": "string",
                                    "versions": "8+",
                                    "nullableVersions": "8+",
                                },
                                {"name": "ErrorCode", "type": "int16", "versions": "8+"},
                            ],
                        },
                    ],
                },
                {"name": "ErrorCode", "type": "int16", "versions": "8+", "default": 0},
            ],
        },
    ],
}

# -- OffsetForLeaderEpoch (23): where does my log diverge from the leader's? (KIP-101, KIP-279) --

OFFSET_FOR_LEADER_EPOCH_REQUEST: Declaration = {
    "apiKey": ApiKey.OFFSET_FOR_LEADER_EPOCH,
    "type": "request",
    "name": "OffsetForLeaderEpochRequest",
    # v2 current leader epoch (KIP-320); v3 replica id; v4 flexible.
    "validVersions": "2-4",
    "flexibleVersions": "4+",
    "fields": [
        {"name": "ReplicaId", "type": "int32", "versions": "3+", "default": -2,
         "ignorable": True},
        {
            "name": "Topics",
            "type": "[]OffsetForLeaderTopic",
            "versions": "0+",
            "fields": [
                {"name": "Topic", "type": "string", "versions": "0+"},
                {
                    "name": "Partitions",
                    "type": "[]OffsetForLeaderPartition",
                    "versions": "0+",
                    "fields": [
                        {"name": "Partition", "type": "int32", "versions": "0+"},
                        {"name": "CurrentLeaderEpoch", "type": "int32", "versions": "2+",
                         "default": -1, "ignorable": True},
                        {"name": "LeaderEpoch", "type": "int32", "versions": "0+"},
                    ],
                },
            ],
        },
    ],
}

OFFSET_FOR_LEADER_EPOCH_RESPONSE: Declaration = {
    "apiKey": ApiKey.OFFSET_FOR_LEADER_EPOCH,
    "type": "response",
    "name": "OffsetForLeaderEpochResponse",
    "validVersions": "2-4",
    "flexibleVersions": "4+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "2+", "ignorable": True},
        {
            "name": "Topics",
            "type": "[]OffsetForLeaderTopicResult",
            "versions": "0+",
            "fields": [
                {"name": "Topic", "type": "string", "versions": "0+"},
                {
                    "name": "Partitions",
                    "type": "[]EpochEndOffset",
                    "versions": "0+",
                    "fields": [
                        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                        {"name": "Partition", "type": "int32", "versions": "0+"},
                        {"name": "LeaderEpoch", "type": "int32", "versions": "1+",
                         "default": -1, "ignorable": True},
                        {"name": "EndOffset", "type": "int64", "versions": "0+", "default": -1},
                    ],
                },
            ],
        },
    ],
}

# -- OffsetDelete (47) ---------------------------------------------------------------------------

OFFSET_DELETE_REQUEST: Declaration = {
    "apiKey": ApiKey.OFFSET_DELETE, "type": "request", "name": "OffsetDeleteRequest",
    "validVersions": "0", "flexibleVersions": "none",
    "fields": [
        {"name": "GroupId", "type": "string", "versions": "0+"},
        {"name": "Topics", "type": "[]OffsetDeleteRequestTopic", "versions": "0+", "fields": [
            {"name": "Name", "type": "string", "versions": "0+"},
            {"name": "Partitions", "type": "[]OffsetDeleteRequestPartition", "versions": "0+",
             "fields": [{"name": "PartitionIndex", "type": "int32", "versions": "0+"}]},
        ]},
    ],
}

OFFSET_DELETE_RESPONSE: Declaration = {
    "apiKey": ApiKey.OFFSET_DELETE, "type": "response", "name": "OffsetDeleteResponse",
    "validVersions": "0", "flexibleVersions": "none",
    "fields": [
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+", "ignorable": True},
        {"name": "Topics", "type": "[]OffsetDeleteResponseTopic", "versions": "0+", "fields": [
            {"name": "Name", "type": "string", "versions": "0+"},
            {"name": "Partitions", "type": "[]OffsetDeleteResponsePartition", "versions": "0+",
             "fields": [
                 {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
                 {"name": "ErrorCode", "type": "int16", "versions": "0+"},
             ]},
        ]},
    ],
}
