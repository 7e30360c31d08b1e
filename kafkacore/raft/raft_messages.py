"""The quorum's messages, as plain dataclasses with the fields of Kafka's schemas.

Kafka's schemas (``VoteRequest.json``, ``BeginQuorumEpochRequest.json``,
``EndQuorumEpochRequest.json``, ``FetchRequest.json``, ``FetchSnapshotRequest.json`` and their
responses) nest topics and
partitions; the quorum has one partition, ``__cluster_metadata-0``, so each message here holds that
partition's fields directly.  Kafka's "absent" values (``-1`` for an unknown leader, a diverging
epoch of ``{-1, -1}``) are kept where the schema has them, except the diverging epoch, which is
``None`` when absent.  Putting them on the wire is a later step.

Every message travels in an ``Envelope``: who sent it, to whom, and the correlation id that ties a
response to its request (a response carries its request's id).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kafkacore.errors import Errors
from kafkacore.raft.raft_log import LogEntry
from kafkacore.raft.raw_snapshot_reader import OffsetAndEpoch

#: Kafka's ``-1``: no leader known, no vote cast.
NO_ID = -1


@dataclass(frozen=True, slots=True)
class VoteRequest:
    """A candidate asks for a vote, or a prospective for a pre-vote (``VoteRequest.json``, one
    partition)."""

    candidate_epoch: int
    candidate_id: int
    #: The epoch and end offset of the candidate's log: a vote goes only to a log at least as
    #: up to date as the voter's.
    last_offset_epoch: int
    last_offset: int
    voter_id: int = NO_ID
    #: KIP-996 (Vote v2): would the voter vote for it in the next epoch?  ``candidate_epoch`` is
    #: then the sender's current epoch, not raised, and the answer binds nobody.
    pre_vote: bool = False


@dataclass(frozen=True, slots=True)
class VoteResponse:
    error_code: Errors
    leader_id: int
    leader_epoch: int
    vote_granted: bool


@dataclass(frozen=True, slots=True)
class BeginQuorumEpochRequest:
    """A new leader announces itself to the voters (``BeginQuorumEpochRequest.json``)."""

    leader_id: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class BeginQuorumEpochResponse:
    error_code: Errors
    leader_id: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class EndQuorumEpochRequest:
    """A leader that resigns tells the voters, best successors first (``EndQuorumEpochRequest``)."""

    leader_id: int
    leader_epoch: int
    preferred_successors: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class EndQuorumEpochResponse:
    error_code: Errors
    leader_id: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class ReplicaState:
    """``FetchRequest.ReplicaState`` (v15+): who fetches; a voter of the quorum here."""

    replica_id: int
    replica_epoch: int = -1


@dataclass(frozen=True, slots=True)
class FetchRequest:
    """A follower pulls the log from ``fetch_offset`` (``FetchRequest.json``, one partition).

    ``last_fetched_epoch`` is the epoch of the follower's last entry: with ``fetch_offset`` it lets
    the leader see whether the follower's log has diverged from its own.
    """

    replica_state: ReplicaState
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    max_wait_ms: int = 500


@dataclass(frozen=True, slots=True)
class EpochEndOffset:
    """``FetchResponse.DivergingEpoch``: where the leader's log for ``epoch`` ends."""

    epoch: int
    end_offset: int


@dataclass(frozen=True, slots=True)
class LeaderIdAndEpoch:
    """``FetchResponse.CurrentLeader``."""

    leader_id: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class FetchResponse:
    error_code: Errors
    high_watermark: int
    current_leader: LeaderIdAndEpoch
    #: Set when the follower's log diverges: truncate to this epoch's end, then fetch again.
    diverging_epoch: EpochEndOffset | None = None
    records: tuple[LogEntry, ...] = field(default=())
    #: ``SnapshotId`` (KIP-630): the follower's fetch offset is before the leader's log start;
    #: it must fetch this snapshot (FetchSnapshot), then fetch from its end.
    snapshot_id: OffsetAndEpoch | None = None


@dataclass(frozen=True, slots=True)
class FetchSnapshotRequest:
    """A follower fetches a chunk of the leader's snapshot (``FetchSnapshotRequest.json``, one
    partition): up to ``max_bytes`` bytes from ``position``."""

    replica_id: int
    current_leader_epoch: int
    snapshot_id: OffsetAndEpoch
    position: int
    max_bytes: int


@dataclass(frozen=True, slots=True)
class FetchSnapshotResponse:
    """A chunk of a snapshot (``FetchSnapshotResponse.json``): its bytes from ``position``, and
    the snapshot's whole ``size``."""

    error_code: Errors
    current_leader: LeaderIdAndEpoch
    snapshot_id: OffsetAndEpoch
    size: int = -1
    position: int = -1
    unaligned_records: bytes = b""


RaftRequest = (
    VoteRequest | BeginQuorumEpochRequest | EndQuorumEpochRequest | FetchRequest
    | FetchSnapshotRequest
)
RaftResponse = (
    VoteResponse | BeginQuorumEpochResponse | EndQuorumEpochResponse | FetchResponse
    | FetchSnapshotResponse
)


@dataclass(frozen=True, slots=True)
class Envelope:
    """One message between two voters: a request, or the response to the request of that id."""

    source_id: int
    destination_id: int
    correlation_id: int
    body: RaftRequest | RaftResponse
