"""Produce (0): a producer's record batches to the partitions' leaders (``ProduceRequest.json``,
``ProduceResponse.json``).
"""

from __future__ import annotations

from kafkacore.protocol.api_keys import ApiKey
from kafkacore.protocol.messages.message_spec import Declaration

__all__ = [
    "PRODUCE_REQUEST", "PRODUCE_RESPONSE",
]

# -- Produce (0) --------------------------------------------------------------------------------

PRODUCE_REQUEST: Declaration = {
    "apiKey": ApiKey.PRODUCE,
    "type": "request",
    "name": "ProduceRequest",
    # v3 adds the transactional id and record batches (magic 2); v9 is flexible; v10 is v9;
    # v11 adds TRANSACTION_ABORTABLE; v12 is v11 sent by a transaction version 2 producer: the
    # leader adds the partition to the transaction itself (KIP-890 part 2).
    "validVersions": "0-12",
    "flexibleVersions": "9+",
    "fields": [
        {
            "name": "TransactionalId",
            "type": "string",
            "versions": "3+",
            "nullableVersions": "3+",
            "default": None,
        },
        {"name": "Acks", "type": "int16", "versions": "0+"},
        {"name": "TimeoutMs", "type": "int32", "versions": "0+"},
        {
            "name": "TopicData",
            "type": "[]TopicProduceData",
            "versions": "0+",
            "fields": [
                {"name": "Name", "type": "string", "versions": "0+"},
                {
                    "name": "PartitionData",
                    "type": "[]PartitionProduceData",
                    "versions": "0+",
                    "fields": [
                        {"name": "Index", "type": "int32", "versions": "0+"},
                        # The record batches, passed through without a copy (see codec).
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
    ],
}

PRODUCE_RESPONSE: Declaration = {
    "apiKey": ApiKey.PRODUCE,
    "type": "response",
    "name": "ProduceResponse",
    # v1 throttle time; v2 log append time; v5 log start offset; v8 record errors; v9 flexible;
    # v10 tagged CurrentLeader and NodeEndpoints (KIP-951); v12 is v11.
    "validVersions": "0-12",
    "flexibleVersions": "9+",
    "fields": [
        {
            "name": "Responses",
            "type": "[]TopicProduceResponse",
            "versions": "0+",
            "fields": [
                {"name": "Name", "type": "string", "versions": "0+"},
                {
                    "name": "PartitionResponses",
                    "type": "[]PartitionProduceResponse",
                    "versions": "0+",
                    "fields": [
                        {"name": "Index", "type": "int32", "versions": "0+"},
                        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                        {"name": "BaseOffset", "type": "int64", "versions": "0+"},
                        {
                            "name": "LogAppendTimeMs",
                            "type": "int64",
                            "versions": "2+",
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
                            "name": "RecordErrors",
                            "type": "[]BatchIndexAndErrorMessage",
                            "versions": "8+",
                            "ignorable": True,
                            "fields": [
                                {"name": "BatchIndex", "type": "int32", "versions": "8+"},
                                {
                                    "name": "BatchIndexErrorMessage",
                                    "type": "string",
                                    "versions": "8+",
                                    "nullableVersions": "8+",
                                    "default": None,
                                },
                            ],
                        },
                        {
                            "name": "ErrorMessage",
                            "type": "string",
                            "versions": "8+",
                            "nullableVersions": "8+",
                            "default": None,
                            "ignorable": True,
                        },
                        {
                            "name": "CurrentLeader",
                            "type": "LeaderIdAndEpoch",
                            "versions": "10+",
                            "taggedVersions": "10+",
                            "tag": 0,
                            "fields": [
                                {
                                    "name": "LeaderId",
                                    "type": "int32",
                                    "versions": "10+",
                                    "default": -1,
                                },
                                {
                                    "name": "LeaderEpoch",
                                    "type": "int32",
                                    "versions": "10+",
                                    "default": -1,
                                },
                            ],
                        },
                    ],
                },
            ],
        },
        {
            "name": "ThrottleTimeMs",
            "type": "int32",
            "versions": "1+",
            "ignorable": True,
            "default": 0,
        },
        {
            "name": "NodeEndpoints",
            "type": "[]NodeEndpoint",
            "versions": "10+",
            "taggedVersions": "10+",
            "tag": 0,
            "fields": [
                {"name": "NodeId", "type": "int32", "versions": "10+"},
                {"name": "Host", "type": "string", "versions": "10+"},
                {"name": "Port", "type": "int32", "versions": "10+"},
                {
                    "name": "Rack",
                    "type": "string",
                    "versions": "10+",
                    "nullableVersions": "10+",
                    "default": None,
                },
            ],
        },
    ],
}
