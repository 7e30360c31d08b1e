"""The messages brokers and the controller send each other (not used by clients).

Declared like :mod:`kafkacore.protocol.messages`, after apache/kafka's
``clients/src/main/resources/common/message/`` files ``OffsetForLeaderEpoch*``,
``AlterPartition*``, ``BrokerRegistration*`` and ``BrokerHeartbeat*``.  Only the versions our
brokers speak are declared.  See docs/broker/replication.rst.
"""

from __future__ import annotations

from kafkacore.protocol.api_keys import ApiKey

Declaration = dict

# -- OffsetForLeaderEpoch (23): where does my log diverge from the leader's? (KIP-101, KIP-279) --

OFFSET_FOR_LEADER_EPOCH_REQUEST: Declaration = {
    "apiKey": 23,
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
    "apiKey": 23,
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

# -- AlterPartition (56): a leader asks the controller to change a partition's ISR (KIP-497) ----

ALTER_PARTITION_REQUEST: Declaration = {
    "apiKey": 56,
    "type": "request",
    "name": "AlterPartitionRequest",
    # v2 topic ids; v3 the ISR with broker epochs (KIP-903).
    "validVersions": "2-3",
    "flexibleVersions": "0+",
    "fields": [
        {"name": "BrokerId", "type": "int32", "versions": "0+"},
        {"name": "BrokerEpoch", "type": "int64", "versions": "0+", "default": -1},
        {
            "name": "Topics",
            "type": "[]TopicData",
            "versions": "0+",
            "fields": [
                {"name": "TopicId", "type": "uuid", "versions": "2+", "ignorable": True},
                {
                    "name": "Partitions",
                    "type": "[]PartitionData",
                    "versions": "0+",
                    "fields": [
                        {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
                        {"name": "LeaderEpoch", "type": "int32", "versions": "0+"},
                        {"name": "NewIsr", "type": "[]int32", "versions": "0-2"},
                        {
                            "name": "NewIsrWithEpochs",
                            "type": "[]BrokerState",
                            "versions": "3+",
                            "fields": [
                                {"name": "BrokerId", "type": "int32", "versions": "3+"},
                                {"name": "BrokerEpoch", "type": "int64", "versions": "3+",
                                 "default": -1},
                            ],
                        },
                        {"name": "LeaderRecoveryState", "type": "int8", "versions": "1+",
                         "default": 0},
                        {"name": "PartitionEpoch", "type": "int32", "versions": "0+"},
                    ],
                },
            ],
        },
    ],
}

ALTER_PARTITION_RESPONSE: Declaration = {
    "apiKey": 56,
    "type": "response",
    "name": "AlterPartitionResponse",
    "validVersions": "2-3",
    "flexibleVersions": "0+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {
            "name": "Topics",
            "type": "[]TopicData",
            "versions": "0+",
            "fields": [
                {"name": "TopicId", "type": "uuid", "versions": "2+", "ignorable": True},
                {
                    "name": "Partitions",
                    "type": "[]PartitionData",
                    "versions": "0+",
                    "fields": [
                        {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
                        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                        {"name": "LeaderId", "type": "int32", "versions": "0+"},
                        {"name": "LeaderEpoch", "type": "int32", "versions": "0+"},
                        {"name": "Isr", "type": "[]int32", "versions": "0+"},
                        {"name": "LeaderRecoveryState", "type": "int8", "versions": "1+",
                         "default": 0},
                        {"name": "PartitionEpoch", "type": "int32", "versions": "0+"},
                    ],
                },
            ],
        },
    ],
}

# -- BrokerRegistration (62) and BrokerHeartbeat (63): a broker's life at the controller --------

BROKER_REGISTRATION_REQUEST: Declaration = {
    "apiKey": 62,
    "type": "request",
    "name": "BrokerRegistrationRequest",
    "validVersions": "0-0",
    "flexibleVersions": "0+",
    "fields": [
        {"name": "BrokerId", "type": "int32", "versions": "0+"},
        {"name": "ClusterId", "type": "string", "versions": "0+"},
        {"name": "IncarnationId", "type": "uuid", "versions": "0+"},
        {
            "name": "Listeners",
            "type": "[]Listener",
            "versions": "0+",
            "fields": [
                {"name": "Name", "type": "string", "versions": "0+"},
                {"name": "Host", "type": "string", "versions": "0+"},
                {"name": "Port", "type": "uint16", "versions": "0+"},
                {"name": "SecurityProtocol", "type": "int16", "versions": "0+"},
            ],
        },
        {
            "name": "Features",
            "type": "[]Feature",
            "versions": "0+",
            "fields": [
                {"name": "Name", "type": "string", "versions": "0+"},
                {"name": "MinSupportedVersion", "type": "int16", "versions": "0+"},
                {"name": "MaxSupportedVersion", "type": "int16", "versions": "0+"},
            ],
        },
        {"name": "Rack", "type": "string", "versions": "0+", "nullableVersions": "0+"},
    ],
}

BROKER_REGISTRATION_RESPONSE: Declaration = {
    "apiKey": 62,
    "type": "response",
    "name": "BrokerRegistrationResponse",
    "validVersions": "0-0",
    "flexibleVersions": "0+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {"name": "BrokerEpoch", "type": "int64", "versions": "0+", "default": -1},
    ],
}

BROKER_HEARTBEAT_REQUEST: Declaration = {
    "apiKey": 63,
    "type": "request",
    "name": "BrokerHeartbeatRequest",
    "validVersions": "0-0",
    "flexibleVersions": "0+",
    "fields": [
        {"name": "BrokerId", "type": "int32", "versions": "0+"},
        {"name": "BrokerEpoch", "type": "int64", "versions": "0+", "default": -1},
        {"name": "CurrentMetadataOffset", "type": "int64", "versions": "0+"},
        {"name": "WantFence", "type": "bool", "versions": "0+"},
        {"name": "WantShutDown", "type": "bool", "versions": "0+"},
    ],
}

BROKER_HEARTBEAT_RESPONSE: Declaration = {
    "apiKey": 63,
    "type": "response",
    "name": "BrokerHeartbeatResponse",
    "validVersions": "0-0",
    "flexibleVersions": "0+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {"name": "IsCaughtUp", "type": "bool", "versions": "0+", "default": False},
        {"name": "IsFenced", "type": "bool", "versions": "0+", "default": True},
        {"name": "ShouldShutDown", "type": "bool", "versions": "0+"},
    ],
}

#: api key -> (request declaration, response declaration), merged into ``messages.MESSAGES``.
INTER_BROKER_MESSAGES: dict[int, tuple[Declaration, Declaration]] = {
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (OFFSET_FOR_LEADER_EPOCH_REQUEST,
                                     OFFSET_FOR_LEADER_EPOCH_RESPONSE),
    ApiKey.ALTER_PARTITION: (ALTER_PARTITION_REQUEST, ALTER_PARTITION_RESPONSE),
    ApiKey.BROKER_REGISTRATION: (BROKER_REGISTRATION_REQUEST, BROKER_REGISTRATION_RESPONSE),
    ApiKey.BROKER_HEARTBEAT: (BROKER_HEARTBEAT_REQUEST, BROKER_HEARTBEAT_RESPONSE),
}
