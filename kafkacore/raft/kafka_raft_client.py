"""``KafkaRaftClient``: one voter of the quorum, as a state machine without I/O.

The driver calls ``poll(now_ms)`` when ``next_poll_ms`` is reached (timers: elections, fetch
timeouts, resends) and ``handle(envelope, now_ms)`` for each message that arrives; both return
the envelopes to send.  ``append`` adds records on the leader.  Nothing here reads a clock,
sleeps, opens a socket or a file (the store and the log are given), and the only randomness is
the ``random.Random`` passed in: a run is a function of its seed.

Replication is pull-based, as in KIP-595: followers send Fetch with their end offset and the
epoch of their last entry; the leader answers with records, or with the *diverging epoch* if the
follower's log has gone another way (the follower truncates to it and fetches again), or holds
the Fetch until there is something to return (a long poll).  The followers' fetch offsets are
the leader's knowledge of their logs, from which it computes the high watermark.

Snapshots (KIP-630): the state machine hands ``create_snapshot`` its image at a committed
offset; the log keeps the last ``snapshots_retained`` of them and forgets the entries before the
oldest (the log start offset advances, never past the high watermark).  A follower whose Fetch
asks for entries the leader no longer has gets the leader's latest ``SnapshotId`` instead of
records; it fetches that snapshot in chunks of at most ``fetch_snapshot_max_bytes``
(FetchSnapshot, position by position), installs it (its log then starts empty at the snapshot's
end offset) and fetches the log from there.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kafkacore.errors import Errors, IllegalStateError, NotLeaderOrFollowerError
from kafkacore.raft.epoch_state import (
    CandidateState,
    EpochState,
    FollowerState,
    LeaderState,
    NomineeState,
    ParkedFetch,
    ProspectiveState,
    ResignedState,
    UnattachedState,
    VotedState,
)
from kafkacore.raft.quorum_state import QuorumState
from kafkacore.raft.quorum_state_store import QuorumStateStore
from kafkacore.raft.raft_log import LeaderChangeMessage, RaftLog
from kafkacore.raft.raft_messages import (
    NO_ID,
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    Envelope,
    EpochEndOffset,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    LeaderIdAndEpoch,
    RaftRequest,
    RaftResponse,
    ReplicaState,
    VoteRequest,
    VoteResponse,
)
from kafkacore.raft.raw_snapshot_reader import OffsetAndEpoch, RawSnapshotReader


@dataclass(frozen=True, slots=True)
class RaftConfig:
    """The quorum's timings, Kafka's defaults (``controller.quorum.*``)."""

    #: ``controller.quorum.election.timeout.ms``: the silence after which a voter stands; each
    #: timer adds up to as much again at random.
    election_timeout_ms: int = 1000
    #: ``controller.quorum.election.backoff.max.ms``: the most a lost candidate waits to stand
    #: again.
    election_backoff_max_ms: int = 1000
    #: ``controller.quorum.fetch.timeout.ms``: a follower that has not heard from its leader for
    #: this long stands; a leader not fetched from by a majority for 1.5 times it resigns.
    fetch_timeout_ms: int = 2000
    #: ``controller.quorum.request.timeout.ms``: an unanswered request is sent again after it.
    request_timeout_ms: int = 2000
    #: ``controller.quorum.retry.backoff.ms``: the pause before a refused Fetch is sent again.
    retry_backoff_ms: int = 20
    #: How long the leader holds a Fetch it has nothing for.
    fetch_max_wait_ms: int = 500
    #: At most this many entries in one FetchResponse.
    fetch_max_entries: int = 100
    #: At most this many bytes of a snapshot in one FetchSnapshotResponse (Kafka's
    #: ``MaxBytes``, the size of its largest batch).
    fetch_snapshot_max_bytes: int = 8 * 1024 * 1024
    #: Snapshots kept; the entries before the oldest are deleted, so a follower less far behind
    #: than that still catches up from the log.
    snapshots_retained: int = 2
    #: The largest snapshot a follower takes (its bytes are held until complete): a leader
    #: announcing a larger one is not followed into it.
    max_snapshot_bytes: int = 1 << 30


class KafkaRaftClient:
    """One voter: elections, replication and the high watermark of KIP-595."""

    def __init__(
        self,
        node_id: int,
        voters: Iterable[int],
        log: RaftLog,
        store: QuorumStateStore,
        rng: random.Random,
        now_ms: int,
        config: RaftConfig | None = None,
    ) -> None:
        self.node_id = node_id
        self.voters = frozenset(voters)
        self.log = log
        self.config = config or RaftConfig()
        self.rng = rng
        self.quorum = QuorumState(
            node_id,
            self.voters,
            store,
            rng,
            self.config.election_timeout_ms,
            self.config.fetch_timeout_ms,
        )
        self.quorum.initialize(log.last_fetched_epoch(), now_ms)
        self._correlation_id = 0
        self._outbox: list[Envelope] = []

    # -- what the driver and the tests read -----------------------------------------------------

    @property
    def state(self) -> EpochState:
        return self.quorum.state

    @property
    def epoch(self) -> int:
        return self.quorum.epoch

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def leader_and_epoch(self) -> LeaderIdAndEpoch:
        return LeaderIdAndEpoch(self.quorum.state.leader_id, self.quorum.epoch)

    def is_leader(self) -> bool:
        return isinstance(self.quorum.state, LeaderState)

    @property
    def next_poll_ms(self) -> int:
        """When ``poll`` has something to do next (the earliest timer of the current state)."""
        s = self.quorum.state
        if isinstance(s, (UnattachedState, VotedState)):
            return s.election_deadline_ms
        if isinstance(s, NomineeState):
            if s.backoff_deadline_ms is not None:
                return s.backoff_deadline_ms
            pending = [
                t for v, t in s.next_vote_request_ms.items() if v not in s.granting | s.rejecting
            ]
            return min([s.election_deadline_ms, *pending])
        if isinstance(s, LeaderState):
            times = [s.check_quorum_deadline_ms]
            times += [s.next_begin_epoch_ms[v] for v in s.non_acknowledging_voters()]
            times += [p.deadline_ms for p in s.parked.values()]
            return min(times)
        if isinstance(s, FollowerState):
            wake = s.in_flight[1] if s.in_flight is not None else s.next_fetch_ms
            return min(s.fetch_deadline_ms, wake)
        if isinstance(s, ResignedState):
            return min(
                [s.election_deadline_ms, *(s.next_end_epoch_ms[v] for v in s.unacknowledged)]
            )
        raise IllegalStateError(f"unknown state {s!r}")

    # -- the driver's three calls ----------------------------------------------------------------

    def poll(self, now_ms: int) -> list[Envelope]:
        """Run the timers due at ``now_ms``; returns the messages to send."""
        s = self.quorum.state
        if isinstance(s, LeaderState):
            self._poll_leader(s, now_ms)
        elif isinstance(s, ProspectiveState):
            self._poll_prospective(s, now_ms)
        elif isinstance(s, CandidateState):
            self._poll_candidate(s, now_ms)
        elif isinstance(s, FollowerState):
            self._poll_follower(s, now_ms)
        elif isinstance(s, ResignedState):
            self._poll_resigned(s, now_ms)
        elif isinstance(s, (UnattachedState, VotedState)) and now_ms >= s.election_deadline_ms:
            self._become_prospective(now_ms)
        return self._drain()

    def handle(self, envelope: Envelope, now_ms: int) -> list[Envelope]:
        """Take one message; returns the messages to send (its response among them)."""
        if envelope.destination_id != self.node_id:
            raise IllegalStateError(
                f"node {self.node_id} handed a message for node {envelope.destination_id}"
            )
        body = envelope.body
        if isinstance(
            body,
            (VoteRequest, BeginQuorumEpochRequest, EndQuorumEpochRequest, FetchRequest,
             FetchSnapshotRequest),
        ):
            self._handle_request(envelope, body, now_ms)
        elif isinstance(
            body,
            (VoteResponse, BeginQuorumEpochResponse, EndQuorumEpochResponse, FetchResponse,
             FetchSnapshotResponse),
        ):
            self._handle_response(envelope, body, now_ms)
        else:
            raise TypeError(f"not a message of the quorum: {type(body).__name__}")
        return self._drain()

    def append(self, values: Sequence[bytes], now_ms: int) -> int:
        """Append records as the leader; returns the offset of the last.

        They are committed once the high watermark passes that offset.
        """
        s = self.quorum.state
        if not isinstance(s, LeaderState):
            raise NotLeaderOrFollowerError(
                f"node {self.node_id} is not the leader ({s!r}); the leader is {s.leader_id}"
            )
        if not values:
            raise ValueError("append of no records")
        last = self.log.append_as_leader(values, s.epoch)
        if s.update_end_offset(self.node_id, self.log.end_offset()):
            self.log.update_high_watermark(s.high_watermark)
        self._complete_parked(s, now_ms)
        return last

    def create_snapshot(self, end_offset: int, records: Sequence[bytes]) -> OffsetAndEpoch:
        """Store the state machine's image at ``end_offset`` (it has applied every entry before
        it, all committed) as ``records``; keep the last ``snapshots_retained`` snapshots and
        delete the entries before the oldest.  Returns the snapshot's id.
        ``IllegalStateError`` for an offset past the high watermark or before the log start."""
        if not self.log.log_start_offset <= end_offset <= self.log.high_watermark:
            raise IllegalStateError(
                f"snapshot at {end_offset}: outside [{self.log.log_start_offset}, "
                f"{self.log.high_watermark}] (the log start and the high watermark)"
            )
        epoch = self.log.epoch_at(end_offset)
        if epoch is None:
            raise IllegalStateError(f"snapshot at {end_offset}: the log cannot tell its epoch")
        snapshot_id = OffsetAndEpoch(end_offset, epoch)
        self.log.create_new_snapshot(snapshot_id, records)
        self._clean_log()
        return snapshot_id

    def _clean_log(self) -> None:
        """Delete the entries before the oldest retained snapshot (Kafka's
        ``KafkaMetadataLog.maybeClean``, by count of snapshots here)."""
        retained = max(1, self.config.snapshots_retained)
        ids = self.log.snapshot_ids()
        if len(ids) >= retained:
            self.log.delete_before_snapshot(ids[-retained])

    def resign(self, now_ms: int) -> list[Envelope]:
        """The leader gives up its epoch (a graceful shutdown); returns its EndQuorumEpochs."""
        s = self.quorum.state
        if isinstance(s, LeaderState):
            self._resign(s, now_ms)
        return self._drain()

    # -- sending -------------------------------------------------------------------------------

    def _send(self, destination_id: int, body: RaftRequest) -> None:
        self._correlation_id += 1
        self._outbox.append(Envelope(self.node_id, destination_id, self._correlation_id, body))

    def _respond(self, request: Envelope, body: RaftResponse) -> None:
        self._outbox.append(Envelope(self.node_id, request.source_id, request.correlation_id, body))

    def _drain(self) -> list[Envelope]:
        out, self._outbox = self._outbox, []
        return out

    # -- timers of each state ------------------------------------------------------------------

    def _become_prospective(self, now_ms: int) -> None:
        self.quorum.transition_to_prospective(now_ms)
        s = self.quorum.state
        if not isinstance(s, ProspectiveState):
            raise IllegalStateError(f"expected a ProspectiveState, not {s!r}")
        if s.is_vote_granted():  # a quorum of one
            self._become_candidate(now_ms)
        else:
            self._poll_prospective(s, now_ms)

    def _poll_prospective(self, s: ProspectiveState, now_ms: int) -> None:
        if s.backoff_deadline_ms is not None:
            if now_ms >= s.backoff_deadline_ms:
                self._become_prospective(now_ms)
            return
        if now_ms >= s.election_deadline_ms or s.is_vote_rejected():
            # Lost, or nobody answered (cut off): the epoch stays.  Back to its leader if it
            # had one (it fetches again, and the leader may well be alive); else a new round
            # after a random wait.
            leader = s.leader_id
            if leader not in (NO_ID, self.node_id):
                self.quorum.transition_to_follower(s.epoch, leader, now_ms)
                f = self.quorum.state
                if isinstance(f, FollowerState):
                    self._poll_follower(f, now_ms)
            else:
                s.backoff_deadline_ms = (
                    now_ms + 1 + self.rng.randrange(self.config.election_backoff_max_ms)
                )
            return
        self._request_votes(s, now_ms, pre_vote=True)

    def _become_candidate(self, now_ms: int) -> None:
        self.quorum.transition_to_candidate(now_ms)
        s = self.quorum.state
        if not isinstance(s, CandidateState):
            raise IllegalStateError(f"expected a CandidateState, not {s!r}")
        if s.is_vote_granted():  # a quorum of one
            self._become_leader(now_ms)
        else:
            self._poll_candidate(s, now_ms)

    def _poll_candidate(self, s: CandidateState, now_ms: int) -> None:
        if s.backoff_deadline_ms is not None:
            if now_ms >= s.backoff_deadline_ms:
                # A new round asks for pre-votes first: a candidate that cannot win (cut off)
                # stops raising the epoch.
                self._become_prospective(now_ms)
            return
        if now_ms >= s.election_deadline_ms or s.is_vote_rejected():
            # Lost or undecided: wait a random while, so that two candidates do not split the
            # votes again, then stand again.
            s.backoff_deadline_ms = (
                now_ms + 1 + self.rng.randrange(self.config.election_backoff_max_ms)
            )
            return
        self._request_votes(s, now_ms, pre_vote=False)

    def _request_votes(self, s: NomineeState, now_ms: int, pre_vote: bool) -> None:
        """Ask each voter that has not answered, again after the request timeout.  A pre-vote
        carries the current epoch (a prospective does not raise it), a vote the candidate's."""
        log_epoch, log_end = self.log.last_fetched_epoch(), self.log.end_offset()
        for voter, when in s.next_vote_request_ms.items():
            if voter not in s.granting and voter not in s.rejecting and now_ms >= when:
                s.next_vote_request_ms[voter] = now_ms + self.config.request_timeout_ms
                self._send(
                    voter,
                    VoteRequest(s.epoch, self.node_id, log_epoch, log_end, voter, pre_vote),
                )
                s.requests[self._correlation_id] = voter

    def _become_leader(self, now_ms: int) -> None:
        s = self.quorum.state
        if not isinstance(s, CandidateState):
            raise IllegalStateError(f"expected a CandidateState, not {s!r}")
        leader = self.quorum.transition_to_leader(
            self.log.end_offset(), self.log.high_watermark, now_ms
        )
        # The first record of the epoch: once it is committed, so is everything before it.
        change = LeaderChangeMessage(
            self.node_id, tuple(sorted(self.voters)), tuple(sorted(s.granting))
        )
        self.log.append_as_leader([change], leader.epoch)
        if leader.update_end_offset(self.node_id, self.log.end_offset()):
            self.log.update_high_watermark(leader.high_watermark)
        self._poll_leader(leader, now_ms)

    def _poll_leader(self, s: LeaderState, now_ms: int) -> None:
        if now_ms >= s.check_quorum_deadline_ms:
            if len(s.fetched_since_check) >= s.majority():
                self._reset_check_quorum(s, now_ms)
            else:
                # Check quorum: a majority has not fetched for 1.5 fetch timeouts, so this node
                # may be on the wrong side of a partition; it stops acting as leader.
                self._resign(s, now_ms)
                return
        for voter in s.non_acknowledging_voters():
            if now_ms >= s.next_begin_epoch_ms[voter]:
                s.next_begin_epoch_ms[voter] = now_ms + self.config.request_timeout_ms
                self._send(voter, BeginQuorumEpochRequest(self.node_id, s.epoch))
        for replica_id, parked in list(s.parked.items()):
            if now_ms >= parked.deadline_ms:
                del s.parked[replica_id]
                self._answer_fetch(s, parked.request)

    def _reset_check_quorum(self, s: LeaderState, now_ms: int) -> None:
        s.fetched_since_check = {self.node_id}
        s.check_quorum_deadline_ms = now_ms + self.quorum.check_quorum_timeout_ms()

    def _resign(self, s: LeaderState, now_ms: int) -> None:
        others = [v for v in s.voters if v != self.node_id]
        # The best successors first: the voters with the most of the log.
        successors = tuple(sorted(others, key=lambda v: (-s.replicas[v].end_offset, v)))
        self.quorum.transition_to_resigned(successors, now_ms)
        r = self.quorum.state
        if not isinstance(r, ResignedState):
            raise IllegalStateError(f"expected a ResignedState, not {r!r}")
        self._poll_resigned(r, now_ms)

    def _poll_resigned(self, s: ResignedState, now_ms: int) -> None:
        if now_ms >= s.election_deadline_ms:
            self._become_prospective(now_ms)
            return
        for voter in sorted(s.unacknowledged):
            if now_ms >= s.next_end_epoch_ms[voter]:
                s.next_end_epoch_ms[voter] = now_ms + self.config.request_timeout_ms
                self._send(
                    voter, EndQuorumEpochRequest(self.node_id, s.epoch, s.preferred_successors)
                )

    def _poll_follower(self, s: FollowerState, now_ms: int) -> None:
        if now_ms >= s.fetch_deadline_ms:
            # The leader has been silent for the fetch timeout: ask for pre-votes.
            self._become_prospective(now_ms)
            return
        if s.in_flight is not None and now_ms >= s.in_flight[1]:
            s.in_flight = None
            s.next_fetch_ms = now_ms + self.config.retry_backoff_ms
        if s.in_flight is None and now_ms >= s.next_fetch_ms and s.fetching_snapshot is not None:
            snapshot_id, received = s.fetching_snapshot
            self._send(
                s.leader,
                FetchSnapshotRequest(
                    self.node_id,
                    s.epoch,
                    snapshot_id,
                    len(received),
                    self.config.fetch_snapshot_max_bytes,
                ),
            )
            s.in_flight = (self._correlation_id, now_ms + self.config.request_timeout_ms)
        elif s.in_flight is None and now_ms >= s.next_fetch_ms:
            self._send(
                s.leader,
                FetchRequest(
                    ReplicaState(self.node_id),
                    s.epoch,
                    self.log.end_offset(),
                    self.log.last_fetched_epoch(),
                    self.config.fetch_max_wait_ms,
                ),
            )
            s.in_flight = (self._correlation_id, now_ms + self.config.request_timeout_ms)

    # -- epochs in messages --------------------------------------------------------------------

    def _maybe_transition(self, epoch: int, leader_id: int, now_ms: int) -> bool:
        """A message carries an epoch (and maybe its leader): catch up with it.

        A higher epoch makes any state step down (follower if the leader is known, unattached if
        not); in our own epoch, a node without a leader learns it.  True if the state changed.
        """
        s = self.quorum.state
        known = leader_id != NO_ID and leader_id != self.node_id and leader_id in self.voters
        if epoch > s.epoch:
            if known:
                self.quorum.transition_to_follower(epoch, leader_id, now_ms)
            else:
                self.quorum.transition_to_unattached(epoch, now_ms)
        elif (
            epoch == s.epoch
            and known
            and isinstance(s, (UnattachedState, VotedState, ProspectiveState, CandidateState))
            and s.leader_id == NO_ID
        ):
            # (A prospective that knows its leader goes back to it only when it loses: the
            # voters that grant it a pre-vote still name that leader.)
            self.quorum.transition_to_follower(epoch, leader_id, now_ms)
        elif epoch == s.epoch and known and s.leader_id not in (NO_ID, leader_id):
            # Two leaders claimed for one epoch: QuorumState refuses, and says so.
            self.quorum.transition_to_follower(epoch, leader_id, now_ms)
        else:
            return False
        f = self.quorum.state
        if isinstance(f, FollowerState):
            self._poll_follower(f, now_ms)
        return True

    # -- requests ------------------------------------------------------------------------------

    def _handle_request(self, envelope: Envelope, body: RaftRequest, now_ms: int) -> None:
        if envelope.source_id not in self.voters or envelope.source_id == self.node_id:
            self._refuse(envelope, body, Errors.INCONSISTENT_VOTER_SET)
        elif isinstance(body, VoteRequest):
            self._handle_vote_request(envelope, body, now_ms)
        elif isinstance(body, BeginQuorumEpochRequest):
            self._handle_begin_quorum_epoch(envelope, body, now_ms)
        elif isinstance(body, EndQuorumEpochRequest):
            self._handle_end_quorum_epoch(envelope, body, now_ms)
        elif isinstance(body, FetchSnapshotRequest):
            self._handle_fetch_snapshot_request(envelope, body, now_ms)
        else:
            self._handle_fetch_request(envelope, body, now_ms)

    def _refuse(self, envelope: Envelope, body: RaftRequest, error: Errors) -> None:
        """Answer a request with ``error`` and what this node knows of the epoch and leader."""
        leader, epoch = self.quorum.state.leader_id, self.quorum.epoch
        response: RaftResponse
        if isinstance(body, VoteRequest):
            response = VoteResponse(error, leader, epoch, False)
        elif isinstance(body, BeginQuorumEpochRequest):
            response = BeginQuorumEpochResponse(error, leader, epoch)
        elif isinstance(body, EndQuorumEpochRequest):
            response = EndQuorumEpochResponse(error, leader, epoch)
        elif isinstance(body, FetchSnapshotRequest):
            response = FetchSnapshotResponse(
                error, LeaderIdAndEpoch(leader, epoch), body.snapshot_id
            )
        else:
            response = FetchResponse(error, -1, LeaderIdAndEpoch(leader, epoch))
        self._respond(envelope, response)

    def _handle_vote_request(self, envelope: Envelope, req: VoteRequest, now_ms: int) -> None:
        if req.candidate_id != envelope.source_id:
            self._refuse(envelope, req, Errors.INVALID_REQUEST)
            return
        if req.candidate_epoch < self.quorum.epoch:
            self._refuse(envelope, req, Errors.FENCED_LEADER_EPOCH)
            return
        if req.candidate_epoch > self.quorum.epoch:
            self.quorum.transition_to_unattached(req.candidate_epoch, now_ms)
        s = self.quorum.state
        # Only a log at least as up to date as ours, compared epoch first: a leader must hold
        # every committed entry, and a majority of voters holds each of them.
        ours = (self.log.last_fetched_epoch(), self.log.end_offset())
        up_to_date = (req.last_offset_epoch, req.last_offset) >= ours
        granted = False
        if req.pre_vote:
            # Would it vote in the next epoch?  Nothing changes and nothing is persisted.
            granted = up_to_date and self._may_grant_pre_vote(s, now_ms)
        elif isinstance(s, VotedState):
            granted = s.voted_id == req.candidate_id  # the same vote again, for a lost response
        elif isinstance(s, UnattachedState) or (
            isinstance(s, ProspectiveState) and s.may_vote()
        ):
            if up_to_date:
                self.quorum.transition_to_voted(req.candidate_epoch, req.candidate_id, now_ms)
                granted = True
        self._respond(envelope, VoteResponse(Errors.NONE, s.leader_id, self.quorum.epoch, granted))

    def _may_grant_pre_vote(self, s: EpochState, now_ms: int) -> bool:
        """KIP-996: no pre-vote while this voter leads, or has heard from its leader within the
        fetch timeout (that leader is alive: nobody needs to replace it)."""
        if isinstance(s, (LeaderState, ResignedState)):
            return False
        if isinstance(s, FollowerState):
            return not (s.has_fetched_from_leader and now_ms < s.fetch_deadline_ms)
        return True

    def _handle_begin_quorum_epoch(
        self, envelope: Envelope, req: BeginQuorumEpochRequest, now_ms: int
    ) -> None:
        if req.leader_id != envelope.source_id:
            self._refuse(envelope, req, Errors.INVALID_REQUEST)
            return
        if req.leader_epoch < self.quorum.epoch:
            self._refuse(envelope, req, Errors.FENCED_LEADER_EPOCH)
            return
        self._maybe_transition(req.leader_epoch, req.leader_id, now_ms)
        self._respond(
            envelope, BeginQuorumEpochResponse(Errors.NONE, req.leader_id, req.leader_epoch)
        )

    def _handle_end_quorum_epoch(
        self, envelope: Envelope, req: EndQuorumEpochRequest, now_ms: int
    ) -> None:
        if req.leader_id != envelope.source_id:
            self._refuse(envelope, req, Errors.INVALID_REQUEST)
            return
        if req.leader_epoch < self.quorum.epoch:
            self._refuse(envelope, req, Errors.FENCED_LEADER_EPOCH)
            return
        self._maybe_transition(req.leader_epoch, req.leader_id, now_ms)
        s = self.quorum.state
        if (
            isinstance(s, FollowerState)
            and s.leader == req.leader_id
            and s.epoch == req.leader_epoch
        ):
            # Stand soon, the best successor first, so that the quorum does not wait out a
            # whole fetch timeout for a leader that has said it is gone; and grant pre-votes.
            s.has_fetched_from_leader = False
            successors = req.preferred_successors
            position = (
                successors.index(self.node_id) if self.node_id in successors else len(successors)
            )
            backoff = 0
            if position > 0:
                backoff = min(
                    self.config.election_backoff_max_ms, self.config.retry_backoff_ms << position
                ) + self.rng.randrange(self.config.retry_backoff_ms)
            s.fetch_deadline_ms = min(s.fetch_deadline_ms, now_ms + backoff)
        leader, epoch = self.quorum.state.leader_id, self.quorum.epoch
        self._respond(envelope, EndQuorumEpochResponse(Errors.NONE, leader, epoch))

    def _handle_fetch_request(self, envelope: Envelope, req: FetchRequest, now_ms: int) -> None:
        s = self.quorum.state
        if req.current_leader_epoch < s.epoch:
            self._refuse(envelope, req, Errors.FENCED_LEADER_EPOCH)
            return
        if req.current_leader_epoch > s.epoch:
            self._refuse(envelope, req, Errors.UNKNOWN_LEADER_EPOCH)
            return
        if not isinstance(s, LeaderState):
            self._refuse(envelope, req, Errors.NOT_LEADER_OR_FOLLOWER)
            return
        replica_id = req.replica_state.replica_id
        if replica_id != envelope.source_id or req.fetch_offset < 0 or req.last_fetched_epoch < 0:
            self._refuse(envelope, req, Errors.INVALID_REQUEST)
            return
        progress = s.replicas[replica_id]
        progress.has_acknowledged_leader = True
        progress.last_fetch_ms = now_ms
        s.fetched_since_check.add(replica_id)
        if len(s.fetched_since_check) >= s.majority():
            self._reset_check_quorum(s, now_ms)
        snapshot_id = self._snapshot_needed(req)
        if snapshot_id is not None:
            # The entries the follower needs are gone: it must take the latest snapshot.
            self._respond(
                envelope,
                FetchResponse(
                    Errors.NONE,
                    self.log.high_watermark,
                    LeaderIdAndEpoch(self.node_id, s.epoch),
                    snapshot_id=snapshot_id,
                ),
            )
            return
        diverging = self._diverging_epoch(req)
        if diverging is not None:
            self._respond(
                envelope,
                FetchResponse(
                    Errors.NONE,
                    self.log.high_watermark,
                    LeaderIdAndEpoch(self.node_id, s.epoch),
                    diverging_epoch=diverging,
                ),
            )
            return
        # The fetch offset is what the follower has, the same as ours up to there.
        if s.update_end_offset(replica_id, req.fetch_offset):
            self.log.update_high_watermark(s.high_watermark)
            self._complete_parked(s, now_ms)
        if req.fetch_offset >= self.log.end_offset() and req.max_wait_ms > 0:
            s.parked[replica_id] = ParkedFetch(envelope, now_ms + req.max_wait_ms)
            return
        self._answer_fetch(s, envelope)

    def _snapshot_needed(self, req: FetchRequest) -> OffsetAndEpoch | None:
        """The latest snapshot's id if the follower's position is one the log can no longer
        check or serve (Kafka's ``ReplicatedLog.validateOffsetAndEpoch``): its fetch offset is
        before the log start, or at it with another epoch than the oldest snapshot's, or its
        epoch is older than that snapshot's.  None if the log can answer."""
        if self.log.log_start_offset == 0 and req.fetch_offset == 0:
            return None
        earliest = self.log.earliest_snapshot_id()
        if earliest is None:
            return None
        start = self.log.log_start_offset
        if (
            req.fetch_offset < start
            or (req.fetch_offset == start and req.last_fetched_epoch != earliest.epoch)
            or req.last_fetched_epoch < earliest.epoch
        ):
            return self.log.latest_snapshot_id()
        return None

    def _diverging_epoch(self, req: FetchRequest) -> EpochEndOffset | None:
        """Where the follower's log leaves ours, or None if it is a prefix of ours."""
        if req.fetch_offset == 0 and req.last_fetched_epoch == 0:
            return None
        end_offset, epoch = self.log.end_offset_for_epoch(req.last_fetched_epoch)
        if epoch != req.last_fetched_epoch or req.fetch_offset > end_offset:
            return EpochEndOffset(epoch, end_offset)
        return None

    def _answer_fetch(self, s: LeaderState, envelope: Envelope) -> None:
        req = envelope.body
        if not isinstance(req, FetchRequest):
            raise IllegalStateError(f"expected a FetchRequest, not {req!r}")
        records = self.log.read(req.fetch_offset, self.config.fetch_max_entries)
        self._respond(
            envelope,
            FetchResponse(
                Errors.NONE,
                self.log.high_watermark,
                LeaderIdAndEpoch(self.node_id, s.epoch),
                records=records,
            ),
        )

    def _handle_fetch_snapshot_request(
        self, envelope: Envelope, req: FetchSnapshotRequest, now_ms: int
    ) -> None:
        s = self.quorum.state
        if req.current_leader_epoch < s.epoch:
            self._refuse(envelope, req, Errors.FENCED_LEADER_EPOCH)
            return
        if req.current_leader_epoch > s.epoch:
            self._refuse(envelope, req, Errors.UNKNOWN_LEADER_EPOCH)
            return
        if not isinstance(s, LeaderState):
            self._refuse(envelope, req, Errors.NOT_LEADER_OR_FOLLOWER)
            return
        if req.replica_id != envelope.source_id or req.max_bytes <= 0:
            self._refuse(envelope, req, Errors.INVALID_REQUEST)
            return
        # A follower fetching a snapshot is following: it counts for check quorum.
        s.fetched_since_check.add(req.replica_id)
        s.replicas[req.replica_id].last_fetch_ms = now_ms
        if len(s.fetched_since_check) >= s.majority():
            self._reset_check_quorum(s, now_ms)
        snapshot = self.log.read_snapshot(req.snapshot_id)
        if snapshot is None:
            self._refuse(envelope, req, Errors.SNAPSHOT_NOT_FOUND)
            return
        size = snapshot.size_in_bytes()
        if not 0 <= req.position <= size:
            self._refuse(envelope, req, Errors.POSITION_OUT_OF_RANGE)
            return
        chunk = snapshot.slice(
            req.position, min(req.max_bytes, self.config.fetch_snapshot_max_bytes)
        )
        self._respond(
            envelope,
            FetchSnapshotResponse(
                Errors.NONE,
                LeaderIdAndEpoch(self.node_id, s.epoch),
                req.snapshot_id,
                size,
                req.position,
                chunk,
            ),
        )

    def _complete_parked(self, s: LeaderState, now_ms: int) -> None:
        parked, s.parked = s.parked, {}
        for p in parked.values():
            self._answer_fetch(s, p.request)

    # -- responses -----------------------------------------------------------------------------

    def _handle_response(self, envelope: Envelope, body: RaftResponse, now_ms: int) -> None:
        if envelope.source_id not in self.voters:
            return
        if isinstance(body, FetchResponse):
            self._handle_fetch_response(envelope, body, now_ms)
            return
        if isinstance(body, FetchSnapshotResponse):
            self._handle_fetch_snapshot_response(envelope, body, now_ms)
            return
        if self._maybe_transition(body.leader_epoch, body.leader_id, now_ms):
            return
        s = self.quorum.state
        if body.leader_epoch != s.epoch:
            return  # from an older epoch: nothing to learn
        if isinstance(body, VoteResponse) and isinstance(s, NomineeState):
            if body.error_code != Errors.NONE:
                return
            if s.requests.get(envelope.correlation_id) != envelope.source_id:
                return  # not this round's: a pre-vote must not count as a vote, nor the reverse
            if body.vote_granted:
                s.granting.add(envelope.source_id)
                if s.is_vote_granted():
                    if isinstance(s, ProspectiveState):
                        self._become_candidate(now_ms)
                    else:
                        self._become_leader(now_ms)
            else:
                s.rejecting.add(envelope.source_id)
                if isinstance(s, ProspectiveState) and s.is_vote_rejected():
                    self._poll_prospective(s, now_ms)
        elif isinstance(body, BeginQuorumEpochResponse) and isinstance(s, LeaderState):
            if body.error_code == Errors.NONE:
                s.replicas[envelope.source_id].has_acknowledged_leader = True
        elif isinstance(body, EndQuorumEpochResponse) and isinstance(s, ResignedState):
            if body.error_code == Errors.NONE:
                s.unacknowledged.discard(envelope.source_id)

    def _handle_fetch_response(self, envelope: Envelope, resp: FetchResponse, now_ms: int) -> None:
        leader = resp.current_leader
        if self._maybe_transition(leader.leader_epoch, leader.leader_id, now_ms):
            return
        s = self.quorum.state
        # Only the answer to the Fetch in flight: a late or repeated one describes a log
        # this node may no longer have.
        if (
            not isinstance(s, FollowerState)
            or envelope.source_id != s.leader
            or s.in_flight is None
            or s.in_flight[0] != envelope.correlation_id
        ):
            return
        s.in_flight = None
        if resp.error_code != Errors.NONE:
            s.next_fetch_ms = now_ms + self.config.retry_backoff_ms
            self._poll_follower(s, now_ms)
            return
        s.fetch_deadline_ms = now_ms + self.config.fetch_timeout_ms
        s.has_fetched_from_leader = True
        if resp.snapshot_id is not None:
            s.fetching_snapshot = (resp.snapshot_id, bytearray())
        elif resp.diverging_epoch is not None:
            self._truncate_to_diverging(resp.diverging_epoch)
        else:
            if resp.records and resp.records[0].offset == self.log.end_offset():
                self.log.append_as_follower(resp.records)
            high_watermark = min(resp.high_watermark, self.log.end_offset())
            if high_watermark > self.log.high_watermark:
                self.log.update_high_watermark(high_watermark)
        s.next_fetch_ms = now_ms
        self._poll_follower(s, now_ms)

    def _handle_fetch_snapshot_response(
        self, envelope: Envelope, resp: FetchSnapshotResponse, now_ms: int
    ) -> None:
        leader = resp.current_leader
        if self._maybe_transition(leader.leader_epoch, leader.leader_id, now_ms):
            return
        s = self.quorum.state
        if (
            not isinstance(s, FollowerState)
            or envelope.source_id != s.leader
            or s.in_flight is None
            or s.in_flight[0] != envelope.correlation_id
            or s.fetching_snapshot is None
        ):
            return
        s.in_flight = None
        snapshot_id, received = s.fetching_snapshot
        if resp.error_code != Errors.NONE:
            if resp.error_code in (Errors.SNAPSHOT_NOT_FOUND, Errors.POSITION_OUT_OF_RANGE):
                # The leader moved on to a newer snapshot: Fetch again, to learn its id.
                s.fetching_snapshot = None
            s.next_fetch_ms = now_ms + self.config.retry_backoff_ms
            self._poll_follower(s, now_ms)
            return
        s.fetch_deadline_ms = now_ms + self.config.fetch_timeout_ms
        s.has_fetched_from_leader = True  # a chunk is its leader's answer as a Fetch's is
        if (
            resp.snapshot_id != snapshot_id
            or resp.size > self.config.max_snapshot_bytes
            or resp.position != len(received)
            or resp.size < resp.position + len(resp.unaligned_records)
            or (not resp.unaligned_records and resp.position < resp.size)
        ):
            # Not the chunk asked for: start the snapshot again from the leader's answer.
            s.fetching_snapshot = None
        else:
            received += resp.unaligned_records
            if len(received) == resp.size:
                s.fetching_snapshot = None
                if snapshot_id.offset >= self.log.high_watermark:
                    self.log.install_snapshot(RawSnapshotReader(snapshot_id, bytes(received)))
        s.next_fetch_ms = now_ms
        self._poll_follower(s, now_ms)

    def _truncate_to_diverging(self, diverging: EpochEndOffset) -> None:
        """Cut the log where it leaves the leader's, as far as this answer tells."""
        local_end, local_epoch = self.log.end_offset_for_epoch(diverging.epoch)
        if local_epoch == diverging.epoch:
            # Both have entries of that epoch: they agree up to where the shorter one ends.
            offset = min(local_end, diverging.end_offset)
        else:
            # Ours ends before that epoch: what follows is of epochs the leader does not have.
            offset = local_end
        # Never before the log start: what a snapshot holds is committed, the leader's too.
        offset = max(offset, self.log.log_start_offset)
        if offset < self.log.end_offset():
            self.log.truncate_to(offset)
