"""Idempotence and transactions: InitProducerId (22); AddPartitionsToTxn (24),
AddOffsetsToTxn (25), EndTxn (26), WriteTxnMarkers (27) and TxnOffsetCommit (28) (KIP-98,
KIP-447, KIP-890); and the transaction admin calls DescribeProducers (61),
DescribeTransactions (65) and ListTransactions (66) (KIP-664).
"""

from __future__ import annotations

from typing import Any

from kafkacore.protocol.api_keys import ApiKey
from kafkacore.protocol.messages.message_spec import Declaration

__all__ = [
    "INIT_PRODUCER_ID_REQUEST", "INIT_PRODUCER_ID_RESPONSE", "ADD_PARTITIONS_TO_TXN_REQUEST",
    "ADD_PARTITIONS_TO_TXN_RESPONSE", "ADD_OFFSETS_TO_TXN_REQUEST", "ADD_OFFSETS_TO_TXN_RESPONSE",
    "END_TXN_REQUEST", "END_TXN_RESPONSE", "WRITE_TXN_MARKERS_REQUEST",
    "WRITE_TXN_MARKERS_RESPONSE", "TXN_OFFSET_COMMIT_REQUEST", "TXN_OFFSET_COMMIT_RESPONSE",
    "DESCRIBE_PRODUCERS_REQUEST", "DESCRIBE_PRODUCERS_RESPONSE", "DESCRIBE_TRANSACTIONS_REQUEST",
    "DESCRIBE_TRANSACTIONS_RESPONSE", "LIST_TRANSACTIONS_REQUEST", "LIST_TRANSACTIONS_RESPONSE",
]

# -- InitProducerId (22) ------------------------------------------------------------------------

INIT_PRODUCER_ID_REQUEST: Declaration = {
    "apiKey": ApiKey.INIT_PRODUCER_ID,
    "type": "request",
    "name": "InitProducerIdRequest",
    # v2 flexible; v3 producer id/epoch (to bump the epoch of an existing producer).
    "validVersions": "0-5",
    "flexibleVersions": "2+",
    "fields": [
        {
            "name": "TransactionalId",
            "type": "string",
            "versions": "0+",
            "nullableVersions": "0+",
        },
        {"name": "TransactionTimeoutMs", "type": "int32", "versions": "0+"},
        {"name": "ProducerId", "type": "int64", "versions": "3+", "default": -1},
        {"name": "ProducerEpoch", "type": "int16", "versions": "3+", "default": -1},
    ],
}

INIT_PRODUCER_ID_RESPONSE: Declaration = {
    "apiKey": ApiKey.INIT_PRODUCER_ID,
    "type": "response",
    "name": "InitProducerIdResponse",
    "validVersions": "0-5",
    "flexibleVersions": "2+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+", "ignorable": True},
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {"name": "ProducerId", "type": "int64", "versions": "0+"},
        {"name": "ProducerEpoch", "type": "int16", "versions": "0+"},
    ],
}

# -- Transactions (KIP-98, KIP-447, KIP-890): AddPartitionsToTxn (24), AddOffsetsToTxn (25),
# EndTxn (26), WriteTxnMarkers (27, coordinator to partition leaders), TxnOffsetCommit (28) ----

_ADD_PARTITIONS_TO_TXN_TOPIC: list[dict[str, Any]] = [
    {"name": "Name", "type": "string", "versions": "0+"},
    {"name": "Partitions", "type": "[]int32", "versions": "0+"},
]

ADD_PARTITIONS_TO_TXN_REQUEST: Declaration = {
    "apiKey": ApiKey.ADD_PARTITIONS_TO_TXN,
    "type": "request",
    "name": "AddPartitionsToTxnRequest",
    # v2 PRODUCER_FENCED; v3 flexible; v4 batches transactions and adds VerifyOnly (the
    # brokers' verification, KIP-890: clients use v3 and below); v5 TRANSACTION_ABORTABLE.
    "validVersions": "0-5",
    "flexibleVersions": "3+",
    "fields": [
        {
            "name": "Transactions",
            "type": "[]AddPartitionsToTxnTransaction",
            "versions": "4+",
            "fields": [
                {"name": "TransactionalId", "type": "string", "versions": "4+"},
                {"name": "ProducerId", "type": "int64", "versions": "4+"},
                {"name": "ProducerEpoch", "type": "int16", "versions": "4+"},
                {"name": "VerifyOnly", "type": "bool", "versions": "4+", "default": False},
                {
                    "name": "Topics",
                    "type": "[]AddPartitionsToTxnTopic",
                    "versions": "4+",
                    "fields": _ADD_PARTITIONS_TO_TXN_TOPIC,
                },
            ],
        },
        {"name": "V3AndBelowTransactionalId", "type": "string", "versions": "0-3"},
        {"name": "V3AndBelowProducerId", "type": "int64", "versions": "0-3"},
        {"name": "V3AndBelowProducerEpoch", "type": "int16", "versions": "0-3"},
        {
            "name": "V3AndBelowTopics",
            "type": "[]AddPartitionsToTxnTopic",
            "versions": "0-3",
            "fields": _ADD_PARTITIONS_TO_TXN_TOPIC,
        },
    ],
}

_ADD_PARTITIONS_TO_TXN_TOPIC_RESULT: list[dict[str, Any]] = [
    {"name": "Name", "type": "string", "versions": "0+"},
    {
        "name": "ResultsByPartition",
        "type": "[]AddPartitionsToTxnPartitionResult",
        "versions": "0+",
        "fields": [
            {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
            {"name": "PartitionErrorCode", "type": "int16", "versions": "0+"},
        ],
    },
]

ADD_PARTITIONS_TO_TXN_RESPONSE: Declaration = {
    "apiKey": ApiKey.ADD_PARTITIONS_TO_TXN,
    "type": "response",
    "name": "AddPartitionsToTxnResponse",
    "validVersions": "0-5",
    "flexibleVersions": "3+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {"name": "ErrorCode", "type": "int16", "versions": "4+", "ignorable": True},
        {
            "name": "ResultsByTransaction",
            "type": "[]AddPartitionsToTxnResult",
            "versions": "4+",
            "fields": [
                {"name": "TransactionalId", "type": "string", "versions": "4+"},
                {
                    "name": "TopicResults",
                    "type": "[]AddPartitionsToTxnTopicResult",
                    "versions": "4+",
                    "fields": _ADD_PARTITIONS_TO_TXN_TOPIC_RESULT,
                },
            ],
        },
        {
            "name": "ResultsByTopicV3AndBelow",
            "type": "[]AddPartitionsToTxnTopicResult",
            "versions": "0-3",
            "fields": _ADD_PARTITIONS_TO_TXN_TOPIC_RESULT,
        },
    ],
}

ADD_OFFSETS_TO_TXN_REQUEST: Declaration = {
    "apiKey": ApiKey.ADD_OFFSETS_TO_TXN,
    "type": "request",
    "name": "AddOffsetsToTxnRequest",
    # v2 PRODUCER_FENCED; v3 flexible; v4 TRANSACTION_ABORTABLE.
    "validVersions": "0-4",
    "flexibleVersions": "3+",
    "fields": [
        {"name": "TransactionalId", "type": "string", "versions": "0+"},
        {"name": "ProducerId", "type": "int64", "versions": "0+"},
        {"name": "ProducerEpoch", "type": "int16", "versions": "0+"},
        {"name": "GroupId", "type": "string", "versions": "0+"},
    ],
}

ADD_OFFSETS_TO_TXN_RESPONSE: Declaration = {
    "apiKey": ApiKey.ADD_OFFSETS_TO_TXN,
    "type": "response",
    "name": "AddOffsetsToTxnResponse",
    "validVersions": "0-4",
    "flexibleVersions": "3+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
    ],
}

END_TXN_REQUEST: Declaration = {
    "apiKey": ApiKey.END_TXN,
    "type": "request",
    "name": "EndTxnRequest",
    # v2 PRODUCER_FENCED; v3 flexible; v4 TRANSACTION_ABORTABLE; v5 the epoch bumped at every
    # transaction's end (KIP-890 part 2, transaction version 2).
    "validVersions": "0-5",
    "flexibleVersions": "3+",
    "fields": [
        {"name": "TransactionalId", "type": "string", "versions": "0+"},
        {"name": "ProducerId", "type": "int64", "versions": "0+"},
        {"name": "ProducerEpoch", "type": "int16", "versions": "0+"},
        {"name": "Committed", "type": "bool", "versions": "0+"},
    ],
}

END_TXN_RESPONSE: Declaration = {
    "apiKey": ApiKey.END_TXN,
    "type": "response",
    "name": "EndTxnResponse",
    "validVersions": "0-5",
    "flexibleVersions": "3+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {"name": "ProducerId", "type": "int64", "versions": "5+", "default": -1,
         "ignorable": True},
        {"name": "ProducerEpoch", "type": "int16", "versions": "5+", "default": -1,
         "ignorable": True},
    ],
}

WRITE_TXN_MARKERS_REQUEST: Declaration = {
    "apiKey": ApiKey.WRITE_TXN_MARKERS,
    "type": "request",
    "name": "WriteTxnMarkersRequest",
    # v0 was removed in Kafka 4.0; v1 flexible; v2 the marker's transaction version.
    "validVersions": "1-2",
    "flexibleVersions": "1+",
    "fields": [
        {
            "name": "Markers",
            "type": "[]WritableTxnMarker",
            "versions": "0+",
            "fields": [
                {"name": "ProducerId", "type": "int64", "versions": "0+"},
                {"name": "ProducerEpoch", "type": "int16", "versions": "0+"},
                {"name": "TransactionResult", "type": "bool", "versions": "0+"},
                {
                    "name": "Topics",
                    "type": "[]WritableTxnMarkerTopic",
                    "versions": "0+",
                    "fields": [
                        {"name": "Name", "type": "string", "versions": "0+"},
                        {"name": "PartitionIndexes", "type": "[]int32", "versions": "0+"},
                    ],
                },
                {"name": "CoordinatorEpoch", "type": "int32", "versions": "0+"},
                {"name": "TransactionVersion", "type": "int8", "versions": "2+", "default": 0,
                 "ignorable": True},
            ],
        },
    ],
}

WRITE_TXN_MARKERS_RESPONSE: Declaration = {
    "apiKey": ApiKey.WRITE_TXN_MARKERS,
    "type": "response",
    "name": "WriteTxnMarkersResponse",
    "validVersions": "1-2",
    "flexibleVersions": "1+",
    "fields": [
        {
            "name": "Markers",
            "type": "[]WritableTxnMarkerResult",
            "versions": "0+",
            "fields": [
                {"name": "ProducerId", "type": "int64", "versions": "0+"},
                {
                    "name": "Topics",
                    "type": "[]WritableTxnMarkerTopicResult",
                    "versions": "0+",
                    "fields": [
                        {"name": "Name", "type": "string", "versions": "0+"},
                        {
                            "name": "Partitions",
                            "type": "[]WritableTxnMarkerPartitionResult",
                            "versions": "0+",
                            "fields": [
                                {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
                                {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                            ],
                        },
                    ],
                },
            ],
        },
    ],
}

TXN_OFFSET_COMMIT_REQUEST: Declaration = {
    "apiKey": ApiKey.TXN_OFFSET_COMMIT,
    "type": "request",
    "name": "TxnOffsetCommitRequest",
    # v2 committed leader epoch; v3 flexible, and the group's generation and member (KIP-447);
    # v4 TRANSACTION_ABORTABLE; v5 the commit checks the partitions were added (KIP-890).
    "validVersions": "0-5",
    "flexibleVersions": "3+",
    "fields": [
        {"name": "TransactionalId", "type": "string", "versions": "0+"},
        {"name": "GroupId", "type": "string", "versions": "0+"},
        {"name": "ProducerId", "type": "int64", "versions": "0+"},
        {"name": "ProducerEpoch", "type": "int16", "versions": "0+"},
        {"name": "GenerationId", "type": "int32", "versions": "3+", "default": -1},
        {"name": "MemberId", "type": "string", "versions": "3+", "default": ""},
        {"name": "GroupInstanceId", "type": "string", "versions": "3+",
         "nullableVersions": "3+", "default": None},
        {
            "name": "Topics",
            "type": "[]TxnOffsetCommitRequestTopic",
            "versions": "0+",
            "fields": [
                {"name": "Name", "type": "string", "versions": "0+"},
                {
                    "name": "Partitions",
                    "type": "[]TxnOffsetCommitRequestPartition",
                    "versions": "0+",
                    "fields": [
                        {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
                        {"name": "CommittedOffset", "type": "int64", "versions": "0+"},
                        {"name": "CommittedLeaderEpoch", "type": "int32", "versions": "2+",
                         "default": -1, "ignorable": True},
                        {"name": "CommittedMetadata", "type": "string", "versions": "0+",
                         "nullableVersions": "0+"},
                    ],
                },
            ],
        },
    ],
}

TXN_OFFSET_COMMIT_RESPONSE: Declaration = {
    "apiKey": ApiKey.TXN_OFFSET_COMMIT,
    "type": "response",
    "name": "TxnOffsetCommitResponse",
    "validVersions": "0-5",
    "flexibleVersions": "3+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {
            "name": "Topics",
            "type": "[]TxnOffsetCommitResponseTopic",
            "versions": "0+",
            "fields": [
                {"name": "Name", "type": "string", "versions": "0+"},
                {
                    "name": "Partitions",
                    "type": "[]TxnOffsetCommitResponsePartition",
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

# -- The transaction admin calls (KIP-664): DescribeProducers (61), DescribeTransactions (65),
# ListTransactions (66) ----------------------------------------------------------------------

DESCRIBE_PRODUCERS_REQUEST: Declaration = {
    "apiKey": ApiKey.DESCRIBE_PRODUCERS,
    "type": "request",
    "name": "DescribeProducersRequest",
    "validVersions": "0",
    "flexibleVersions": "0+",
    "fields": [
        {
            "name": "Topics",
            "type": "[]TopicRequest",
            "versions": "0+",
            "fields": [
                {"name": "Name", "type": "string", "versions": "0+"},
                {"name": "PartitionIndexes", "type": "[]int32", "versions": "0+"},
            ],
        },
    ],
}

DESCRIBE_PRODUCERS_RESPONSE: Declaration = {
    "apiKey": ApiKey.DESCRIBE_PRODUCERS,
    "type": "response",
    "name": "DescribeProducersResponse",
    "validVersions": "0",
    "flexibleVersions": "0+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {
            "name": "Topics",
            "type": "[]TopicResponse",
            "versions": "0+",
            "fields": [
                {"name": "Name", "type": "string", "versions": "0+"},
                {
                    "name": "Partitions",
                    "type": "[]PartitionResponse",
                    "versions": "0+",
                    "fields": [
                        {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
                        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                        {"name": "ErrorMessage", "type": "string", "versions": "0+",
                         "nullableVersions": "0+", "default": None},
                        {
                            "name": "ActiveProducers",
                            "type": "[]ProducerState",
                            "versions": "0+",
                            "fields": [
                                {"name": "ProducerId", "type": "int64", "versions": "0+"},
                                {"name": "ProducerEpoch", "type": "int32", "versions": "0+"},
                                {"name": "LastSequence", "type": "int32", "versions": "0+",
                                 "default": -1},
                                {"name": "LastTimestamp", "type": "int64", "versions": "0+",
                                 "default": -1},
                                {"name": "CoordinatorEpoch", "type": "int32", "versions": "0+"},
                                {"name": "CurrentTxnStartOffset", "type": "int64",
                                 "versions": "0+", "default": -1},
                            ],
                        },
                    ],
                },
            ],
        },
    ],
}

DESCRIBE_TRANSACTIONS_REQUEST: Declaration = {
    "apiKey": ApiKey.DESCRIBE_TRANSACTIONS,
    "type": "request",
    "name": "DescribeTransactionsRequest",
    "validVersions": "0",
    "flexibleVersions": "0+",
    "fields": [
        {"name": "TransactionalIds", "type": "[]string", "versions": "0+"},
    ],
}

DESCRIBE_TRANSACTIONS_RESPONSE: Declaration = {
    "apiKey": ApiKey.DESCRIBE_TRANSACTIONS,
    "type": "response",
    "name": "DescribeTransactionsResponse",
    "validVersions": "0",
    "flexibleVersions": "0+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+", "ignorable": True},
        {
            "name": "TransactionStates",
            "type": "[]TransactionState",
            "versions": "0+",
            "fields": [
                {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                {"name": "TransactionalId", "type": "string", "versions": "0+"},
                {"name": "TransactionState", "type": "string", "versions": "0+"},
                {"name": "TransactionTimeoutMs", "type": "int32", "versions": "0+"},
                {"name": "TransactionStartTimeMs", "type": "int64", "versions": "0+"},
                {"name": "ProducerId", "type": "int64", "versions": "0+"},
                {"name": "ProducerEpoch", "type": "int16", "versions": "0+"},
                {
                    "name": "Topics",
                    "type": "[]TopicData",
                    "versions": "0+",
                    "fields": [
                        {"name": "Topic", "type": "string", "versions": "0+"},
                        {"name": "Partitions", "type": "[]int32", "versions": "0+"},
                    ],
                },
            ],
        },
    ],
}

LIST_TRANSACTIONS_REQUEST: Declaration = {
    "apiKey": ApiKey.LIST_TRANSACTIONS,
    "type": "request",
    "name": "ListTransactionsRequest",
    # v1 a duration filter (KIP-994); v2 a regular expression on the ids (KIP-1152).
    "validVersions": "0-2",
    "flexibleVersions": "0+",
    "fields": [
        {"name": "StateFilters", "type": "[]string", "versions": "0+"},
        {"name": "ProducerIdFilters", "type": "[]int64", "versions": "0+"},
        {"name": "DurationFilter", "type": "int64", "versions": "1+", "default": -1},
        {"name": "TransactionalIdPattern", "type": "string", "versions": "2+",
         "nullableVersions": "2+", "default": None},
    ],
}

LIST_TRANSACTIONS_RESPONSE: Declaration = {
    "apiKey": ApiKey.LIST_TRANSACTIONS,
    "type": "response",
    "name": "ListTransactionsResponse",
    "validVersions": "0-2",
    "flexibleVersions": "0+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {"name": "UnknownStateFilters", "type": "[]string", "versions": "0+"},
        {
            "name": "TransactionStates",
            "type": "[]TransactionState",
            "versions": "0+",
            "fields": [
                {"name": "TransactionalId", "type": "string", "versions": "0+"},
                {"name": "ProducerId", "type": "int64", "versions": "0+"},
                {"name": "TransactionState", "type": "string", "versions": "0+"},
            ],
        },
    ],
}
