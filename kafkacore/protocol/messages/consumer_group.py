"""The consumer group protocol's messages (KIP-848): ConsumerGroupHeartbeat (68) and
ConsumerGroupDescribe (69), declared as Kafka 4's JSON schemas declare them."""

from __future__ import annotations

from kafkacore.protocol.api_keys import ApiKey
from kafkacore.protocol.messages.message_spec import Declaration

__all__ = [
    "CONSUMER_GROUP_HEARTBEAT_REQUEST", "CONSUMER_GROUP_HEARTBEAT_RESPONSE",
    "CONSUMER_GROUP_DESCRIBE_REQUEST", "CONSUMER_GROUP_DESCRIBE_RESPONSE",
]

#: A topic's partitions by topic id (the heartbeat's ``TopicPartitions``).
_TOPIC_PARTITIONS = [
    {"name": "TopicId", "type": "uuid", "versions": "0+"},
    {"name": "Partitions", "type": "[]int32", "versions": "0+"},
]

CONSUMER_GROUP_HEARTBEAT_REQUEST: Declaration = {
    "apiKey": ApiKey.CONSUMER_GROUP_HEARTBEAT,
    "type": "request",
    "name": "ConsumerGroupHeartbeatRequest",
    # v1: the regex subscription, and the member id chosen by the consumer (KIP-1082).
    "validVersions": "0-1",
    "flexibleVersions": "0+",
    "fields": [
        {"name": "GroupId", "type": "string", "versions": "0+"},
        {"name": "MemberId", "type": "string", "versions": "0+"},
        {"name": "MemberEpoch", "type": "int32", "versions": "0+"},
        {"name": "InstanceId", "type": "string", "versions": "0+", "nullableVersions": "0+",
         "default": None},
        {"name": "RackId", "type": "string", "versions": "0+", "nullableVersions": "0+",
         "default": None},
        {"name": "RebalanceTimeoutMs", "type": "int32", "versions": "0+", "default": -1},
        {"name": "SubscribedTopicNames", "type": "[]string", "versions": "0+",
         "nullableVersions": "0+", "default": None},
        {"name": "SubscribedTopicRegex", "type": "string", "versions": "1+",
         "nullableVersions": "1+", "default": None},
        {"name": "ServerAssignor", "type": "string", "versions": "0+", "nullableVersions": "0+",
         "default": None},
        {"name": "TopicPartitions", "type": "[]TopicPartitions", "versions": "0+",
         "nullableVersions": "0+", "default": None, "fields": _TOPIC_PARTITIONS},
    ],
}

CONSUMER_GROUP_HEARTBEAT_RESPONSE: Declaration = {
    "apiKey": ApiKey.CONSUMER_GROUP_HEARTBEAT,
    "type": "response",
    "name": "ConsumerGroupHeartbeatResponse",
    "validVersions": "0-1",
    "flexibleVersions": "0+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {"name": "ErrorMessage", "type": "string", "versions": "0+", "nullableVersions": "0+",
         "default": None},
        {"name": "MemberId", "type": "string", "versions": "0+", "nullableVersions": "0+",
         "default": None},
        {"name": "MemberEpoch", "type": "int32", "versions": "0+"},
        {"name": "HeartbeatIntervalMs", "type": "int32", "versions": "0+"},
        {"name": "Assignment", "type": "Assignment", "versions": "0+", "nullableVersions": "0+",
         "default": None, "fields": [
             {"name": "TopicPartitions", "type": "[]TopicPartitions", "versions": "0+",
              "fields": _TOPIC_PARTITIONS},
         ]},
    ],
}

CONSUMER_GROUP_DESCRIBE_REQUEST: Declaration = {
    "apiKey": ApiKey.CONSUMER_GROUP_DESCRIBE,
    "type": "request",
    "name": "ConsumerGroupDescribeRequest",
    # v1 is v0 (its response adds the member type, KIP-1099).
    "validVersions": "0-1",
    "flexibleVersions": "0+",
    "fields": [
        {"name": "GroupIds", "type": "[]string", "versions": "0+"},
        {"name": "IncludeAuthorizedOperations", "type": "bool", "versions": "0+"},
    ],
}

_DESCRIBED_ASSIGNMENT = [
    {"name": "TopicPartitions", "type": "[]TopicPartitions", "versions": "0+", "fields": [
        {"name": "TopicId", "type": "uuid", "versions": "0+"},
        {"name": "TopicName", "type": "string", "versions": "0+"},
        {"name": "Partitions", "type": "[]int32", "versions": "0+"},
    ]},
]

CONSUMER_GROUP_DESCRIBE_RESPONSE: Declaration = {
    "apiKey": ApiKey.CONSUMER_GROUP_DESCRIBE,
    "type": "response",
    "name": "ConsumerGroupDescribeResponse",
    "validVersions": "0-1",
    "flexibleVersions": "0+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {"name": "Groups", "type": "[]DescribedGroup", "versions": "0+", "fields": [
            {"name": "ErrorCode", "type": "int16", "versions": "0+"},
            {"name": "ErrorMessage", "type": "string", "versions": "0+",
             "nullableVersions": "0+", "default": None},
            {"name": "GroupId", "type": "string", "versions": "0+"},
            {"name": "GroupState", "type": "string", "versions": "0+"},
            {"name": "GroupEpoch", "type": "int32", "versions": "0+"},
            {"name": "AssignmentEpoch", "type": "int32", "versions": "0+"},
            {"name": "AssignorName", "type": "string", "versions": "0+"},
            {"name": "Members", "type": "[]Member", "versions": "0+", "fields": [
                {"name": "MemberId", "type": "string", "versions": "0+"},
                {"name": "InstanceId", "type": "string", "versions": "0+",
                 "nullableVersions": "0+", "default": None},
                {"name": "RackId", "type": "string", "versions": "0+",
                 "nullableVersions": "0+", "default": None},
                {"name": "MemberEpoch", "type": "int32", "versions": "0+"},
                {"name": "ClientId", "type": "string", "versions": "0+"},
                {"name": "ClientHost", "type": "string", "versions": "0+"},
                {"name": "SubscribedTopicNames", "type": "[]string", "versions": "0+"},
                {"name": "SubscribedTopicRegex", "type": "string", "versions": "0+",
                 "nullableVersions": "0+", "default": None},
                {"name": "Assignment", "type": "Assignment", "versions": "0+",
                 "fields": _DESCRIBED_ASSIGNMENT},
                {"name": "TargetAssignment", "type": "Assignment", "versions": "0+",
                 "fields": _DESCRIBED_ASSIGNMENT},
                # 0: classic, 1: consumer protocol, -1: unknown (KIP-1099).
                {"name": "MemberType", "type": "int8", "versions": "1+", "default": -1},
            ]},
            {"name": "AuthorizedOperations", "type": "int32", "versions": "0+",
             "default": -2147483648},
        ]},
    ],
}
