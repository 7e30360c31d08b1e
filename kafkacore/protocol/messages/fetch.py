"""Fetch (1): records read from a partition's leader, by consumers and by follower replicas
(``FetchRequest.json``, ``FetchResponse.json``).
"""

from __future__ import annotations

from kafkacore.protocol.api_keys import ApiKey
from kafkacore.protocol.messages.message_spec import Declaration

__all__ = [
    "FETCH_REQUEST", "FETCH_RESPONSE",
]

# -- Fetch (1) ----------------------------------------------------------------------------------

FETCH_REQUEST: Declaration = {
    "apiKey": ApiKey.FETCH,
    "type": "request",
    "name": "FetchRequest",
    # Not used by the producer: declared so that tests and our broker can read records back
    # with our own code.  v7 fetch sessions; v12 flexible; v13 topic ids instead of names;
    # v15 the replica state moves into a tagged field.
    "validVersions": "0-17",
    "flexibleVersions": "12+",
    "fields": [
        {
            "name": "ClusterId",
            "type": "string",
            "versions": "12+",
            "nullableVersions": "12+",
            "default": None,
            "taggedVersions": "12+",
            "tag": 0,
            "ignorable": True,
        },
        {"name": "ReplicaId", "type": "int32", "versions": "0-14", "default": -1},
        {
            "name": "ReplicaState",
            "type": "ReplicaState",
            "versions": "15+",
            "taggedVersions": "15+",
            "tag": 1,
            "fields": [
                {"name": "ReplicaId", "type": "int32", "versions": "15+", "default": -1},
                {"name": "ReplicaEpoch", "type": "int64", "versions": "15+", "default": -1},
            ],
        },
        {"name": "MaxWaitMs", "type": "int32", "versions": "0+"},
        {"name": "MinBytes", "type": "int32", "versions": "0+"},
        {
            "name": "MaxBytes",
            "type": "int32",
            "versions": "3+",
            "default": 0x7FFFFFFF,
            "ignorable": True,
        },
        {
            "name": "IsolationLevel",
            "type": "int8",
            "versions": "4+",
            "default": 0,
            "ignorable": True,
        },
        {"name": "SessionId", "type": "int32", "versions": "7+", "default": 0, "ignorable": True},
        {
            "name": "SessionEpoch",
            "type": "int32",
            "versions": "7+",
            "default": -1,
            "ignorable": True,
        },
        {
            "name": "Topics",
            "type": "[]FetchTopic",
            "versions": "0+",
            "fields": [
                {"name": "Topic", "type": "string", "versions": "0-12", "ignorable": True},
                {"name": "TopicId", "type": "uuid", "versions": "13+", "ignorable": True},
                {
                    "name": "Partitions",
                    "type": "[]FetchPartition",
                    "versions": "0+",
                    "fields": [
                        {"name": "Partition", "type": "int32", "versions": "0+"},
                        {
                            "name": "CurrentLeaderEpoch",
                            "type": "int32",
                            "versions": "9+",
                            "default": -1,
                            "ignorable": True,
                        },
                        {"name": "FetchOffset", "type": "int64", "versions": "0+"},
                        {
                            "name": "LastFetchedEpoch",
                            "type": "int32",
                            "versions": "12+",
                            "default": -1,
                            "ignorable": False,
                        },
                        {
                            "name": "LogStartOffset",
                            "type": "int64",
                            "versions": "5+",
                            "default": -1,
                            "ignorable": True,
                        },
                        {"name": "PartitionMaxBytes", "type": "int32", "versions": "0+"},
                        {
                            "name": "ReplicaDirectoryId",
                            "type": "uuid",
                            "versions": "17+",
                            "taggedVersions": "17+",
                            "tag": 0,
                            "ignorable": True,
                        },
                    ],
                },
            ],
        },
        {
            "name": "ForgottenTopicsData",
            "type": "[]ForgottenTopic",
            "versions": "7+",
            "ignorable": False,
            "fields": [
                {"name": "Topic", "type": "string", "versions": "7-12", "ignorable": True},
                {"name": "TopicId", "type": "uuid", "versions": "13+", "ignorable": True},
                {"name": "Partitions", "type": "[]int32", "versions": "7+"},
            ],
        },
        {"name": "RackId", "type": "string", "versions": "11+", "default": "", "ignorable": True},
    ],
}

FETCH_RESPONSE: Declaration = {
    "apiKey": ApiKey.FETCH,
    "type": "response",
    "name": "FetchResponse",
    "validVersions": "0-17",
    "flexibleVersions": "12+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "1+", "ignorable": True},
        {"name": "ErrorCode", "type": "int16", "versions": "7+", "ignorable": True},
        {"name": "SessionId", "type": "int32", "versions": "7+", "default": 0, "ignorable": False},
        {
            "name": "Responses",
            "type": "[]FetchableTopicResponse",
            "versions": "0+",
            "fields": [
                {"name": "Topic", "type": "string", "versions": "0-12", "ignorable": True},
                {"name": "TopicId", "type": "uuid", "versions": "13+", "ignorable": True},
                {
                    "name": "Partitions",
                    "type": "[]PartitionData",
                    "versions": "0+",
                    "fields": [
                        {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
                        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                        {"name": "HighWatermark", "type": "int64", "versions": "0+"},
                        {
                            "name": "LastStableOffset",
                            "type": "int64",
                            "versions": "4+",
                            "default": -1,
                            "ignorable": True,
                        },
                        {
                            "name": "LogStartOffset",
                            "type": "int64",
                            "versions": "5+",
                            "default": -1,
                            "ignorable": True,
                        },
                        {
                            "name": "DivergingEpoch",
                            "type": "EpochEndOffset",
                            "versions": "12+",
                            "taggedVersions": "12+",
                            "tag": 0,
                            "fields": [
                                {
                                    "name": "Epoch",
                                    "type": "int32",
                                    "versions": "12+",
                                    "default": -1,
                                },
                                {
                                    "name": "EndOffset",
                                    "type": "int64",
                                    "versions": "12+",
                                    "default": -1,
                                },
                            ],
                        },
                        {
                            "name": "CurrentLeader",
                            "type": "LeaderIdAndEpoch",
                            "versions": "12+",
                            "taggedVersions": "12+",
                            "tag": 1,
                            "fields": [
                                {
                                    "name": "LeaderId",
                                    "type": "int32",
                                    "versions": "12+",
                                    "default": -1,
                                },
                                {
                                    "name": "LeaderEpoch",
                                    "type": "int32",
                                    "versions": "12+",
                                    "default": -1,
                                },
                            ],
                        },
                        {
                            "name": "SnapshotId",
                            "type": "SnapshotId",
                            "versions": "12+",
                            "taggedVersions": "12+",
                            "tag": 2,
                            "fields": [
                                {
                                    "name": "EndOffset",
                                    "type": "int64",
                                    "versions": "0+",
                                    "default": -1,
                                },
                                {"name": "Epoch", "type": "int32", "versions": "0+", "default": -1},
                            ],
                        },
                        {
                            "name": "AbortedTransactions",
                            "type": "[]AbortedTransaction",
                            "versions": "4+",
                            "nullableVersions": "4+",
                            "ignorable": True,
                            "fields": [
                                {"name": "ProducerId", "type": "int64", "versions": "4+"},
                                {"name": "FirstOffset", "type": "int64", "versions": "4+"},
                            ],
                        },
                        {
                            "name": "PreferredReadReplica",
                            "type": "int32",
                            "versions": "11+",
                            "default": -1,
                            "ignorable": False,
                        },
                        {
                            "name": "Records",
                            "type": "records",
                            "versions": "0+",
                            "nullableVersions": "0+",
                        },
                    ],
                },
            ],
        },
        {
            "name": "NodeEndpoints",
            "type": "[]NodeEndpoint",
            "versions": "16+",
            "taggedVersions": "16+",
            "tag": 0,
            "fields": [
                {"name": "NodeId", "type": "int32", "versions": "16+"},
                {"name": "Host", "type": "string", "versions": "16+"},
                {"name": "Port", "type": "int32", "versions": "16+"},
                {
                    "name": "Rack",
                    "type": "string",
                    "versions": "16+",
                    "nullableVersions": "16+",
                    "default": None,
                },
            ],
        },
    ],
}
