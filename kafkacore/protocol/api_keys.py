"""The API keys kafkacore speaks, and the versions of each it supports."""

from __future__ import annotations

import enum


class ApiKey(enum.IntEnum):
    """The number that names a request type in every request header."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    OFFSET_DELETE = 47
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    VOTE = 52
    BEGIN_QUORUM_EPOCH = 53
    END_QUORUM_EPOCH = 54
    DESCRIBE_QUORUM = 55
    ALTER_PARTITION = 56
    FETCH_SNAPSHOT = 59
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    BROKER_REGISTRATION = 62
    BROKER_HEARTBEAT = 63
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    ALLOCATE_PRODUCER_IDS = 67
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    DESCRIBE_TOPIC_PARTITIONS = 75


#: The (lowest, highest) version of each API that kafkacore can encode and decode.  The version
#: used on a connection is the highest one that both we and the broker support (ApiVersions).
#: Produce starts at 3, the first version that carries record batches of magic 2 (the only
#: format we write); Fetch at 4, the first that returns them.
SUPPORTED_VERSIONS: dict[int, tuple[int, int]] = {
    # Produce v12, EndTxn v5 and TxnOffsetCommit v5 are transaction version 2 (KIP-890 part 2):
    # a transactional producer sends them only when the cluster finalized it (see
    # TV1_MAX_VERSIONS).
    ApiKey.PRODUCE: (3, 12),
    ApiKey.FETCH: (4, 17),
    ApiKey.LIST_OFFSETS: (1, 10),
    ApiKey.METADATA: (0, 12),
    ApiKey.OFFSET_COMMIT: (2, 10),
    ApiKey.OFFSET_FETCH: (1, 10),
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.FIND_COORDINATOR: (0, 6),
    ApiKey.CREATE_TOPICS: (0, 7),
    ApiKey.DELETE_TOPICS: (1, 4),
    ApiKey.INIT_PRODUCER_ID: (0, 5),
    # The transactional producer's side (KIP-98): AddPartitionsToTxn v4+ is the brokers' own
    # batched form.
    ApiKey.ADD_PARTITIONS_TO_TXN: (0, 3),
    ApiKey.ADD_OFFSETS_TO_TXN: (0, 4),
    ApiKey.END_TXN: (0, 5),
    ApiKey.TXN_OFFSET_COMMIT: (0, 5),
    ApiKey.DESCRIBE_CONFIGS: (0, 2),
    # v1 wraps the mechanism's tokens in SaslAuthenticate instead of raw frames (KIP-152).
    ApiKey.SASL_HANDSHAKE: (1, 1),
    ApiKey.SASL_AUTHENTICATE: (0, 2),
    # kafkacore.admin's hanging-transaction tools (kafka-transactions.sh find-hanging, abort)
    ApiKey.DESCRIBE_PRODUCERS: (0, 0),
    ApiKey.LIST_TRANSACTIONS: (0, 1),
    ApiKey.DESCRIBE_TRANSACTIONS: (0, 0),
    ApiKey.WRITE_TXN_MARKERS: (1, 1),
}

#: The highest versions a producer sends without transaction version 2: the next ones mean
#: "the leader adds the partition" (Produce), "bump the epoch" (EndTxn), "add the offsets
#: partition" (TxnOffsetCommit).
TV1_MAX_VERSIONS: dict[int, int] = {
    ApiKey.PRODUCE: 11,
    ApiKey.END_TXN: 4,
    ApiKey.TXN_OFFSET_COMMIT: 4,
}
