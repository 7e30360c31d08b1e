"""``QuorumState``: the one way a voter goes from one epoch state to another.

Each transition checks the invariants Raft's safety needs and raises ``IllegalStateError`` when
one would break (a second vote in an epoch, a return to an older epoch, a second leader followed
in one epoch, a leader without a majority); and each persists the new election state to the
store **before** the new state is installed, so that a crash right after finds it on disk.

The transitions, as Kafka's ``QuorumState`` has them::

    Unattached  -> Voted (same epoch), Prospective, Follower, Unattached (higher epoch)
    Voted       -> Prospective, Follower (same or higher epoch), Unattached (higher epoch)
    Prospective -> Candidate (majority of pre-votes), Prospective (a new round), Voted (same
                   epoch, if it had no vote and no leader), Follower, Unattached (higher epoch)
    Candidate   -> Leader (majority granted), Prospective (lost: a new round, same epoch),
                   Follower, Unattached (higher epoch)
    Leader      -> Resigned (same epoch), Follower, Unattached (higher epoch)
    Follower    -> Prospective, Follower (higher epoch), Unattached (higher epoch)
    Resigned    -> Prospective, Follower, Unattached (higher epoch)

Only a prospective with a majority of pre-votes raises the epoch (KIP-996): a voter cut off from
the others times out again and again in one epoch, and rejoins without disrupting their leader.
"""

from __future__ import annotations

import random

from kafkacore.errors import IllegalStateError
from kafkacore.raft.epoch_state import (
    CandidateState,
    EpochState,
    FollowerState,
    LeaderState,
    ProspectiveState,
    ResignedState,
    UnattachedState,
    VotedState,
)
from kafkacore.raft.quorum_state_store import ElectionState, QuorumStateStore
from kafkacore.raft.raft_messages import NO_ID


class QuorumState:
    """The current epoch state of one voter, its transitions and its timers."""

    def __init__(
        self,
        local_id: int,
        voters: frozenset[int],
        store: QuorumStateStore,
        rng: random.Random,
        election_timeout_ms: int,
        fetch_timeout_ms: int,
    ) -> None:
        if local_id not in voters:
            raise IllegalStateError(f"node {local_id} is not one of the voters {sorted(voters)}")
        self.local_id = local_id
        self.voters = voters
        self.store = store
        self.rng = rng
        self.election_timeout_ms = election_timeout_ms
        self.fetch_timeout_ms = fetch_timeout_ms
        self.state: EpochState = UnattachedState(0, 0)

    # -- timers --------------------------------------------------------------------------------

    def random_election_deadline(self, now_ms: int) -> int:
        """The election timeout plus up to as much again, at random: split votes do not repeat."""
        return now_ms + self.election_timeout_ms + self.rng.randrange(self.election_timeout_ms)

    def check_quorum_timeout_ms(self) -> int:
        # Kafka's leader gives the majority one and a half fetch timeouts to be heard from.
        return self.fetch_timeout_ms * 3 // 2

    # -- start ---------------------------------------------------------------------------------

    def initialize(self, log_end_epoch: int, now_ms: int) -> None:
        """The state to restart in, from the persisted election state (Kafka's ``initialize``)."""
        election = self.store.read() or ElectionState(0)
        if log_end_epoch > election.epoch:
            # The log knows a later epoch than the store: start unattached in it.
            state = UnattachedState(log_end_epoch, self.random_election_deadline(now_ms))
            self._install(state.election(), state, now_ms)
            return
        deadline = self.random_election_deadline(now_ms)
        if election.leader_id == self.local_id:
            # It led this epoch before the restart; it cannot lead it again (its followers'
            # progress is lost), so it resigns and a new epoch is elected.
            self.state = ResignedState(election.epoch, self.local_id, self.voters, (), deadline)
        elif election.has_leader():
            self.state = FollowerState(
                election.epoch,
                election.leader_id,
                election.voted_id,
                now_ms + self.fetch_timeout_ms,
            )
        elif election.voted_id == self.local_id:
            self.state = CandidateState(election.epoch, self.local_id, self.voters, deadline)
        elif election.has_voted():
            self.state = VotedState(election.epoch, election.voted_id, deadline)
        else:
            self.state = UnattachedState(election.epoch, deadline)

    # -- the transitions -----------------------------------------------------------------------

    @property
    def epoch(self) -> int:
        return self.state.epoch

    def transition_to_unattached(self, epoch: int, now_ms: int) -> None:
        """A higher epoch seen with no leader known: forget the vote and the leader."""
        if epoch <= self.epoch:
            raise IllegalStateError(
                f"unattached at epoch {epoch}, not above the current {self.state!r}"
            )
        current = self.state
        if isinstance(current, (UnattachedState, VotedState, ProspectiveState, CandidateState)):
            # The election timer keeps running: were it reset by every higher epoch, candidates
            # that cannot win (their logs are behind) could keep the voters that can from ever
            # standing.
            deadline = current.election_deadline_ms
        else:
            deadline = self.random_election_deadline(now_ms)
        state = UnattachedState(epoch, deadline)
        self._install(state.election(), state, now_ms)

    def transition_to_voted(self, epoch: int, candidate_id: int, now_ms: int) -> None:
        """Grant a vote: only from Unattached (or a prospective that was), so there is one vote
        per epoch."""
        state = self.state
        unattached = isinstance(state, UnattachedState) or (
            isinstance(state, ProspectiveState) and state.may_vote()
        )
        if epoch != self.epoch or not unattached:
            raise IllegalStateError(
                f"vote for {candidate_id} at epoch {epoch} from {self.state!r}: one vote per "
                "epoch, cast only while unattached in it"
            )
        if candidate_id not in self.voters or candidate_id == self.local_id:
            raise IllegalStateError(f"vote for {candidate_id}, not another voter")
        state = VotedState(epoch, candidate_id, self.random_election_deadline(now_ms))
        self._install(state.election(), state, now_ms)

    def transition_to_prospective(self, now_ms: int) -> None:
        """Ask for pre-votes in the current epoch (KIP-996): nothing is persisted but what the
        state it leaves had."""
        state = self.state
        if isinstance(state, LeaderState):
            raise IllegalStateError(f"a leader does not ask for pre-votes: {state!r}")
        prospective = ProspectiveState(
            state.election(), self.local_id, self.voters, self.random_election_deadline(now_ms)
        )
        self._install(prospective.election(), prospective, now_ms)

    def transition_to_candidate(self, now_ms: int) -> None:
        """Stand in the next epoch, voting for itself: only with a majority of pre-votes."""
        if not isinstance(self.state, ProspectiveState) or not self.state.is_vote_granted():
            raise IllegalStateError(
                f"a candidate without a majority of pre-votes: {self.state!r}"
            )
        state = CandidateState(
            self.epoch + 1, self.local_id, self.voters, self.random_election_deadline(now_ms)
        )
        self._install(state.election(), state, now_ms)

    def transition_to_leader(
        self, epoch_start_offset: int, high_watermark: int, now_ms: int
    ) -> LeaderState:
        """Lead the epoch the candidate won."""
        state = self.state
        if not isinstance(state, CandidateState) or not state.is_vote_granted():
            raise IllegalStateError(f"leader without a majority of votes: {state!r}")
        leader = LeaderState(
            state.epoch,
            self.local_id,
            self.voters,
            frozenset(state.granting),
            epoch_start_offset,
            high_watermark,
            now_ms + self.check_quorum_timeout_ms(),
        )
        self._install(leader.election(), leader, now_ms)
        return leader

    def transition_to_follower(self, epoch: int, leader_id: int, now_ms: int) -> None:
        """Follow the leader of ``epoch``: of a higher epoch, or of ours if we had none yet."""
        state = self.state
        if leader_id == self.local_id or leader_id not in self.voters:
            raise IllegalStateError(f"follow {leader_id}: not another voter")
        if epoch < state.epoch:
            raise IllegalStateError(f"follow {leader_id} at epoch {epoch}, below {state!r}")
        voted_id = NO_ID
        if epoch == state.epoch:
            # One leader per epoch: in our own epoch we may only learn of the leader we lacked.
            if isinstance(state, (LeaderState, ResignedState)):
                raise IllegalStateError(f"{leader_id} claims epoch {epoch}, which {state!r} led")
            if isinstance(state, FollowerState):
                raise IllegalStateError(
                    f"{leader_id} claims epoch {epoch}, whose leader is {state.leader}"
                )
            if isinstance(state, ProspectiveState) and state.leader_id not in (NO_ID, leader_id):
                raise IllegalStateError(
                    f"{leader_id} claims epoch {epoch}, whose leader is {state.leader_id}"
                )
            if isinstance(state, VotedState):
                voted_id = state.voted_id
            elif isinstance(state, CandidateState):
                voted_id = self.local_id
            elif isinstance(state, ProspectiveState):
                voted_id = state.previous.voted_id
        follower = FollowerState(epoch, leader_id, voted_id, now_ms + self.fetch_timeout_ms)
        self._install(follower.election(), follower, now_ms)

    def transition_to_resigned(self, preferred_successors: tuple[int, ...], now_ms: int) -> None:
        """The leader gives up its epoch (same epoch: it still led it)."""
        state = self.state
        if not isinstance(state, LeaderState):
            raise IllegalStateError(f"only a leader resigns: {state!r}")
        resigned = ResignedState(
            state.epoch,
            self.local_id,
            self.voters,
            preferred_successors,
            self.random_election_deadline(now_ms),
        )
        self._install(resigned.election(), resigned, now_ms)

    def _install(self, election: ElectionState, state: EpochState, now_ms: int) -> None:
        # Durable first: a vote, an epoch or a leader is acted on only once it survives a crash.
        self.store.write(election)
        self.state = state
