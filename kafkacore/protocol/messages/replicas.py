"""Where a partition's replicas live and which one leads: DescribeLogDirs (35), ElectLeaders (43),
AlterPartitionReassignments (45) and ListPartitionReassignments (46).
"""

from __future__ import annotations

from kafkacore.protocol.api_keys import ApiKey
from kafkacore.protocol.messages.message_spec import Declaration

__all__ = [
    "DESCRIBE_LOG_DIRS_REQUEST", "DESCRIBE_LOG_DIRS_RESPONSE", "ELECT_LEADERS_REQUEST",
    "ELECT_LEADERS_RESPONSE", "ALTER_PARTITION_REASSIGNMENTS_REQUEST",
    "ALTER_PARTITION_REASSIGNMENTS_RESPONSE", "LIST_PARTITION_REASSIGNMENTS_REQUEST",
    "LIST_PARTITION_REASSIGNMENTS_RESPONSE",
]

# -- DescribeLogDirs (35) -----------------------------------------------------------------------

DESCRIBE_LOG_DIRS_REQUEST: Declaration = {
    "apiKey": ApiKey.DESCRIBE_LOG_DIRS, "type": "request", "name": "DescribeLogDirsRequest",
    # v0 was removed in Kafka 4.0; v2 is flexible; v3 and v4 add fields to the answer.
    "validVersions": "1-4", "flexibleVersions": "2+",
    "fields": [
        {"name": "Topics", "type": "[]DescribableLogDirTopic", "versions": "0+",
         "nullableVersions": "0+", "fields": [
             {"name": "Topic", "type": "string", "versions": "0+"},
             {"name": "Partitions", "type": "[]int32", "versions": "0+"},
         ]},
    ],
}

DESCRIBE_LOG_DIRS_RESPONSE: Declaration = {
    "apiKey": ApiKey.DESCRIBE_LOG_DIRS, "type": "response", "name": "DescribeLogDirsResponse",
    "validVersions": "1-4", "flexibleVersions": "2+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {"name": "ErrorCode", "type": "int16", "versions": "3+"},
        {"name": "Results", "type": "[]DescribeLogDirsResult", "versions": "0+", "fields": [
            {"name": "ErrorCode", "type": "int16", "versions": "0+"},
            {"name": "LogDir", "type": "string", "versions": "0+"},
            {"name": "Topics", "type": "[]DescribeLogDirsTopic", "versions": "0+", "fields": [
                {"name": "Name", "type": "string", "versions": "0+"},
                {"name": "Partitions", "type": "[]DescribeLogDirsPartition", "versions": "0+",
                 "fields": [
                     {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
                     {"name": "PartitionSize", "type": "int64", "versions": "0+"},
                     {"name": "OffsetLag", "type": "int64", "versions": "0+"},
                     {"name": "IsFutureKey", "type": "bool", "versions": "0+"},
                 ]},
            ]},
            {"name": "TotalBytes", "type": "int64", "versions": "4+", "ignorable": True,
             "default": -1},
            {"name": "UsableBytes", "type": "int64", "versions": "4+", "ignorable": True,
             "default": -1},
        ]},
    ],
}

# -- ElectLeaders (43) --------------------------------------------------------------------------

ELECT_LEADERS_REQUEST: Declaration = {
    "apiKey": ApiKey.ELECT_LEADERS, "type": "request", "name": "ElectLeadersRequest",
    # v1 adds the election type (preferred or unclean, KIP-460); v2 is flexible.
    "validVersions": "0-2", "flexibleVersions": "2+",
    "fields": [
        {"name": "ElectionType", "type": "int8", "versions": "1+"},
        {"name": "TopicPartitions", "type": "[]TopicPartitions", "versions": "0+",
         "nullableVersions": "0+", "fields": [
             {"name": "Topic", "type": "string", "versions": "0+"},
             {"name": "Partitions", "type": "[]int32", "versions": "0+"},
         ]},
        {"name": "TimeoutMs", "type": "int32", "versions": "0+", "default": 60000},
    ],
}

ELECT_LEADERS_RESPONSE: Declaration = {
    "apiKey": ApiKey.ELECT_LEADERS, "type": "response", "name": "ElectLeadersResponse",
    "validVersions": "0-2", "flexibleVersions": "2+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {"name": "ErrorCode", "type": "int16", "versions": "1+"},
        {"name": "ReplicaElectionResults", "type": "[]ReplicaElectionResult", "versions": "0+",
         "fields": [
             {"name": "Topic", "type": "string", "versions": "0+"},
             {"name": "PartitionResult", "type": "[]PartitionResult", "versions": "0+",
              "fields": [
                  {"name": "PartitionId", "type": "int32", "versions": "0+"},
                  {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                  {"name": "ErrorMessage", "type": "string", "versions": "0+",
                   "nullableVersions": "0+"},
              ]},
         ]},
    ],
}

# -- AlterPartitionReassignments (45), ListPartitionReassignments (46) --------------------------

ALTER_PARTITION_REASSIGNMENTS_REQUEST: Declaration = {
    "apiKey": ApiKey.ALTER_PARTITION_REASSIGNMENTS, "type": "request", "name": "AlterPartitionReassignmentsRequest",
    # v1 may refuse a change of the replication factor (KIP-860).
    "validVersions": "0-1", "flexibleVersions": "0+",
    "fields": [
        {"name": "TimeoutMs", "type": "int32", "versions": "0+", "default": 60000},
        {"name": "AllowReplicationFactorChange", "type": "bool", "versions": "1+",
         "default": True},
        {"name": "Topics", "type": "[]ReassignableTopic", "versions": "0+", "fields": [
            {"name": "Name", "type": "string", "versions": "0+"},
            {"name": "Partitions", "type": "[]ReassignablePartition", "versions": "0+",
             "fields": [
                 {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
                 {"name": "Replicas", "type": "[]int32", "versions": "0+",
                  "nullableVersions": "0+", "default": None},
             ]},
        ]},
    ],
}

ALTER_PARTITION_REASSIGNMENTS_RESPONSE: Declaration = {
    "apiKey": ApiKey.ALTER_PARTITION_REASSIGNMENTS, "type": "response", "name": "AlterPartitionReassignmentsResponse",
    "validVersions": "0-1", "flexibleVersions": "0+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {"name": "AllowReplicationFactorChange", "type": "bool", "versions": "1+",
         "default": True, "ignorable": True},
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {"name": "ErrorMessage", "type": "string", "versions": "0+", "nullableVersions": "0+"},
        {"name": "Responses", "type": "[]ReassignableTopicResponse", "versions": "0+",
         "fields": [
             {"name": "Name", "type": "string", "versions": "0+"},
             {"name": "Partitions", "type": "[]ReassignablePartitionResponse",
              "versions": "0+", "fields": [
                  {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
                  {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                  {"name": "ErrorMessage", "type": "string", "versions": "0+",
                   "nullableVersions": "0+"},
              ]},
         ]},
    ],
}

LIST_PARTITION_REASSIGNMENTS_REQUEST: Declaration = {
    "apiKey": ApiKey.LIST_PARTITION_REASSIGNMENTS, "type": "request", "name": "ListPartitionReassignmentsRequest",
    "validVersions": "0", "flexibleVersions": "0+",
    "fields": [
        {"name": "TimeoutMs", "type": "int32", "versions": "0+", "default": 60000},
        {"name": "Topics", "type": "[]ListPartitionReassignmentsTopics", "versions": "0+",
         "nullableVersions": "0+", "default": None, "fields": [
             {"name": "Name", "type": "string", "versions": "0+"},
             {"name": "PartitionIndexes", "type": "[]int32", "versions": "0+"},
         ]},
    ],
}

LIST_PARTITION_REASSIGNMENTS_RESPONSE: Declaration = {
    "apiKey": ApiKey.LIST_PARTITION_REASSIGNMENTS, "type": "response", "name": "ListPartitionReassignmentsResponse",
    "validVersions": "0", "flexibleVersions": "0+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {"name": "ErrorMessage", "type": "string", "versions": "0+", "nullableVersions": "0+"},
        {"name": "Topics", "type": "[]OngoingTopicReassignment", "versions": "0+", "fields": [
            {"name": "Name", "type": "string", "versions": "0+"},
            {"name": "Partitions", "type": "[]OngoingPartitionReassignment", "versions": "0+",
             "fields": [
                 {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
                 {"name": "Replicas", "type": "[]int32", "versions": "0+"},
                 {"name": "AddingReplicas", "type": "[]int32", "versions": "0+"},
                 {"name": "RemovingReplicas", "type": "[]int32", "versions": "0+"},
             ]},
        ]},
    ],
}

#: api key -> (request declaration, response declaration)
