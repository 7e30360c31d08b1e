"""The messages a broker sends the controller (not used by clients): AlterPartition (56, a
leader asks for a new ISR, KIP-497), BrokerRegistration (62) and BrokerHeartbeat (63), a
broker's life at the controller, and AllocateProducerIds (67, a block of producer ids,
KIP-730).  Only the versions our brokers speak are declared; see docs/broker/replication.rst
and docs/broker/controller.rst.
"""

from __future__ import annotations

from kafkacore.protocol.api_keys import ApiKey
from kafkacore.protocol.messages.message_spec import Declaration

__all__ = [
    "ALTER_PARTITION_REQUEST", "ALTER_PARTITION_RESPONSE", "BROKER_REGISTRATION_REQUEST",
    "BROKER_REGISTRATION_RESPONSE", "BROKER_HEARTBEAT_REQUEST", "BROKER_HEARTBEAT_RESPONSE",
    "ALLOCATE_PRODUCER_IDS_REQUEST", "ALLOCATE_PRODUCER_IDS_RESPONSE",
]

# -- AlterPartition (56): a leader asks the controller to change a partition's ISR (KIP-497) ----

ALTER_PARTITION_REQUEST: Declaration = {
    "apiKey": ApiKey.ALTER_PARTITION,
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
    "apiKey": ApiKey.ALTER_PARTITION,
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
    "apiKey": ApiKey.BROKER_REGISTRATION,
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
    "apiKey": ApiKey.BROKER_REGISTRATION,
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
    "apiKey": ApiKey.BROKER_HEARTBEAT,
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
    "apiKey": ApiKey.BROKER_HEARTBEAT,
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

# -- AllocateProducerIds (67): a broker asks for its next block of producer ids (KIP-730) -------

ALLOCATE_PRODUCER_IDS_REQUEST: Declaration = {
    "apiKey": ApiKey.ALLOCATE_PRODUCER_IDS,
    "type": "request",
    "name": "AllocateProducerIdsRequest",
    "validVersions": "0-0",
    "flexibleVersions": "0+",
    "fields": [
        {"name": "BrokerId", "type": "int32", "versions": "0+"},
        {"name": "BrokerEpoch", "type": "int64", "versions": "0+", "default": -1},
    ],
}

ALLOCATE_PRODUCER_IDS_RESPONSE: Declaration = {
    "apiKey": ApiKey.ALLOCATE_PRODUCER_IDS,
    "type": "response",
    "name": "AllocateProducerIdsResponse",
    "validVersions": "0-0",
    "flexibleVersions": "0+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        # The block: its first id (inclusive) and how many ids it holds.
        {"name": "ProducerIdStart", "type": "int64", "versions": "0+"},
        {"name": "ProducerIdLen", "type": "int32", "versions": "0+"},
    ],
}
