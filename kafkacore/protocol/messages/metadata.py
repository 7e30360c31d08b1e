"""Where things are: Metadata (3), FindCoordinator (10), DescribeCluster (60) and
DescribeTopicPartitions (75, KIP-966).
"""

from __future__ import annotations

from typing import Any

from kafkacore.protocol.api_keys import ApiKey
from kafkacore.protocol.messages.message_spec import Declaration

__all__ = [
    "METADATA_REQUEST", "METADATA_RESPONSE", "FIND_COORDINATOR_REQUEST",
    "FIND_COORDINATOR_RESPONSE", "DESCRIBE_CLUSTER_REQUEST", "DESCRIBE_CLUSTER_RESPONSE",
    "DESCRIBE_TOPIC_PARTITIONS_REQUEST", "DESCRIBE_TOPIC_PARTITIONS_RESPONSE",
]

# -- Metadata (3) -------------------------------------------------------------------------------

METADATA_REQUEST: Declaration = {
    "apiKey": ApiKey.METADATA,
    "type": "request",
    "name": "MetadataRequest",
    # v1: null topics = all topics (v0: empty = all); v4 auto-creation flag; v8 authorized
    # operations; v9 flexible; v10 topic ids; v11 drops the cluster operations flag.
    "validVersions": "0-12",
    "flexibleVersions": "9+",
    "fields": [
        {
            "name": "Topics",
            "type": "[]MetadataRequestTopic",
            "versions": "0+",
            "nullableVersions": "1+",
            "fields": [
                {"name": "TopicId", "type": "uuid", "versions": "10+", "ignorable": True},
                {
                    "name": "Name",
                    "type": "string",
                    "versions": "0+",
                    "nullableVersions": "10+",
                },
            ],
        },
        {
            "name": "AllowAutoTopicCreation",
            "type": "bool",
            "versions": "4+",
            "default": True,
            "ignorable": False,
        },
        {"name": "IncludeClusterAuthorizedOperations", "type": "bool", "versions": "8-10"},
        {"name": "IncludeTopicAuthorizedOperations", "type": "bool", "versions": "8+"},
    ],
}

METADATA_RESPONSE: Declaration = {
    "apiKey": ApiKey.METADATA,
    "type": "response",
    "name": "MetadataResponse",
    "validVersions": "0-12",
    "flexibleVersions": "9+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "3+", "ignorable": True},
        {
            "name": "Brokers",
            "type": "[]MetadataResponseBroker",
            "versions": "0+",
            "fields": [
                {"name": "NodeId", "type": "int32", "versions": "0+"},
                {"name": "Host", "type": "string", "versions": "0+"},
                {"name": "Port", "type": "int32", "versions": "0+"},
                {
                    "name": "Rack",
                    "type": "string",
                    "versions": "1+",
                    "nullableVersions": "1+",
                    "ignorable": True,
                    "default": None,
                },
            ],
        },
        {
            "name": "ClusterId",
            "type": "string",
            "versions": "2+",
            "nullableVersions": "2+",
            "ignorable": True,
            "default": None,
        },
        {
            "name": "ControllerId",
            "type": "int32",
            "versions": "1+",
            "default": -1,
            "ignorable": True,
        },
        {
            "name": "Topics",
            "type": "[]MetadataResponseTopic",
            "versions": "0+",
            "fields": [
                {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                {
                    "name": "Name",
                    "type": "string",
                    "versions": "0+",
                    "nullableVersions": "12+",
                },
                {"name": "TopicId", "type": "uuid", "versions": "10+", "ignorable": True},
                {
                    "name": "IsInternal",
                    "type": "bool",
                    "versions": "1+",
                    "default": False,
                    "ignorable": True,
                },
                {
                    "name": "Partitions",
                    "type": "[]MetadataResponsePartition",
                    "versions": "0+",
                    "fields": [
                        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                        {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
                        {"name": "LeaderId", "type": "int32", "versions": "0+"},
                        {
                            "name": "LeaderEpoch",
                            "type": "int32",
                            "versions": "7+",
                            "default": -1,
                            "ignorable": True,
                        },
                        {"name": "ReplicaNodes", "type": "[]int32", "versions": "0+"},
                        {"name": "IsrNodes", "type": "[]int32", "versions": "0+"},
                        {
                            "name": "OfflineReplicas",
                            "type": "[]int32",
                            "versions": "5+",
                            "ignorable": True,
                        },
                    ],
                },
                {
                    "name": "TopicAuthorizedOperations",
                    "type": "int32",
                    "versions": "8+",
                    "default": -2147483648,
                },
            ],
        },
        {
            "name": "ClusterAuthorizedOperations",
            "type": "int32",
            "versions": "8-10",
            "default": -2147483648,
        },
    ],
}

# -- FindCoordinator (10) ------------------------------------------------------------------------

FIND_COORDINATOR_REQUEST: Declaration = {
    "apiKey": ApiKey.FIND_COORDINATOR,
    "type": "request",
    "name": "FindCoordinatorRequest",
    # v1 key type; v3 flexible; v4 batches keys (KIP-699); v5 and v6 only add error codes and key
    # types on the response side (KIP-890, KIP-932).
    "validVersions": "0-6",
    "flexibleVersions": "3+",
    "fields": [
        {"name": "Key", "type": "string", "versions": "0-3"},
        {"name": "KeyType", "type": "int8", "versions": "1+", "default": 0, "ignorable": False},
        {"name": "CoordinatorKeys", "type": "[]string", "versions": "4+"},
    ],
}

FIND_COORDINATOR_RESPONSE: Declaration = {
    "apiKey": ApiKey.FIND_COORDINATOR,
    "type": "response",
    "name": "FindCoordinatorResponse",
    "validVersions": "0-6",
    "flexibleVersions": "3+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "1+", "ignorable": True},
        {"name": "ErrorCode", "type": "int16", "versions": "0-3"},
        {
            "name": "ErrorMessage",
            "type": "string",
            "versions": "1-3",
            "nullableVersions": "1-3",
            "ignorable": True,
        },
        {"name": "NodeId", "type": "int32", "versions": "0-3"},
        {"name": "Host", "type": "string", "versions": "0-3"},
        {"name": "Port", "type": "int32", "versions": "0-3"},
        {
            "name": "Coordinators",
            "type": "[]Coordinator",
            "versions": "4+",
            "fields": [
                {"name": "Key", "type": "string", "versions": "4+"},
                {"name": "NodeId", "type": "int32", "versions": "4+"},
                {"name": "Host", "type": "string", "versions": "4+"},
                {"name": "Port", "type": "int32", "versions": "4+"},
                {"name": "ErrorCode", "type": "int16", "versions": "4+"},
                {
                    "name": "ErrorMessage",
                    "type": "string",
                    "versions": "4+",
                    "nullableVersions": "4+",
                    "ignorable": True,
                },
            ],
        },
    ],
}

# -- DescribeCluster (60) -----------------------------------------------------------------------

DESCRIBE_CLUSTER_REQUEST: Declaration = {
    "apiKey": ApiKey.DESCRIBE_CLUSTER,
    "type": "request",
    "name": "DescribeClusterRequest",
    # v1 adds EndpointType (KIP-919: brokers or controllers); v2 IncludeFencedBrokers.
    "validVersions": "0-2",
    "flexibleVersions": "0+",
    "fields": [
        {"name": "IncludeClusterAuthorizedOperations", "type": "bool", "versions": "0+"},
        {"name": "EndpointType", "type": "int8", "versions": "1+", "default": 1},
        {"name": "IncludeFencedBrokers", "type": "bool", "versions": "2+", "default": False},
    ],
}

DESCRIBE_CLUSTER_RESPONSE: Declaration = {
    "apiKey": ApiKey.DESCRIBE_CLUSTER,
    "type": "response",
    "name": "DescribeClusterResponse",
    "validVersions": "0-2",
    "flexibleVersions": "0+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {"name": "ErrorMessage", "type": "string", "versions": "0+", "nullableVersions": "0+",
         "default": None},
        {"name": "EndpointType", "type": "int8", "versions": "1+", "default": 1},
        {"name": "ClusterId", "type": "string", "versions": "0+"},
        {"name": "ControllerId", "type": "int32", "versions": "0+", "default": -1},
        {
            "name": "Brokers",
            "type": "[]DescribeClusterBroker",
            "versions": "0+",
            "fields": [
                {"name": "BrokerId", "type": "int32", "versions": "0+"},
                {"name": "Host", "type": "string", "versions": "0+"},
                {"name": "Port", "type": "int32", "versions": "0+"},
                {"name": "Rack", "type": "string", "versions": "0+", "nullableVersions": "0+",
                 "default": None},
                {"name": "IsFenced", "type": "bool", "versions": "2+", "default": False},
            ],
        },
        {"name": "ClusterAuthorizedOperations", "type": "int32", "versions": "0+",
         "default": -2147483648},
    ],
}

# -- DescribeTopicPartitions (75, KIP-966) ------------------------------------------------------

_CURSOR: list[dict[str, Any]] = [
    {"name": "TopicName", "type": "string", "versions": "0+"},
    {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
]

DESCRIBE_TOPIC_PARTITIONS_REQUEST: Declaration = {
    "apiKey": ApiKey.DESCRIBE_TOPIC_PARTITIONS, "type": "request", "name": "DescribeTopicPartitionsRequest",
    "validVersions": "0", "flexibleVersions": "0+",
    "fields": [
        {"name": "Topics", "type": "[]TopicRequest", "versions": "0+",
         "fields": [{"name": "Name", "type": "string", "versions": "0+"}]},
        {"name": "ResponsePartitionLimit", "type": "int32", "versions": "0+", "default": 2000},
        {"name": "Cursor", "type": "Cursor", "versions": "0+", "nullableVersions": "0+",
         "default": None, "fields": _CURSOR},
    ],
}

DESCRIBE_TOPIC_PARTITIONS_RESPONSE: Declaration = {
    "apiKey": ApiKey.DESCRIBE_TOPIC_PARTITIONS, "type": "response", "name": "DescribeTopicPartitionsResponse",
    "validVersions": "0", "flexibleVersions": "0+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+", "ignorable": True},
        {"name": "Topics", "type": "[]DescribeTopicPartitionsResponseTopic", "versions": "0+",
         "fields": [
             {"name": "ErrorCode", "type": "int16", "versions": "0+"},
             {"name": "Name", "type": "string", "versions": "0+", "nullableVersions": "0+"},
             {"name": "TopicId", "type": "uuid", "versions": "0+", "ignorable": True},
             {"name": "IsInternal", "type": "bool", "versions": "0+", "default": False,
              "ignorable": True},
             {"name": "Partitions", "type": "[]DescribeTopicPartitionsResponsePartition",
              "versions": "0+", "fields": [
                  {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                  {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
                  {"name": "LeaderId", "type": "int32", "versions": "0+"},
                  {"name": "LeaderEpoch", "type": "int32", "versions": "0+", "default": -1,
                   "ignorable": True},
                  {"name": "ReplicaNodes", "type": "[]int32", "versions": "0+"},
                  {"name": "IsrNodes", "type": "[]int32", "versions": "0+"},
                  {"name": "EligibleLeaderReplicas", "type": "[]int32", "versions": "0+",
                   "nullableVersions": "0+", "default": None},
                  {"name": "LastKnownElr", "type": "[]int32", "versions": "0+",
                   "nullableVersions": "0+", "default": None},
                  {"name": "OfflineReplicas", "type": "[]int32", "versions": "0+",
                   "ignorable": True},
              ]},
             {"name": "TopicAuthorizedOperations", "type": "int32", "versions": "0+",
              "default": -2147483648},
         ]},
        {"name": "NextCursor", "type": "Cursor", "versions": "0+", "nullableVersions": "0+",
         "default": None, "fields": _CURSOR},
    ],
}
