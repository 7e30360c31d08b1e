"""Every message kafkacore speaks, declared once, as data.

Kafka describes each request and response in a JSON file
(``clients/src/main/resources/common/message/*.json`` in apache/kafka) and generates Java code
from it.  We write the same declarations as Python data, with the same keys, so the two can be
read side by side, and :mod:`kafkacore.protocol.codec` interprets them: one encoder and one decoder
for every message, in both directions (requests and responses).

A declaration is a dict:

``apiKey``, ``type`` (``"request"``, ``"response"`` or ``"header"``), ``name``
    as in Kafka's file.
``validVersions``
    the versions that exist, e.g. ``"0-11"``.
``flexibleVersions``
    the versions that use the compact encodings (unsigned-varint lengths, plus one so that 0 can
    mean null) and end every structure with a buffer of tagged fields.
``fields``
    a list of field dicts:

    ``name``
        Kafka's CamelCase name; our dicts use it in snake_case (``TopicData`` -> ``topic_data``).
    ``type``
        ``int8``, ``int16``, ``uint16``, ``int32``, ``int64``, ``float64``, ``bool``, ``uuid``,
        ``string``, ``bytes``, ``records``, an array ``[]T`` of any of those, an array of
        structures ``[]StructName`` (the field has ``fields``), or a single structure
        ``StructName`` (also with ``fields``).
    ``versions``
        the versions that have the field (``"3+"``, ``"8-10"``, ``"none"``).
    ``nullableVersions``
        the versions in which it may be null (``None`` in Python).
    ``taggedVersions`` and ``tag``
        a tagged field: not in the fixed layout but in the tag buffer, sent only when it differs
        from its default, skippable by a reader that does not know it.
    ``default``
        the value when absent (Kafka's ``"null"`` is ``None`` here).
    ``ignorable``
        true if the encoder may drop a non-default value in a version without the field.
    ``flexibleVersions``
        a per-field override (the request header's client id is never compact).

The ``about`` texts and the options that only matter to Kafka's code generator (``entityType``,
``mapKey``, ``listeners``) are left out.
"""

from __future__ import annotations

from typing import Any

from kafkacore.protocol.api_keys import ApiKey

Declaration = dict[str, Any]

# -- headers ------------------------------------------------------------------------------------

REQUEST_HEADER: Declaration = {
    "type": "header",
    "name": "RequestHeader",
    # v0 has no client id (only ControlledShutdown v0 used it); v1 adds it; v2 is flexible.
    "validVersions": "0-2",
    "flexibleVersions": "2+",
    "fields": [
        {"name": "RequestApiKey", "type": "int16", "versions": "0+"},
        {"name": "RequestApiVersion", "type": "int16", "versions": "0+"},
        {"name": "CorrelationId", "type": "int32", "versions": "0+"},
        # Always the old two-byte length, even in v2: a broker must be able to read the client id
        # of an ApiVersionsRequest of a version it does not know yet.
        {
            "name": "ClientId",
            "type": "string",
            "versions": "1+",
            "nullableVersions": "1+",
            "ignorable": True,
            "flexibleVersions": "none",
        },
    ],
}

RESPONSE_HEADER: Declaration = {
    "type": "header",
    "name": "ResponseHeader",
    "validVersions": "0-1",
    "flexibleVersions": "1+",
    "fields": [
        {"name": "CorrelationId", "type": "int32", "versions": "0+"},
    ],
}

# -- Produce (0) --------------------------------------------------------------------------------

PRODUCE_REQUEST: Declaration = {
    "apiKey": 0,
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
    "apiKey": 0,
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

# -- Fetch (1) ----------------------------------------------------------------------------------

FETCH_REQUEST: Declaration = {
    "apiKey": 1,
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
    "apiKey": 1,
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

# -- ListOffsets (2) ------------------------------------------------------------------------------

LIST_OFFSETS_REQUEST: Declaration = {
    "apiKey": 2,
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
    "apiKey": 2,
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

# -- Metadata (3) -------------------------------------------------------------------------------

METADATA_REQUEST: Declaration = {
    "apiKey": 3,
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
    "apiKey": 3,
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

# -- ApiVersions (18) ---------------------------------------------------------------------------

API_VERSIONS_REQUEST: Declaration = {
    "apiKey": 18,
    "type": "request",
    "name": "ApiVersionsRequest",
    # v3 is flexible and tells the broker the client's software name and version.
    "validVersions": "0-4",
    "flexibleVersions": "3+",
    "fields": [
        {"name": "ClientSoftwareName", "type": "string", "versions": "3+"},
        {"name": "ClientSoftwareVersion", "type": "string", "versions": "3+"},
    ],
}

API_VERSIONS_RESPONSE: Declaration = {
    "apiKey": 18,
    "type": "response",
    "name": "ApiVersionsResponse",
    # NB: whatever the version, the response *header* is v0 (see codec.response_header_version):
    # a client that sent a version the broker does not know must still be able to read it.
    "validVersions": "0-4",
    "flexibleVersions": "3+",
    "fields": [
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {
            "name": "ApiKeys",
            "type": "[]ApiVersion",
            "versions": "0+",
            "fields": [
                {"name": "ApiKey", "type": "int16", "versions": "0+"},
                {"name": "MinVersion", "type": "int16", "versions": "0+"},
                {"name": "MaxVersion", "type": "int16", "versions": "0+"},
            ],
        },
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "1+", "ignorable": True},
        {
            "name": "SupportedFeatures",
            "type": "[]SupportedFeatureKey",
            "versions": "3+",
            "taggedVersions": "3+",
            "tag": 0,
            "ignorable": True,
            "fields": [
                {"name": "Name", "type": "string", "versions": "3+"},
                {"name": "MinVersion", "type": "int16", "versions": "3+"},
                {"name": "MaxVersion", "type": "int16", "versions": "3+"},
            ],
        },
        {
            "name": "FinalizedFeaturesEpoch",
            "type": "int64",
            "versions": "3+",
            "taggedVersions": "3+",
            "tag": 1,
            "default": -1,
            "ignorable": True,
        },
        {
            "name": "FinalizedFeatures",
            "type": "[]FinalizedFeatureKey",
            "versions": "3+",
            "taggedVersions": "3+",
            "tag": 2,
            "ignorable": True,
            "fields": [
                {"name": "Name", "type": "string", "versions": "3+"},
                {"name": "MaxVersionLevel", "type": "int16", "versions": "3+"},
                {"name": "MinVersionLevel", "type": "int16", "versions": "3+"},
            ],
        },
        {
            "name": "ZkMigrationReady",
            "type": "bool",
            "versions": "3+",
            "taggedVersions": "3+",
            "tag": 3,
            "default": False,
            "ignorable": True,
        },
    ],
}

# -- CreateTopics (19) --------------------------------------------------------------------------

CREATE_TOPICS_REQUEST: Declaration = {
    "apiKey": 19,
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
    "apiKey": 19,
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

# -- OffsetCommit (8) ----------------------------------------------------------------------------

OFFSET_COMMIT_REQUEST: Declaration = {
    "apiKey": 8,
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
    "apiKey": 8,
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
    "apiKey": 9,
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
    "apiKey": 9,
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

# -- FindCoordinator (10) ------------------------------------------------------------------------

FIND_COORDINATOR_REQUEST: Declaration = {
    "apiKey": 10,
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
    "apiKey": 10,
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

# -- InitProducerId (22) ------------------------------------------------------------------------

INIT_PRODUCER_ID_REQUEST: Declaration = {
    "apiKey": 22,
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
    "apiKey": 22,
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

# -- DeleteTopics (20) ---------------------------------------------------------------------------

DELETE_TOPICS_REQUEST: Declaration = {
    "apiKey": 20,
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
    "apiKey": 20,
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

# -- DescribeConfigs (32) ------------------------------------------------------------------------

DESCRIBE_CONFIGS_REQUEST: Declaration = {
    "apiKey": 32,
    "type": "request",
    "name": "DescribeConfigsRequest",
    # v1 adds IncludeSynoyms (Kafka's spelling); v2 is v1; v3 adds IncludeDocumentation (and
    # the answer each value's type); v4 is flexible.
    "validVersions": "0-4",
    "flexibleVersions": "4+",
    "fields": [
        {
            "name": "Resources",
            "type": "[]DescribeConfigsResource",
            "versions": "0+",
            "fields": [
                {"name": "ResourceType", "type": "int8", "versions": "0+"},
                {"name": "ResourceName", "type": "string", "versions": "0+"},
                {
                    "name": "ConfigurationKeys",
                    "type": "[]string",
                    "versions": "0+",
                    "nullableVersions": "0+",
                },
            ],
        },
        {"name": "IncludeSynoyms", "type": "bool", "versions": "1+", "default": False},
        {"name": "IncludeDocumentation", "type": "bool", "versions": "3+", "default": False},
    ],
}

DESCRIBE_CONFIGS_RESPONSE: Declaration = {
    "apiKey": 32,
    "type": "response",
    "name": "DescribeConfigsResponse",
    "validVersions": "0-4",
    "flexibleVersions": "4+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {
            "name": "Results",
            "type": "[]DescribeConfigsResult",
            "versions": "0+",
            "fields": [
                {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                {"name": "ErrorMessage", "type": "string", "versions": "0+",
                 "nullableVersions": "0+"},
                {"name": "ResourceType", "type": "int8", "versions": "0+"},
                {"name": "ResourceName", "type": "string", "versions": "0+"},
                {
                    "name": "Configs",
                    "type": "[]DescribeConfigsResourceResult",
                    "versions": "0+",
                    "fields": [
                        {"name": "Name", "type": "string", "versions": "0+"},
                        {"name": "Value", "type": "string", "versions": "0+",
                         "nullableVersions": "0+"},
                        {"name": "ReadOnly", "type": "bool", "versions": "0+"},
                        {"name": "IsDefault", "type": "bool", "versions": "0"},
                        {"name": "ConfigSource", "type": "int8", "versions": "1+",
                         "default": -1, "ignorable": True},
                        {"name": "IsSensitive", "type": "bool", "versions": "0+"},
                        {
                            "name": "Synonyms",
                            "type": "[]DescribeConfigsSynonym",
                            "versions": "1+",
                            "ignorable": True,
                            "fields": [
                                {"name": "Name", "type": "string", "versions": "1+"},
                                {"name": "Value", "type": "string", "versions": "1+",
                                 "nullableVersions": "0+"},
                                {"name": "Source", "type": "int8", "versions": "1+"},
                            ],
                        },
                        {"name": "ConfigType", "type": "int8", "versions": "3+", "default": 0,
                         "ignorable": True},
                        {"name": "Documentation", "type": "string", "versions": "3+",
                         "nullableVersions": "0+", "ignorable": True},
                    ],
                },
            ],
        },
    ],
}

# -- DeleteRecords (21) -------------------------------------------------------------------------

DELETE_RECORDS_REQUEST: Declaration = {
    "apiKey": 21,
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
    "apiKey": 21,
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
    "apiKey": 37,
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
    "apiKey": 37,
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

# -- DescribeCluster (60) -----------------------------------------------------------------------

DESCRIBE_CLUSTER_REQUEST: Declaration = {
    "apiKey": 60,
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
    "apiKey": 60,
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

# -- SaslHandshake (17) and SaslAuthenticate (36) -----------------------------------------------

SASL_HANDSHAKE_REQUEST: Declaration = {
    "apiKey": 17,
    "type": "request",
    "name": "SaslHandshakeRequest",
    # v1: the tokens that follow travel in SaslAuthenticate requests, not as raw frames.
    "validVersions": "0-1",
    "flexibleVersions": "none",
    "fields": [{"name": "Mechanism", "type": "string", "versions": "0+"}],
}

SASL_HANDSHAKE_RESPONSE: Declaration = {
    "apiKey": 17,
    "type": "response",
    "name": "SaslHandshakeResponse",
    "validVersions": "0-1",
    "flexibleVersions": "none",
    "fields": [
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {"name": "Mechanisms", "type": "[]string", "versions": "0+"},
    ],
}

SASL_AUTHENTICATE_REQUEST: Declaration = {
    "apiKey": 36,
    "type": "request",
    "name": "SaslAuthenticateRequest",
    "validVersions": "0-2",
    "flexibleVersions": "2+",
    "fields": [{"name": "AuthBytes", "type": "bytes", "versions": "0+"}],
}

SASL_AUTHENTICATE_RESPONSE: Declaration = {
    "apiKey": 36,
    "type": "response",
    "name": "SaslAuthenticateResponse",
    # v1 adds the session lifetime (KIP-368: the client re-authenticates before it ends).
    "validVersions": "0-2",
    "flexibleVersions": "2+",
    "fields": [
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {"name": "ErrorMessage", "type": "string", "versions": "0+", "nullableVersions": "0+"},
        {"name": "AuthBytes", "type": "bytes", "versions": "0+"},
        {"name": "SessionLifetimeMs", "type": "int64", "versions": "1+", "default": 0},
    ],
}

# -- the classic group protocol: JoinGroup (11), Heartbeat (12), LeaveGroup (13), SyncGroup (14),
# DescribeGroups (15), ListGroups (16) ----------------------------------------------------------

JOIN_GROUP_REQUEST: Declaration = {
    "apiKey": 11,
    "type": "request",
    "name": "JoinGroupRequest",
    # Kafka 4.0 keeps v2+ (KIP-896); v4 a new member first gets its id with MEMBER_ID_REQUIRED
    # (KIP-394); v5 static members (KIP-345); v6 flexible; v8 the reason (KIP-800).
    "validVersions": "2-9",
    "flexibleVersions": "6+",
    "fields": [
        {"name": "GroupId", "type": "string", "versions": "0+"},
        {"name": "SessionTimeoutMs", "type": "int32", "versions": "0+"},
        {"name": "RebalanceTimeoutMs", "type": "int32", "versions": "1+", "default": -1,
         "ignorable": True},
        {"name": "MemberId", "type": "string", "versions": "0+"},
        {"name": "GroupInstanceId", "type": "string", "versions": "5+",
         "nullableVersions": "5+", "default": None},
        {"name": "ProtocolType", "type": "string", "versions": "0+"},
        {
            "name": "Protocols",
            "type": "[]JoinGroupRequestProtocol",
            "versions": "0+",
            "fields": [
                {"name": "Name", "type": "string", "versions": "0+"},
                {"name": "Metadata", "type": "bytes", "versions": "0+"},
            ],
        },
        {"name": "Reason", "type": "string", "versions": "8+", "nullableVersions": "8+",
         "default": None, "ignorable": True},
    ],
}

JOIN_GROUP_RESPONSE: Declaration = {
    "apiKey": 11,
    "type": "response",
    "name": "JoinGroupResponse",
    "validVersions": "2-9",
    "flexibleVersions": "6+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "2+", "ignorable": True},
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {"name": "GenerationId", "type": "int32", "versions": "0+", "default": -1},
        {"name": "ProtocolType", "type": "string", "versions": "7+", "nullableVersions": "7+",
         "default": None, "ignorable": True},
        {"name": "ProtocolName", "type": "string", "versions": "0+", "nullableVersions": "7+"},
        {"name": "Leader", "type": "string", "versions": "0+"},
        {"name": "SkipAssignment", "type": "bool", "versions": "9+", "default": False},
        {"name": "MemberId", "type": "string", "versions": "0+"},
        {
            "name": "Members",
            "type": "[]JoinGroupResponseMember",
            "versions": "0+",
            "fields": [
                {"name": "MemberId", "type": "string", "versions": "0+"},
                {"name": "GroupInstanceId", "type": "string", "versions": "5+",
                 "ignorable": True, "nullableVersions": "5+", "default": None},
                {"name": "Metadata", "type": "bytes", "versions": "0+"},
            ],
        },
    ],
}

HEARTBEAT_REQUEST: Declaration = {
    "apiKey": 12,
    "type": "request",
    "name": "HeartbeatRequest",
    "validVersions": "0-4",
    "flexibleVersions": "4+",
    "fields": [
        {"name": "GroupId", "type": "string", "versions": "0+"},
        {"name": "GenerationId", "type": "int32", "versions": "0+"},
        {"name": "MemberId", "type": "string", "versions": "0+"},
        {"name": "GroupInstanceId", "type": "string", "versions": "3+",
         "nullableVersions": "3+", "default": None},
    ],
}

HEARTBEAT_RESPONSE: Declaration = {
    "apiKey": 12,
    "type": "response",
    "name": "HeartbeatResponse",
    "validVersions": "0-4",
    "flexibleVersions": "4+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "1+", "ignorable": True},
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
    ],
}

LEAVE_GROUP_REQUEST: Declaration = {
    "apiKey": 13,
    "type": "request",
    "name": "LeaveGroupRequest",
    # v3 leaves several members at once (KIP-345); v5 a reason per member (KIP-800).
    "validVersions": "0-5",
    "flexibleVersions": "4+",
    "fields": [
        {"name": "GroupId", "type": "string", "versions": "0+"},
        {"name": "MemberId", "type": "string", "versions": "0-2"},
        {
            "name": "Members",
            "type": "[]MemberIdentity",
            "versions": "3+",
            "fields": [
                {"name": "MemberId", "type": "string", "versions": "3+"},
                {"name": "GroupInstanceId", "type": "string", "versions": "3+",
                 "nullableVersions": "3+", "default": None},
                {"name": "Reason", "type": "string", "versions": "5+",
                 "nullableVersions": "5+", "default": None, "ignorable": True},
            ],
        },
    ],
}

LEAVE_GROUP_RESPONSE: Declaration = {
    "apiKey": 13,
    "type": "response",
    "name": "LeaveGroupResponse",
    "validVersions": "0-5",
    "flexibleVersions": "4+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "1+", "ignorable": True},
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {
            "name": "Members",
            "type": "[]MemberResponse",
            "versions": "3+",
            "fields": [
                {"name": "MemberId", "type": "string", "versions": "3+"},
                {"name": "GroupInstanceId", "type": "string", "versions": "3+",
                 "nullableVersions": "3+"},
                {"name": "ErrorCode", "type": "int16", "versions": "3+"},
            ],
        },
    ],
}

SYNC_GROUP_REQUEST: Declaration = {
    "apiKey": 14,
    "type": "request",
    "name": "SyncGroupRequest",
    # v3 static members; v4 flexible; v5 the protocol type and name, checked by the coordinator.
    "validVersions": "0-5",
    "flexibleVersions": "4+",
    "fields": [
        {"name": "GroupId", "type": "string", "versions": "0+"},
        {"name": "GenerationId", "type": "int32", "versions": "0+"},
        {"name": "MemberId", "type": "string", "versions": "0+"},
        {"name": "GroupInstanceId", "type": "string", "versions": "3+",
         "nullableVersions": "3+", "default": None},
        {"name": "ProtocolType", "type": "string", "versions": "5+", "nullableVersions": "5+",
         "default": None, "ignorable": True},
        {"name": "ProtocolName", "type": "string", "versions": "5+", "nullableVersions": "5+",
         "default": None, "ignorable": True},
        {
            "name": "Assignments",
            "type": "[]SyncGroupRequestAssignment",
            "versions": "0+",
            "fields": [
                {"name": "MemberId", "type": "string", "versions": "0+"},
                {"name": "Assignment", "type": "bytes", "versions": "0+"},
            ],
        },
    ],
}

SYNC_GROUP_RESPONSE: Declaration = {
    "apiKey": 14,
    "type": "response",
    "name": "SyncGroupResponse",
    "validVersions": "0-5",
    "flexibleVersions": "4+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "1+", "ignorable": True},
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {"name": "ProtocolType", "type": "string", "versions": "5+", "nullableVersions": "5+",
         "default": None, "ignorable": True},
        {"name": "ProtocolName", "type": "string", "versions": "5+", "nullableVersions": "5+",
         "default": None, "ignorable": True},
        {"name": "Assignment", "type": "bytes", "versions": "0+"},
    ],
}

DESCRIBE_GROUPS_REQUEST: Declaration = {
    "apiKey": 15,
    "type": "request",
    "name": "DescribeGroupsRequest",
    "validVersions": "0-5",
    "flexibleVersions": "5+",
    "fields": [
        {"name": "Groups", "type": "[]string", "versions": "0+"},
        {"name": "IncludeAuthorizedOperations", "type": "bool", "versions": "3+"},
    ],
}

DESCRIBE_GROUPS_RESPONSE: Declaration = {
    "apiKey": 15,
    "type": "response",
    "name": "DescribeGroupsResponse",
    "validVersions": "0-5",
    "flexibleVersions": "5+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "1+", "ignorable": True},
        {
            "name": "Groups",
            "type": "[]DescribedGroup",
            "versions": "0+",
            "fields": [
                {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                {"name": "GroupId", "type": "string", "versions": "0+"},
                {"name": "GroupState", "type": "string", "versions": "0+"},
                {"name": "ProtocolType", "type": "string", "versions": "0+"},
                {"name": "ProtocolData", "type": "string", "versions": "0+"},
                {
                    "name": "Members",
                    "type": "[]DescribedGroupMember",
                    "versions": "0+",
                    "fields": [
                        {"name": "MemberId", "type": "string", "versions": "0+"},
                        {"name": "GroupInstanceId", "type": "string", "versions": "4+",
                         "ignorable": True, "nullableVersions": "4+", "default": None},
                        {"name": "ClientId", "type": "string", "versions": "0+"},
                        {"name": "ClientHost", "type": "string", "versions": "0+"},
                        {"name": "MemberMetadata", "type": "bytes", "versions": "0+"},
                        {"name": "MemberAssignment", "type": "bytes", "versions": "0+"},
                    ],
                },
                {"name": "AuthorizedOperations", "type": "int32", "versions": "3+",
                 "default": -2147483648},
            ],
        },
    ],
}

LIST_GROUPS_REQUEST: Declaration = {
    "apiKey": 16,
    "type": "request",
    "name": "ListGroupsRequest",
    # v4 filters by state (KIP-518); v5 by type (KIP-848).
    "validVersions": "0-5",
    "flexibleVersions": "3+",
    "fields": [
        {"name": "StatesFilter", "type": "[]string", "versions": "4+"},
        {"name": "TypesFilter", "type": "[]string", "versions": "5+"},
    ],
}

LIST_GROUPS_RESPONSE: Declaration = {
    "apiKey": 16,
    "type": "response",
    "name": "ListGroupsResponse",
    "validVersions": "0-5",
    "flexibleVersions": "3+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "1+", "ignorable": True},
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {
            "name": "Groups",
            "type": "[]ListedGroup",
            "versions": "0+",
            "fields": [
                {"name": "GroupId", "type": "string", "versions": "0+"},
                {"name": "ProtocolType", "type": "string", "versions": "0+"},
                {"name": "GroupState", "type": "string", "versions": "4+", "ignorable": True},
                {"name": "GroupType", "type": "string", "versions": "5+", "ignorable": True},
            ],
        },
    ],
}

# -- DescribeAcls (29), CreateAcls (30), DeleteAcls (31) ----------------------------------------
# Kafka 4 answers v1-3 (v0, without pattern types, was removed by KIP-896); v2 is flexible and
# v3 adds the USER resource type (no new field).

_ACL_FILTER_FIELDS = [
    {"name": "ResourceTypeFilter", "type": "int8", "versions": "0+"},
    {"name": "ResourceNameFilter", "type": "string", "versions": "0+", "nullableVersions": "0+"},
    {"name": "PatternTypeFilter", "type": "int8", "versions": "1+", "default": 3},
    {"name": "PrincipalFilter", "type": "string", "versions": "0+", "nullableVersions": "0+"},
    {"name": "HostFilter", "type": "string", "versions": "0+", "nullableVersions": "0+"},
    {"name": "Operation", "type": "int8", "versions": "0+"},
    {"name": "PermissionType", "type": "int8", "versions": "0+"},
]

DESCRIBE_ACLS_REQUEST: Declaration = {
    "apiKey": 29,
    "type": "request",
    "name": "DescribeAclsRequest",
    "validVersions": "1-3",
    "flexibleVersions": "2+",
    "fields": _ACL_FILTER_FIELDS,
}

DESCRIBE_ACLS_RESPONSE: Declaration = {
    "apiKey": 29,
    "type": "response",
    "name": "DescribeAclsResponse",
    "validVersions": "1-3",
    "flexibleVersions": "2+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {"name": "ErrorMessage", "type": "string", "versions": "0+", "nullableVersions": "0+"},
        {
            "name": "Resources",
            "type": "[]DescribeAclsResource",
            "versions": "0+",
            "fields": [
                {"name": "ResourceType", "type": "int8", "versions": "0+"},
                {"name": "ResourceName", "type": "string", "versions": "0+"},
                {"name": "PatternType", "type": "int8", "versions": "1+", "default": 3},
                {
                    "name": "Acls",
                    "type": "[]AclDescription",
                    "versions": "0+",
                    "fields": [
                        {"name": "Principal", "type": "string", "versions": "0+"},
                        {"name": "Host", "type": "string", "versions": "0+"},
                        {"name": "Operation", "type": "int8", "versions": "0+"},
                        {"name": "PermissionType", "type": "int8", "versions": "0+"},
                    ],
                },
            ],
        },
    ],
}

CREATE_ACLS_REQUEST: Declaration = {
    "apiKey": 30,
    "type": "request",
    "name": "CreateAclsRequest",
    "validVersions": "1-3",
    "flexibleVersions": "2+",
    "fields": [
        {
            "name": "Creations",
            "type": "[]AclCreation",
            "versions": "0+",
            "fields": [
                {"name": "ResourceType", "type": "int8", "versions": "0+"},
                {"name": "ResourceName", "type": "string", "versions": "0+"},
                {"name": "ResourcePatternType", "type": "int8", "versions": "1+", "default": 3},
                {"name": "Principal", "type": "string", "versions": "0+"},
                {"name": "Host", "type": "string", "versions": "0+"},
                {"name": "Operation", "type": "int8", "versions": "0+"},
                {"name": "PermissionType", "type": "int8", "versions": "0+"},
            ],
        },
    ],
}

CREATE_ACLS_RESPONSE: Declaration = {
    "apiKey": 30,
    "type": "response",
    "name": "CreateAclsResponse",
    "validVersions": "1-3",
    "flexibleVersions": "2+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {
            "name": "Results",
            "type": "[]AclCreationResult",
            "versions": "0+",
            "fields": [
                {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                {"name": "ErrorMessage", "type": "string", "versions": "0+",
                 "nullableVersions": "0+"},
            ],
        },
    ],
}

DELETE_ACLS_REQUEST: Declaration = {
    "apiKey": 31,
    "type": "request",
    "name": "DeleteAclsRequest",
    "validVersions": "1-3",
    "flexibleVersions": "2+",
    "fields": [
        {"name": "Filters", "type": "[]DeleteAclsFilter", "versions": "0+",
         "fields": _ACL_FILTER_FIELDS},
    ],
}

DELETE_ACLS_RESPONSE: Declaration = {
    "apiKey": 31,
    "type": "response",
    "name": "DeleteAclsResponse",
    "validVersions": "1-3",
    "flexibleVersions": "2+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {
            "name": "FilterResults",
            "type": "[]DeleteAclsFilterResult",
            "versions": "0+",
            "fields": [
                {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                {"name": "ErrorMessage", "type": "string", "versions": "0+",
                 "nullableVersions": "0+"},
                {
                    "name": "MatchingAcls",
                    "type": "[]DeleteAclsMatchingAcl",
                    "versions": "0+",
                    "fields": [
                        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                        {"name": "ErrorMessage", "type": "string", "versions": "0+",
                         "nullableVersions": "0+"},
                        {"name": "ResourceType", "type": "int8", "versions": "0+"},
                        {"name": "ResourceName", "type": "string", "versions": "0+"},
                        {"name": "PatternType", "type": "int8", "versions": "1+", "default": 3},
                        {"name": "Principal", "type": "string", "versions": "0+"},
                        {"name": "Host", "type": "string", "versions": "0+"},
                        {"name": "Operation", "type": "int8", "versions": "0+"},
                        {"name": "PermissionType", "type": "int8", "versions": "0+"},
                    ],
                },
            ],
        },
    ],
}

# -- Transactions (KIP-98, KIP-447, KIP-890): AddPartitionsToTxn (24), AddOffsetsToTxn (25),
# EndTxn (26), WriteTxnMarkers (27, coordinator to partition leaders), TxnOffsetCommit (28) ----

_ADD_PARTITIONS_TO_TXN_TOPIC: list[dict[str, Any]] = [
    {"name": "Name", "type": "string", "versions": "0+"},
    {"name": "Partitions", "type": "[]int32", "versions": "0+"},
]

ADD_PARTITIONS_TO_TXN_REQUEST: Declaration = {
    "apiKey": 24,
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
    "apiKey": 24,
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
    "apiKey": 25,
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
    "apiKey": 25,
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
    "apiKey": 26,
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
    "apiKey": 26,
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
    "apiKey": 27,
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
    "apiKey": 27,
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
    "apiKey": 28,
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
    "apiKey": 28,
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
    "apiKey": 61,
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
    "apiKey": 61,
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
    "apiKey": 65,
    "type": "request",
    "name": "DescribeTransactionsRequest",
    "validVersions": "0",
    "flexibleVersions": "0+",
    "fields": [
        {"name": "TransactionalIds", "type": "[]string", "versions": "0+"},
    ],
}

DESCRIBE_TRANSACTIONS_RESPONSE: Declaration = {
    "apiKey": 65,
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
    "apiKey": 66,
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
    "apiKey": 66,
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

# -- AlterConfigs (33), IncrementalAlterConfigs (44) ---------------------------------------------


def _alter_configs(api_key: int, name: str, valid: str, flexible: str,
                   incremental: bool) -> tuple[Declaration, Declaration]:
    """AlterConfigs and IncrementalAlterConfigs share their shape; the incremental one gives
    each config an operation (SET, DELETE, APPEND, SUBTRACT)."""
    config_fields: list[dict[str, Any]] = [{"name": "Name", "type": "string", "versions": "0+"}]
    if incremental:
        config_fields.append({"name": "ConfigOperation", "type": "int8", "versions": "0+"})
    config_fields.append({"name": "Value", "type": "string", "versions": "0+",
                          "nullableVersions": "0+"})
    request: Declaration = {
        "apiKey": api_key, "type": "request", "name": f"{name}Request",
        "validVersions": valid, "flexibleVersions": flexible,
        "fields": [
            {"name": "Resources", "type": "[]AlterConfigsResource", "versions": "0+", "fields": [
                {"name": "ResourceType", "type": "int8", "versions": "0+"},
                {"name": "ResourceName", "type": "string", "versions": "0+"},
                {"name": "Configs", "type": "[]AlterableConfig", "versions": "0+",
                 "fields": config_fields},
            ]},
            {"name": "ValidateOnly", "type": "bool", "versions": "0+"},
        ],
    }
    response: Declaration = {
        "apiKey": api_key, "type": "response", "name": f"{name}Response",
        "validVersions": valid, "flexibleVersions": flexible,
        "fields": [
            {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
            {"name": "Responses", "type": "[]AlterConfigsResourceResponse", "versions": "0+",
             "fields": [
                 {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                 {"name": "ErrorMessage", "type": "string", "versions": "0+",
                  "nullableVersions": "0+"},
                 {"name": "ResourceType", "type": "int8", "versions": "0+"},
                 {"name": "ResourceName", "type": "string", "versions": "0+"},
             ]},
        ],
    }
    return request, response


# v1 is v0; v2 is flexible.
ALTER_CONFIGS_REQUEST, ALTER_CONFIGS_RESPONSE = _alter_configs(
    ApiKey.ALTER_CONFIGS, "AlterConfigs", "0-2", "2+", incremental=False)
# v1 is flexible.
INCREMENTAL_ALTER_CONFIGS_REQUEST, INCREMENTAL_ALTER_CONFIGS_RESPONSE = _alter_configs(
    ApiKey.INCREMENTAL_ALTER_CONFIGS, "IncrementalAlterConfigs", "0-1", "1+", incremental=True)

# -- DescribeClientQuotas (48), AlterClientQuotas (49) -------------------------------------------

#: an entity: its (type, name) pairs; a null name is the type's default (KIP-546)
_QUOTA_ENTITY = [{"name": "EntityType", "type": "string", "versions": "0+"},
                 {"name": "EntityName", "type": "string", "versions": "0+",
                  "nullableVersions": "0+"}]

# v1 is flexible.
DESCRIBE_CLIENT_QUOTAS_REQUEST: Declaration = {
    "apiKey": 48, "type": "request", "name": "DescribeClientQuotasRequest",
    "validVersions": "0-1", "flexibleVersions": "1+",
    "fields": [
        {"name": "Components", "type": "[]ComponentData", "versions": "0+", "fields": [
            {"name": "EntityType", "type": "string", "versions": "0+"},
            {"name": "MatchType", "type": "int8", "versions": "0+"},
            {"name": "Match", "type": "string", "versions": "0+", "nullableVersions": "0+"},
        ]},
        {"name": "Strict", "type": "bool", "versions": "0+"},
    ],
}

DESCRIBE_CLIENT_QUOTAS_RESPONSE: Declaration = {
    "apiKey": 48, "type": "response", "name": "DescribeClientQuotasResponse",
    "validVersions": "0-1", "flexibleVersions": "1+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {"name": "ErrorMessage", "type": "string", "versions": "0+", "nullableVersions": "0+"},
        {"name": "Entries", "type": "[]EntryData", "versions": "0+", "nullableVersions": "0+",
         "fields": [
             {"name": "Entity", "type": "[]EntityData", "versions": "0+",
              "fields": _QUOTA_ENTITY},
             {"name": "Values", "type": "[]ValueData", "versions": "0+", "fields": [
                 {"name": "Key", "type": "string", "versions": "0+"},
                 {"name": "Value", "type": "float64", "versions": "0+"},
             ]},
         ]},
    ],
}

# v1 is flexible.
ALTER_CLIENT_QUOTAS_REQUEST: Declaration = {
    "apiKey": 49, "type": "request", "name": "AlterClientQuotasRequest",
    "validVersions": "0-1", "flexibleVersions": "1+",
    "fields": [
        {"name": "Entries", "type": "[]EntryData", "versions": "0+", "fields": [
            {"name": "Entity", "type": "[]EntityData", "versions": "0+", "fields": _QUOTA_ENTITY},
            {"name": "Ops", "type": "[]OpData", "versions": "0+", "fields": [
                {"name": "Key", "type": "string", "versions": "0+"},
                {"name": "Value", "type": "float64", "versions": "0+"},
                {"name": "Remove", "type": "bool", "versions": "0+"},
            ]},
        ]},
        {"name": "ValidateOnly", "type": "bool", "versions": "0+"},
    ],
}

ALTER_CLIENT_QUOTAS_RESPONSE: Declaration = {
    "apiKey": 49, "type": "response", "name": "AlterClientQuotasResponse",
    "validVersions": "0-1", "flexibleVersions": "1+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {"name": "Entries", "type": "[]EntryData", "versions": "0+", "fields": [
            {"name": "ErrorCode", "type": "int16", "versions": "0+"},
            {"name": "ErrorMessage", "type": "string", "versions": "0+",
             "nullableVersions": "0+"},
            {"name": "Entity", "type": "[]EntityData", "versions": "0+", "fields": _QUOTA_ENTITY},
        ]},
    ],
}

# -- DeleteGroups (42), OffsetDelete (47) -------------------------------------------------------

DELETE_GROUPS_REQUEST: Declaration = {
    "apiKey": 42, "type": "request", "name": "DeleteGroupsRequest",
    # v1 is v0; v2 is flexible.
    "validVersions": "0-2", "flexibleVersions": "2+",
    "fields": [{"name": "GroupsNames", "type": "[]string", "versions": "0+"}],
}

DELETE_GROUPS_RESPONSE: Declaration = {
    "apiKey": 42, "type": "response", "name": "DeleteGroupsResponse",
    "validVersions": "0-2", "flexibleVersions": "2+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {"name": "Results", "type": "[]DeletableGroupResult", "versions": "0+", "fields": [
            {"name": "GroupId", "type": "string", "versions": "0+"},
            {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        ]},
    ],
}

OFFSET_DELETE_REQUEST: Declaration = {
    "apiKey": 47, "type": "request", "name": "OffsetDeleteRequest",
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
    "apiKey": 47, "type": "response", "name": "OffsetDeleteResponse",
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

# -- DescribeLogDirs (35) -----------------------------------------------------------------------

DESCRIBE_LOG_DIRS_REQUEST: Declaration = {
    "apiKey": 35, "type": "request", "name": "DescribeLogDirsRequest",
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
    "apiKey": 35, "type": "response", "name": "DescribeLogDirsResponse",
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
    "apiKey": 43, "type": "request", "name": "ElectLeadersRequest",
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
    "apiKey": 43, "type": "response", "name": "ElectLeadersResponse",
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

# -- DescribeTopicPartitions (75, KIP-966) ------------------------------------------------------

_CURSOR: list[dict[str, Any]] = [
    {"name": "TopicName", "type": "string", "versions": "0+"},
    {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
]

DESCRIBE_TOPIC_PARTITIONS_REQUEST: Declaration = {
    "apiKey": 75, "type": "request", "name": "DescribeTopicPartitionsRequest",
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
    "apiKey": 75, "type": "response", "name": "DescribeTopicPartitionsResponse",
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

# -- AlterPartitionReassignments (45), ListPartitionReassignments (46) --------------------------

ALTER_PARTITION_REASSIGNMENTS_REQUEST: Declaration = {
    "apiKey": 45, "type": "request", "name": "AlterPartitionReassignmentsRequest",
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
    "apiKey": 45, "type": "response", "name": "AlterPartitionReassignmentsResponse",
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
    "apiKey": 46, "type": "request", "name": "ListPartitionReassignmentsRequest",
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
    "apiKey": 46, "type": "response", "name": "ListPartitionReassignmentsResponse",
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
MESSAGES: dict[int, tuple[Declaration, Declaration]] = {
    ApiKey.PRODUCE: (PRODUCE_REQUEST, PRODUCE_RESPONSE),
    ApiKey.FETCH: (FETCH_REQUEST, FETCH_RESPONSE),
    ApiKey.LIST_OFFSETS: (LIST_OFFSETS_REQUEST, LIST_OFFSETS_RESPONSE),
    ApiKey.METADATA: (METADATA_REQUEST, METADATA_RESPONSE),
    ApiKey.OFFSET_COMMIT: (OFFSET_COMMIT_REQUEST, OFFSET_COMMIT_RESPONSE),
    ApiKey.OFFSET_FETCH: (OFFSET_FETCH_REQUEST, OFFSET_FETCH_RESPONSE),
    ApiKey.API_VERSIONS: (API_VERSIONS_REQUEST, API_VERSIONS_RESPONSE),
    ApiKey.FIND_COORDINATOR: (FIND_COORDINATOR_REQUEST, FIND_COORDINATOR_RESPONSE),
    ApiKey.CREATE_TOPICS: (CREATE_TOPICS_REQUEST, CREATE_TOPICS_RESPONSE),
    ApiKey.DELETE_TOPICS: (DELETE_TOPICS_REQUEST, DELETE_TOPICS_RESPONSE),
    ApiKey.DESCRIBE_CONFIGS: (DESCRIBE_CONFIGS_REQUEST, DESCRIBE_CONFIGS_RESPONSE),
    ApiKey.CREATE_PARTITIONS: (CREATE_PARTITIONS_REQUEST, CREATE_PARTITIONS_RESPONSE),
    ApiKey.DELETE_RECORDS: (DELETE_RECORDS_REQUEST, DELETE_RECORDS_RESPONSE),
    ApiKey.DESCRIBE_CLUSTER: (DESCRIBE_CLUSTER_REQUEST, DESCRIBE_CLUSTER_RESPONSE),
    ApiKey.INIT_PRODUCER_ID: (INIT_PRODUCER_ID_REQUEST, INIT_PRODUCER_ID_RESPONSE),
    ApiKey.SASL_HANDSHAKE: (SASL_HANDSHAKE_REQUEST, SASL_HANDSHAKE_RESPONSE),
    ApiKey.SASL_AUTHENTICATE: (SASL_AUTHENTICATE_REQUEST, SASL_AUTHENTICATE_RESPONSE),
    ApiKey.JOIN_GROUP: (JOIN_GROUP_REQUEST, JOIN_GROUP_RESPONSE),
    ApiKey.HEARTBEAT: (HEARTBEAT_REQUEST, HEARTBEAT_RESPONSE),
    ApiKey.LEAVE_GROUP: (LEAVE_GROUP_REQUEST, LEAVE_GROUP_RESPONSE),
    ApiKey.SYNC_GROUP: (SYNC_GROUP_REQUEST, SYNC_GROUP_RESPONSE),
    ApiKey.DESCRIBE_GROUPS: (DESCRIBE_GROUPS_REQUEST, DESCRIBE_GROUPS_RESPONSE),
    ApiKey.LIST_GROUPS: (LIST_GROUPS_REQUEST, LIST_GROUPS_RESPONSE),
    ApiKey.ADD_PARTITIONS_TO_TXN: (ADD_PARTITIONS_TO_TXN_REQUEST, ADD_PARTITIONS_TO_TXN_RESPONSE),
    ApiKey.ADD_OFFSETS_TO_TXN: (ADD_OFFSETS_TO_TXN_REQUEST, ADD_OFFSETS_TO_TXN_RESPONSE),
    ApiKey.END_TXN: (END_TXN_REQUEST, END_TXN_RESPONSE),
    ApiKey.WRITE_TXN_MARKERS: (WRITE_TXN_MARKERS_REQUEST, WRITE_TXN_MARKERS_RESPONSE),
    ApiKey.TXN_OFFSET_COMMIT: (TXN_OFFSET_COMMIT_REQUEST, TXN_OFFSET_COMMIT_RESPONSE),
    ApiKey.DESCRIBE_PRODUCERS: (DESCRIBE_PRODUCERS_REQUEST, DESCRIBE_PRODUCERS_RESPONSE),
    ApiKey.DESCRIBE_TRANSACTIONS: (DESCRIBE_TRANSACTIONS_REQUEST,
                                   DESCRIBE_TRANSACTIONS_RESPONSE),
    ApiKey.LIST_TRANSACTIONS: (LIST_TRANSACTIONS_REQUEST, LIST_TRANSACTIONS_RESPONSE),
    ApiKey.DESCRIBE_ACLS: (DESCRIBE_ACLS_REQUEST, DESCRIBE_ACLS_RESPONSE),
    ApiKey.CREATE_ACLS: (CREATE_ACLS_REQUEST, CREATE_ACLS_RESPONSE),
    ApiKey.DELETE_ACLS: (DELETE_ACLS_REQUEST, DELETE_ACLS_RESPONSE),
    ApiKey.ALTER_CONFIGS: (ALTER_CONFIGS_REQUEST, ALTER_CONFIGS_RESPONSE),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (INCREMENTAL_ALTER_CONFIGS_REQUEST,
                                       INCREMENTAL_ALTER_CONFIGS_RESPONSE),
    ApiKey.DELETE_GROUPS: (DELETE_GROUPS_REQUEST, DELETE_GROUPS_RESPONSE),
    ApiKey.OFFSET_DELETE: (OFFSET_DELETE_REQUEST, OFFSET_DELETE_RESPONSE),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (DESCRIBE_CLIENT_QUOTAS_REQUEST,
                                    DESCRIBE_CLIENT_QUOTAS_RESPONSE),
    ApiKey.ALTER_CLIENT_QUOTAS: (ALTER_CLIENT_QUOTAS_REQUEST, ALTER_CLIENT_QUOTAS_RESPONSE),
    ApiKey.DESCRIBE_LOG_DIRS: (DESCRIBE_LOG_DIRS_REQUEST, DESCRIBE_LOG_DIRS_RESPONSE),
    ApiKey.ELECT_LEADERS: (ELECT_LEADERS_REQUEST, ELECT_LEADERS_RESPONSE),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: (DESCRIBE_TOPIC_PARTITIONS_REQUEST,
                                       DESCRIBE_TOPIC_PARTITIONS_RESPONSE),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (ALTER_PARTITION_REASSIGNMENTS_REQUEST,
                                           ALTER_PARTITION_REASSIGNMENTS_RESPONSE),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (LIST_PARTITION_REASSIGNMENTS_REQUEST,
                                          LIST_PARTITION_REASSIGNMENTS_RESPONSE),
}

# Broker-to-broker and broker-to-controller messages (kafkacore.protocol.messages.controller).
from kafkacore.protocol.messages.controller import INTER_BROKER_MESSAGES  # noqa: E402

MESSAGES.update(INTER_BROKER_MESSAGES)

# The consumer group protocol (KIP-848): kafkacore.protocol.messages.consumer_group.
from kafkacore.protocol.messages.consumer_group import CONSUMER_GROUP_MESSAGES  # noqa: E402

MESSAGES.update(CONSUMER_GROUP_MESSAGES)
