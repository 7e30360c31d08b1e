"""The controller quorum's messages (KRaft, KIP-595): DescribeQuorum (55), which any client may
send to a broker (forwarded to the controller) or a controller to learn the ``__cluster_metadata``
partition's leader, its epoch, its high watermark, and how far each voter and observer has
fetched.  v1 adds each replica's last fetch and caught-up times (KIP-836), v2 the error messages,
each replica's directory id and the voters' endpoints (KIP-853).

The votes and epochs the controllers exchange among themselves (KIP-595): Vote (52),
BeginQuorumEpoch (53) and EndQuorumEpoch (54), version 0 of each (the voters are fixed by
``controller.quorum.voters``; v1's directory ids and endpoints are KIP-853's, which we do not
do), but for Vote v2, whose ``PreVote`` is KIP-996's (Vote v1's fields are declared, for v2 has
them, and left at their defaults).  The quorum's replication itself travels in Fetch
(``fetch.py``), whose v12+ fields (``LastFetchedEpoch``, ``DivergingEpoch``, ``CurrentLeader``)
are KIP-595's, and its ``SnapshotId`` KIP-630's: a voter too far behind then fetches the
leader's snapshot in chunks with FetchSnapshot (59, v0).  See docs/broker/quorum.rst.
"""

from __future__ import annotations

from kafkacore.protocol.api_keys import ApiKey
from kafkacore.protocol.messages.message_spec import Declaration

__all__ = [
    "BEGIN_QUORUM_EPOCH_REQUEST", "BEGIN_QUORUM_EPOCH_RESPONSE",
    "DESCRIBE_QUORUM_REQUEST", "DESCRIBE_QUORUM_RESPONSE",
    "END_QUORUM_EPOCH_REQUEST", "END_QUORUM_EPOCH_RESPONSE",
    "FETCH_SNAPSHOT_REQUEST", "FETCH_SNAPSHOT_RESPONSE",
    "VOTE_REQUEST", "VOTE_RESPONSE",
]


def _topics(partition_fields: list[dict[str, object]], versions: str = "0+",
            ) -> dict[str, object]:
    """The ``Topics`` array every quorum message has (one topic, ``__cluster_metadata``, with
    one partition in practice)."""
    return {
        "name": "Topics",
        "type": "[]TopicData",
        "versions": versions,
        "fields": [
            {"name": "TopicName", "type": "string", "versions": versions},
            {"name": "Partitions", "type": "[]PartitionData", "versions": versions,
             "fields": [{"name": "PartitionIndex", "type": "int32", "versions": versions},
                        *partition_fields]},
        ],
    }


_CLUSTER_ID = {"name": "ClusterId", "type": "string", "versions": "0+",
               "nullableVersions": "0+", "default": None}

# -- Vote (52) -----------------------------------------------------------------------------------

VOTE_REQUEST: Declaration = {
    "apiKey": ApiKey.VOTE,
    "type": "request",
    "name": "VoteRequest",
    # v1 adds the voters' directory ids (KIP-853), v2 the pre-vote (KIP-996).
    "validVersions": "0-2",
    "flexibleVersions": "0+",
    "fields": [
        _CLUSTER_ID,
        {"name": "VoterId", "type": "int32", "versions": "1+", "ignorable": True,
         "default": -1},
        _topics([
            # A pre-vote's is the sender's current epoch (not raised); a vote's, the candidate's.
            {"name": "CandidateEpoch", "type": "int32", "versions": "0+"},
            {"name": "CandidateId", "type": "int32", "versions": "0+"},
            {"name": "CandidateDirectoryId", "type": "uuid", "versions": "1+", "ignorable": True},
            {"name": "VoterDirectoryId", "type": "uuid", "versions": "1+", "ignorable": True},
            # The candidate's last entry: a vote goes only to a log at least as up to date.
            {"name": "LastOffsetEpoch", "type": "int32", "versions": "0+"},
            {"name": "LastOffset", "type": "int64", "versions": "0+"},
            # Would the voter vote for it in the next epoch?  Nothing is persisted.
            {"name": "PreVote", "type": "bool", "versions": "2+"},
        ]),
    ],
}

VOTE_RESPONSE: Declaration = {
    "apiKey": ApiKey.VOTE,
    "type": "response",
    "name": "VoteResponse",
    "validVersions": "0-2",
    "flexibleVersions": "0+",
    "fields": [
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        _topics([
            {"name": "ErrorCode", "type": "int16", "versions": "0+"},
            {"name": "LeaderId", "type": "int32", "versions": "0+"},
            {"name": "LeaderEpoch", "type": "int32", "versions": "0+"},
            {"name": "VoteGranted", "type": "bool", "versions": "0+"},
        ]),
        # The leaders' endpoints (KIP-853): ours are fixed by controller.quorum.voters.
        {"name": "NodeEndpoints", "type": "[]NodeEndpoint", "versions": "1+",
         "taggedVersions": "1+", "tag": 0, "fields": [
             {"name": "NodeId", "type": "int32", "versions": "1+"},
             {"name": "Host", "type": "string", "versions": "1+"},
             {"name": "Port", "type": "uint16", "versions": "1+"},
         ]},
    ],
}

# -- BeginQuorumEpoch (53) -------------------------------------------------------------------------

BEGIN_QUORUM_EPOCH_REQUEST: Declaration = {
    "apiKey": ApiKey.BEGIN_QUORUM_EPOCH,
    "type": "request",
    "name": "BeginQuorumEpochRequest",
    "validVersions": "0",
    "flexibleVersions": "none",
    "fields": [
        _CLUSTER_ID,
        _topics([
            {"name": "LeaderId", "type": "int32", "versions": "0+"},
            {"name": "LeaderEpoch", "type": "int32", "versions": "0+"},
        ]),
    ],
}


def _epoch_response(name: str, api_key: ApiKey) -> Declaration:
    """BeginQuorumEpoch's and EndQuorumEpoch's answer: what the voter knows of the epoch."""
    return {
        "apiKey": api_key,
        "type": "response",
        "name": name,
        "validVersions": "0",
        "flexibleVersions": "none",
        "fields": [
            {"name": "ErrorCode", "type": "int16", "versions": "0+"},
            _topics([
                {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                {"name": "LeaderId", "type": "int32", "versions": "0+"},
                {"name": "LeaderEpoch", "type": "int32", "versions": "0+"},
            ]),
        ],
    }


BEGIN_QUORUM_EPOCH_RESPONSE = _epoch_response("BeginQuorumEpochResponse",
                                              ApiKey.BEGIN_QUORUM_EPOCH)

# -- EndQuorumEpoch (54) ---------------------------------------------------------------------------

END_QUORUM_EPOCH_REQUEST: Declaration = {
    "apiKey": ApiKey.END_QUORUM_EPOCH,
    "type": "request",
    "name": "EndQuorumEpochRequest",
    "validVersions": "0",
    "flexibleVersions": "none",
    "fields": [
        _CLUSTER_ID,
        _topics([
            {"name": "LeaderId", "type": "int32", "versions": "0+"},
            {"name": "LeaderEpoch", "type": "int32", "versions": "0+"},
            # The best successors first: they stand sooner.
            {"name": "PreferredSuccessors", "type": "[]int32", "versions": "0+"},
        ]),
    ],
}

END_QUORUM_EPOCH_RESPONSE = _epoch_response("EndQuorumEpochResponse", ApiKey.END_QUORUM_EPOCH)

# -- DescribeQuorum (55) -----------------------------------------------------------------------

DESCRIBE_QUORUM_REQUEST: Declaration = {
    "apiKey": ApiKey.DESCRIBE_QUORUM,
    "type": "request",
    "name": "DescribeQuorumRequest",
    # v1 and v2 change only the response (KIP-836, KIP-853).
    "validVersions": "0-2",
    "flexibleVersions": "0+",
    "fields": [
        {
            "name": "Topics",
            "type": "[]TopicData",
            "versions": "0+",
            "fields": [
                {"name": "TopicName", "type": "string", "versions": "0+"},
                {
                    "name": "Partitions",
                    "type": "[]PartitionData",
                    "versions": "0+",
                    "fields": [
                        {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
                    ],
                },
            ],
        },
    ],
}


def _replica_state() -> list[dict[str, object]]:
    """Kafka's common struct ``ReplicaState``: a voter's or an observer's progress (each array
    of them gets its own copy of the fields)."""
    return [
        {"name": "ReplicaId", "type": "int32", "versions": "0+"},
        {"name": "ReplicaDirectoryId", "type": "uuid", "versions": "2+"},
        {"name": "LogEndOffset", "type": "int64", "versions": "0+"},
        {"name": "LastFetchTimestamp", "type": "int64", "versions": "1+", "ignorable": True,
         "default": -1},
        {"name": "LastCaughtUpTimestamp", "type": "int64", "versions": "1+", "ignorable": True,
         "default": -1},
    ]


DESCRIBE_QUORUM_RESPONSE: Declaration = {
    "apiKey": ApiKey.DESCRIBE_QUORUM,
    "type": "response",
    "name": "DescribeQuorumResponse",
    "validVersions": "0-2",
    "flexibleVersions": "0+",
    "fields": [
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {"name": "ErrorMessage", "type": "string", "versions": "2+", "nullableVersions": "2+",
         "ignorable": True},
        {
            "name": "Topics",
            "type": "[]TopicData",
            "versions": "0+",
            "fields": [
                {"name": "TopicName", "type": "string", "versions": "0+"},
                {
                    "name": "Partitions",
                    "type": "[]PartitionData",
                    "versions": "0+",
                    "fields": [
                        {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
                        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                        {"name": "ErrorMessage", "type": "string", "versions": "2+",
                         "nullableVersions": "2+", "ignorable": True},
                        {"name": "LeaderId", "type": "int32", "versions": "0+"},
                        {"name": "LeaderEpoch", "type": "int32", "versions": "0+"},
                        {"name": "HighWatermark", "type": "int64", "versions": "0+"},
                        {"name": "CurrentVoters", "type": "[]ReplicaState", "versions": "0+",
                         "fields": _replica_state()},
                        {"name": "Observers", "type": "[]ReplicaState", "versions": "0+",
                         "fields": _replica_state()},
                    ],
                },
            ],
        },
        {
            "name": "Nodes",
            "type": "[]Node",
            "versions": "2+",
            "fields": [
                {"name": "NodeId", "type": "int32", "versions": "2+"},
                {
                    "name": "Listeners",
                    "type": "[]Listener",
                    "versions": "2+",
                    "fields": [
                        {"name": "Name", "type": "string", "versions": "2+"},
                        {"name": "Host", "type": "string", "versions": "2+"},
                        {"name": "Port", "type": "uint16", "versions": "2+"},
                    ],
                },
            ],
        },
    ],
}

# -- FetchSnapshot (59): a chunk of the leader's snapshot (KIP-630) --------------------------------

_SNAPSHOT_ID = {"name": "SnapshotId", "type": "SnapshotId", "versions": "0+", "fields": [
    {"name": "EndOffset", "type": "int64", "versions": "0+"},
    {"name": "Epoch", "type": "int32", "versions": "0+"},
]}

FETCH_SNAPSHOT_REQUEST: Declaration = {
    "apiKey": ApiKey.FETCH_SNAPSHOT,
    "type": "request",
    "name": "FetchSnapshotRequest",
    # v1's replica directory id is KIP-853's.
    "validVersions": "0",
    "flexibleVersions": "0+",
    "fields": [
        {"name": "ClusterId", "type": "string", "versions": "0+", "nullableVersions": "0+",
         "default": None, "taggedVersions": "0+", "tag": 0},
        {"name": "ReplicaId", "type": "int32", "versions": "0+", "default": -1},
        # The most bytes of snapshot the answer may carry.
        {"name": "MaxBytes", "type": "int32", "versions": "0+", "default": 0x7FFFFFFF},
        {"name": "Topics", "type": "[]TopicSnapshot", "versions": "0+", "fields": [
            {"name": "Name", "type": "string", "versions": "0+"},
            {"name": "Partitions", "type": "[]PartitionSnapshot", "versions": "0+", "fields": [
                {"name": "Partition", "type": "int32", "versions": "0+"},
                {"name": "CurrentLeaderEpoch", "type": "int32", "versions": "0+"},
                _SNAPSHOT_ID,
                {"name": "Position", "type": "int64", "versions": "0+"},
            ]},
        ]},
    ],
}

FETCH_SNAPSHOT_RESPONSE: Declaration = {
    "apiKey": ApiKey.FETCH_SNAPSHOT,
    "type": "response",
    "name": "FetchSnapshotResponse",
    "validVersions": "0",
    "flexibleVersions": "0+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {"name": "Topics", "type": "[]TopicSnapshot", "versions": "0+", "fields": [
            {"name": "Name", "type": "string", "versions": "0+"},
            {"name": "Partitions", "type": "[]PartitionSnapshot", "versions": "0+", "fields": [
                {"name": "Index", "type": "int32", "versions": "0+"},
                {"name": "ErrorCode", "type": "int16", "versions": "0+"},
                _SNAPSHOT_ID,
                {"name": "CurrentLeader", "type": "LeaderIdAndEpoch", "versions": "0+",
                 "taggedVersions": "0+", "tag": 0, "fields": [
                     {"name": "LeaderId", "type": "int32", "versions": "0+", "default": -1},
                     {"name": "LeaderEpoch", "type": "int32", "versions": "0+", "default": -1},
                 ]},
                # The snapshot's whole size, and where this chunk starts in it.
                {"name": "Size", "type": "int64", "versions": "0+"},
                {"name": "Position", "type": "int64", "versions": "0+"},
                # Kafka's "UnalignedRecords" (its latest schema calls it "Bytes"): a chunk
                # need not end on a record's boundary.
                {"name": "UnalignedRecords", "type": "records", "versions": "0+"},
            ]},
        ]},
    ],
}
