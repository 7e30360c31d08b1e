"""The seven states of a voter, each for one epoch (Kafka's ``EpochState`` and its subclasses).

A state holds what the voter knows and owes in its epoch, and its timers as absolute
deadlines of the caller's clock.  The states do not change one into another: ``QuorumState``
does that, checking each transition.

- ``UnattachedState``: an epoch with no leader known and no vote cast; waits for its election
  timeout, then asks for pre-votes.
- ``VotedState``: voted for a candidate in this epoch; grants that candidate again, nobody else.
- ``ProspectiveState``: timed out, asks the others whether they would vote for it (KIP-996's
  pre-vote) without raising the epoch; a majority makes it a candidate.
- ``CandidateState``: voted for itself in the next epoch and asks the others; a majority makes
  it leader.
- ``LeaderState``: appends, answers Fetch, advances the high watermark.
- ``FollowerState``: fetches from the epoch's leader; asks for pre-votes when the leader has
  been silent for the fetch timeout.
- ``ResignedState``: was this epoch's leader and gave up (lost the majority, or shut down); tells
  the voters by EndQuorumEpoch and waits for the next epoch.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkacore.raft.quorum_state_store import ElectionState
from kafkacore.raft.raft_messages import NO_ID, Envelope
from kafkacore.raft.raw_snapshot_reader import OffsetAndEpoch


class EpochState:
    """What every state has: its epoch and the election state it persisted."""

    name = "EpochState"

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch

    def election(self) -> ElectionState:
        return ElectionState(self.epoch)

    @property
    def leader_id(self) -> int:
        return NO_ID

    def __repr__(self) -> str:
        return f"{self.name}(epoch={self.epoch}, leader={self.leader_id})"


class UnattachedState(EpochState):
    name = "Unattached"

    def __init__(self, epoch: int, election_deadline_ms: int) -> None:
        super().__init__(epoch)
        self.election_deadline_ms = election_deadline_ms


class VotedState(EpochState):
    name = "Voted"

    def __init__(self, epoch: int, voted_id: int, election_deadline_ms: int) -> None:
        super().__init__(epoch)
        self.voted_id = voted_id
        self.election_deadline_ms = election_deadline_ms

    def election(self) -> ElectionState:
        return ElectionState(self.epoch, voted_id=self.voted_id)


class NomineeState(EpochState):
    """What a prospective and a candidate share (Kafka's ``NomineeState``): the votes asked for,
    granted and rejected, and the timers of the round."""

    def __init__(
        self, epoch: int, local_id: int, voters: frozenset[int], election_deadline_ms: int
    ) -> None:
        super().__init__(epoch)
        self.local_id = local_id
        self.voters = voters
        self.granting: set[int] = {local_id}
        self.rejecting: set[int] = set()
        self.election_deadline_ms = election_deadline_ms
        #: Set once the election is lost or timed out: the next round waits until then.
        self.backoff_deadline_ms: int | None = None
        #: When each voter that has not answered may be asked again.
        self.next_vote_request_ms: dict[int, int] = {v: 0 for v in voters if v != local_id}
        #: correlation id -> the voter asked, for this round's requests: only their answers
        #: count (a pre-vote granted must never pass for a vote).
        self.requests: dict[int, int] = {}

    def majority(self) -> int:
        return len(self.voters) // 2 + 1

    def is_vote_granted(self) -> bool:
        return len(self.granting) >= self.majority()

    def is_vote_rejected(self) -> bool:
        return len(self.rejecting) >= self.majority()


class ProspectiveState(NomineeState):
    """Asks for pre-votes in its epoch, which it does not raise: a voter that cannot win (cut
    off, or behind) never disrupts a leader the others still follow (KIP-996).  It persists
    nothing of its own: its election state is the one of the state it came from."""

    name = "Prospective"

    def __init__(
        self,
        previous: ElectionState,
        local_id: int,
        voters: frozenset[int],
        election_deadline_ms: int,
    ) -> None:
        super().__init__(previous.epoch, local_id, voters, election_deadline_ms)
        self.previous = previous

    def election(self) -> ElectionState:
        return self.previous

    @property
    def leader_id(self) -> int:
        return self.previous.leader_id

    def may_vote(self) -> bool:
        """It may still cast its one (real) vote of this epoch."""
        return not self.previous.has_voted() and not self.previous.has_leader()


class CandidateState(NomineeState):
    name = "Candidate"

    def election(self) -> ElectionState:
        return ElectionState(self.epoch, voted_id=self.local_id)


@dataclass(slots=True)
class ParkedFetch:
    """A Fetch with nothing to return yet, held until data arrives or its wait ends."""

    request: Envelope
    deadline_ms: int


@dataclass(slots=True)
class ReplicaProgress:
    """What the leader knows of one voter (Kafka's ``LeaderState.ReplicaState``)."""

    end_offset: int = -1
    last_fetch_ms: int = -1
    has_acknowledged_leader: bool = False


class LeaderState(EpochState):
    name = "Leader"

    def __init__(
        self,
        epoch: int,
        local_id: int,
        voters: frozenset[int],
        granting: frozenset[int],
        epoch_start_offset: int,
        high_watermark: int,
        check_quorum_deadline_ms: int,
    ) -> None:
        super().__init__(epoch)
        self.local_id = local_id
        self.voters = voters
        self.granting = granting
        #: The offset of this epoch's first entry (its LeaderChange): the high watermark may
        #: only pass it, so that an entry of the leader's own epoch is committed first.
        self.epoch_start_offset = epoch_start_offset
        self.high_watermark = high_watermark
        self.replicas: dict[int, ReplicaProgress] = {v: ReplicaProgress() for v in voters}
        self.replicas[local_id].has_acknowledged_leader = True
        self.next_begin_epoch_ms: dict[int, int] = {v: 0 for v in voters if v != local_id}
        self.check_quorum_deadline_ms = check_quorum_deadline_ms
        #: The voters heard from (by Fetch) since the check-quorum timer was last reset.
        self.fetched_since_check: set[int] = {local_id}
        self.parked: dict[int, ParkedFetch] = {}

    def election(self) -> ElectionState:
        return ElectionState(self.epoch, voted_id=self.local_id, leader_id=self.local_id)

    @property
    def leader_id(self) -> int:
        return self.local_id

    def majority(self) -> int:
        return len(self.voters) // 2 + 1

    def update_end_offset(self, replica_id: int, end_offset: int) -> bool:
        """Record a voter's end offset; True if that moved the high watermark."""
        self.replicas[replica_id].end_offset = end_offset
        return self.maybe_update_high_watermark()

    def maybe_update_high_watermark(self) -> bool:
        # The largest offset a majority has reached: sorted descending, the (n // 2)-th.
        ends = sorted((r.end_offset for r in self.replicas.values()), reverse=True)
        candidate = ends[len(self.voters) // 2]
        # Raft's commit rule: only once an entry of this epoch is on a majority may the
        # high watermark move, and then it commits every earlier entry with it.
        if candidate > self.epoch_start_offset and candidate > self.high_watermark:
            self.high_watermark = candidate
            return True
        return False

    def non_acknowledging_voters(self) -> list[int]:
        return [v for v, r in self.replicas.items() if not r.has_acknowledged_leader]


class FollowerState(EpochState):
    name = "Follower"

    def __init__(self, epoch: int, leader: int, voted_id: int, fetch_deadline_ms: int) -> None:
        super().__init__(epoch)
        self.leader = leader
        self.voted_id = voted_id
        self.fetch_deadline_ms = fetch_deadline_ms
        #: The Fetch (or FetchSnapshot) awaiting its response: (correlation id, when it is
        #: given up).
        self.in_flight: tuple[int, int] | None = None
        self.next_fetch_ms = 0
        #: The snapshot being fetched from this leader (KIP-630): its id and the bytes so far.
        #: While it is set the follower sends FetchSnapshot, not Fetch.
        self.fetching_snapshot: tuple[OffsetAndEpoch, bytearray] | None = None
        #: Its leader answered a Fetch, and has not resigned since: it refuses pre-votes
        #: until its fetch timeout (Kafka's ``hasFetchedFromLeader``).
        self.has_fetched_from_leader = False

    def election(self) -> ElectionState:
        return ElectionState(self.epoch, voted_id=self.voted_id, leader_id=self.leader)

    @property
    def leader_id(self) -> int:
        return self.leader


class ResignedState(EpochState):
    name = "Resigned"

    def __init__(
        self,
        epoch: int,
        local_id: int,
        voters: frozenset[int],
        preferred_successors: tuple[int, ...],
        election_deadline_ms: int,
    ) -> None:
        super().__init__(epoch)
        self.local_id = local_id
        self.preferred_successors = preferred_successors
        self.election_deadline_ms = election_deadline_ms
        self.unacknowledged: set[int] = {v for v in voters if v != local_id}
        self.next_end_epoch_ms: dict[int, int] = {v: 0 for v in self.unacknowledged}

    def election(self) -> ElectionState:
        return ElectionState(self.epoch, voted_id=self.local_id, leader_id=self.local_id)

    @property
    def leader_id(self) -> int:
        return self.local_id
