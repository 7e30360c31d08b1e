"""The topic admin APIs: CreateTopics (19), DeleteTopics (20), DeleteRecords (21) and
CreatePartitions (37).
"""

from __future__ import annotations

from kafkacore.protocol.api_keys import ApiKey
from kafkacore.protocol.messages.message_spec import Declaration

__all__ = [
    "CREATE_TOPICS_REQUEST", "CREATE_TOPICS_RESPONSE", "DELETE_TOPICS_REQUEST",
    "DELETE_TOPICS_RESPONSE", "DELETE_RECORDS_REQUEST", "DELETE_RECORDS_RESPONSE",
    "CREATE_PARTITIONS_REQUEST", "CREATE_PARTITIONS_RESPONSE",
]

# -- CreateTopics (19) --------------------------------------------------------------------------

CREATE_TOPICS_REQUEST: Declaration = {
    "apiKey": ApiKey.CREATE_TOPICS,
    "type": "request",
    "name": "CreateTopicsRequest",
    # v1 validate-only; v4 default partitions/replication (-1); v5 flexible; v7 topic ids back.
    "validVersions": "0-7",
    "flexibleVersions": "5+",
    "fields": [
        {
            "name": "Topics",
            "type": "[]CreatableTopic",
            "versions": "0+",
            "fields": [
                {"name": "Name", "type": "string", "versions": "0+"},
                {"name": "NumPartitions", "type": "int32", "versions": "0+"},
                {"name": "ReplicationFactor", "type": "int16", "versions": "0+"},
                {
                    "name": "Assignments",
                    "type": "[]CreatableReplicaAssignment",
                    "versions": "0+",
                    "fields": [
                        {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
                        {"name": "BrokerIds", "type": "[]int32", "versions": "0+"},
                    ],
                },
                {
                    "name": "Configs",
                    "type": "[]CreatableTopicConfig",
                    "versions": "0+",
                    "fields": [
                        {"name": "Name", "type": "string", "versions": "0+"},
                        {
                            "name": "Value",
                            "type": "string",
                            "versions": "0+",
                            "nullableVersions": "0+",
                        },
                    ],
                },
            ],
        },
        # Kafka's file really spells these two with a small first letter.
        {"name": "timeoutMs", "type": "int32", "versions": "0+", "default": 60000},
        {
            "name": "validateOnly",
            "type": "bool",
            "versions": "1+",
            "default": False,
            "ignorable": False,
        },
    ],
}

CREATE_TOPICS_RESPONSE: Declaration = {
    "apiKey": ApiKey.CREATE_TOPICS,
    "type": "response",
    "name": "CreateTopicsResponse",
    "validVersions": "0-7",
    "flexibleVersions": "5+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "2+", "ignorable": True},
        {
            "name": "Topics",
            "type": "[]CreatableTopicResult",
            "versions": "0+",
            "fields": [
                {"name": "Name", "type": "string", "versions": "0+"},
                {"name": "TopicId", "type": "uuid", "versions": "7+", "ignorable": True},
                {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                {
                    "name": "ErrorMessage",
                    "type": "string",
                    "versions": "1+",
                    "nullableVersions": "0+",
                    "ignorable": True,
                },
                {
                    "name": "TopicConfigErrorCode",
                    "type": "int16",
                    "versions": "5+",
                    "taggedVersions": "5+",
                    "tag": 0,
                    "ignorable": True,
                },
                {
                    "name": "NumPartitions",
                    "type": "int32",
                    "versions": "5+",
                    "default": -1,
                    "ignorable": True,
                },
                {
                    "name": "ReplicationFactor",
                    "type": "int16",
                    "versions": "5+",
                    "default": -1,
                    "ignorable": True,
                },
                {
                    "name": "Configs",
                    "type": "[]CreatableTopicConfigs",
                    "versions": "5+",
                    "nullableVersions": "5+",
                    "ignorable": True,
                    "fields": [
                        {"name": "Name", "type": "string", "versions": "5+"},
                        {
                            "name": "Value",
                            "type": "string",
                            "versions": "5+",
                            "nullableVersions": "5+",
                        },
                        {"name": "ReadOnly", "type": "bool", "versions": "5+"},
                        {
                            "name": "ConfigSource",
                            "type": "int8",
                            "versions": "5+",
                            "default": -1,
                            "ignorable": True,
                        },
                        {"name": "IsSensitive", "type": "bool", "versions": "5+"},
                    ],
                },
            ],
        },
    ],
}

# -- DeleteTopics (20) ---------------------------------------------------------------------------

DELETE_TOPICS_REQUEST: Declaration = {
    "apiKey": ApiKey.DELETE_TOPICS,
    "type": "request",
    "name": "DeleteTopicsRequest",
    # v0 was removed in Kafka 4.0 (v1 is the baseline; v0-3 are the same); v4 flexible; v5 adds
    # an error message to the answer; v6 names topics by name or by id.
    "validVersions": "1-6",
    "flexibleVersions": "4+",
    "fields": [
        {
            "name": "Topics",
            "type": "[]DeleteTopicState",
            "versions": "6+",
            "fields": [
                {"name": "Name", "type": "string", "versions": "6+", "nullableVersions": "6+",
                 "default": None},
                {"name": "TopicId", "type": "uuid", "versions": "6+"},
            ],
        },
        {"name": "TopicNames", "type": "[]string", "versions": "0-5", "ignorable": True},
        {"name": "TimeoutMs", "type": "int32", "versions": "0+"},
    ],
}

DELETE_TOPICS_RESPONSE: Declaration = {
    "apiKey": ApiKey.DELETE_TOPICS,
    "type": "response",
    "name": "DeleteTopicsResponse",
    "validVersions": "1-6",
    "flexibleVersions": "4+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "1+"},
        {
            "name": "Responses",
            "type": "[]DeletableTopicResult",
            "versions": "0+",
            "fields": [
                {"name": "Name", "type": "string", "versions": "0+", "nullableVersions": "6+"},
                {"name": "TopicId", "type": "uuid", "versions": "6+", "ignorable": True},
                {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                {"name": "ErrorMessage", "type": "string", "versions": "5+",
                 "nullableVersions": "5+", "ignorable": True, "default": None},
            ],
        },
    ],
}

# -- DeleteRecords (21) -------------------------------------------------------------------------

DELETE_RECORDS_REQUEST: Declaration = {
    "apiKey": ApiKey.DELETE_RECORDS,
    "type": "request",
    "name": "DeleteRecordsRequest",
    # v1 is v0; v2 is flexible.
    "validVersions": "0-2",
    "flexibleVersions": "2+",
    "fields": [
        {
            "name": "Topics",
            "type": "[]DeleteRecordsTopic",
            "versions": "0+",
            "fields": [
                {"name": "Name", "type": "string", "versions": "0+"},
                {
                    "name": "Partitions",
                    "type": "[]DeleteRecordsPartition",
                    "versions": "0+",
                    "fields": [
                        {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
                        {"name": "Offset", "type": "int64", "versions": "0+"},
                    ],
                },
            ],
        },
        {"name": "TimeoutMs", "type": "int32", "versions": "0+"},
    ],
}

DELETE_RECORDS_RESPONSE: Declaration = {
    "apiKey": ApiKey.DELETE_RECORDS,
    "type": "response",
    "name": "DeleteRecordsResponse",
    "validVersions": "0-2",
    "flexibleVersions": "2+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {
            "name": "Topics",
            "type": "[]DeleteRecordsTopicResult",
            "versions": "0+",
            "fields": [
                {"name": "Name", "type": "string", "versions": "0+"},
                {
                    "name": "Partitions",
                    "type": "[]DeleteRecordsPartitionResult",
                    "versions": "0+",
                    "fields": [
                        {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
                        {"name": "LowWatermark", "type": "int64", "versions": "0+"},
                        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                    ],
                },
            ],
        },
    ],
}

# -- CreatePartitions (37) ----------------------------------------------------------------------

CREATE_PARTITIONS_REQUEST: Declaration = {
    "apiKey": ApiKey.CREATE_PARTITIONS,
    "type": "request",
    "name": "CreatePartitionsRequest",
    # v1 is v0; v2 is flexible; v3 is v2 (KIP-599: throttled when too many are created).
    "validVersions": "0-3",
    "flexibleVersions": "2+",
    "fields": [
        {
            "name": "Topics",
            "type": "[]CreatePartitionsTopic",
            "versions": "0+",
            "fields": [
                {"name": "Name", "type": "string", "versions": "0+"},
                {"name": "Count", "type": "int32", "versions": "0+"},
                {
                    "name": "Assignments",
                    "type": "[]CreatePartitionsAssignment",
                    "versions": "0+",
                    "nullableVersions": "0+",
                    "fields": [{"name": "BrokerIds", "type": "[]int32", "versions": "0+"}],
                },
            ],
        },
        {"name": "TimeoutMs", "type": "int32", "versions": "0+"},
        {"name": "ValidateOnly", "type": "bool", "versions": "0+"},
    ],
}

CREATE_PARTITIONS_RESPONSE: Declaration = {
    "apiKey": ApiKey.CREATE_PARTITIONS,
    "type": "response",
    "name": "CreatePartitionsResponse",
    "validVersions": "0-3",
    "flexibleVersions": "2+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {
            "name": "Results",
            "type": "[]CreatePartitionsTopicResult",
            "versions": "0+",
            "fields": [
                {"name": "Name", "type": "string", "versions": "0+"},
                {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                {"name": "ErrorMessage", "type": "string", "versions": "0+",
                 "nullableVersions": "0+", "default": None},
            ],
        },
    ],
}
