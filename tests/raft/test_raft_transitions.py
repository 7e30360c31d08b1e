"""The Raft core's rules one at a time: votes, epochs, divergence, the high watermark, the store."""

from __future__ import annotations

import pathlib
import random
import subprocess
import sys
from collections.abc import Iterable

import pytest

from kafkacore.errors import CorruptRecordError, Errors, IllegalStateError, NotLeaderOrFollowerError
from kafkacore.raft import (
    ElectionState,
    FileQuorumStateStore,
    KafkaRaftClient,
    MemoryQuorumStateStore,
    MemoryRaftLog,
    RaftConfig,
)
from kafkacore.raft.epoch_state import (
    CandidateState,
    FollowerState,
    LeaderState,
    ProspectiveState,
    ResignedState,
    UnattachedState,
    VotedState,
)
from kafkacore.raft.raft_log import LeaderChangeMessage, LogEntry
from kafkacore.raft.raft_messages import (
    BeginQuorumEpochRequest,
    EndQuorumEpochRequest,
    Envelope,
    FetchRequest,
    FetchResponse,
    LeaderIdAndEpoch,
    ReplicaState,
    VoteRequest,
    VoteResponse,
)

VOTERS = (1, 2, 3)
CONFIG = RaftConfig()


def client(
    node_id: int,
    log: MemoryRaftLog | None = None,
    store: MemoryQuorumStateStore | None = None,
    now_ms: int = 0,
) -> KafkaRaftClient:
    return KafkaRaftClient(
        node_id,
        VOTERS,
        log if log is not None else MemoryRaftLog(),
        store if store is not None else MemoryQuorumStateStore(),
        random.Random(node_id),
        now_ms,
        CONFIG,
    )


def log_of(epochs: Iterable[int]) -> MemoryRaftLog:
    log = MemoryRaftLog()
    for epoch in epochs:
        log.append_as_leader([b"v%d" % log.end_offset()], epoch)
    return log


def vote(
    to: KafkaRaftClient, candidate: int, epoch: int, last_epoch: int, last_offset: int
) -> VoteResponse:
    request = Envelope(
        candidate, to.node_id, 7, VoteRequest(epoch, candidate, last_epoch, last_offset, to.node_id)
    )
    (response,) = to.handle(request, 10)
    assert isinstance(response.body, VoteResponse)
    assert response.correlation_id == 7
    return response.body


def deliver(
    clients: dict[int, KafkaRaftClient],
    pending: list[Envelope],
    now_ms: int,
    cut: int | None = None,
) -> None:
    """A perfect network (but for node ``cut``, if given): deliver until nothing is left to send."""
    while pending:
        envelope = pending.pop(0)
        if (
            cut not in (envelope.source_id, envelope.destination_id)
            and envelope.destination_id in clients
        ):
            pending += clients[envelope.destination_id].handle(envelope, now_ms)


def one(envelopes: list[Envelope], to: int, kind: type) -> Envelope:
    """The one message of ``kind`` for node ``to`` among ``envelopes``."""
    (found,) = [e for e in envelopes if e.destination_id == to and isinstance(e.body, kind)]
    return found


def pre_vote(
    candidate: KafkaRaftClient, voters: dict[int, KafkaRaftClient], now_ms: int
) -> list[Envelope]:
    """Run ``candidate``'s timer into a pre-vote round and hand it the answers of ``voters``
    only; returns what it sends once a candidate (its VoteRequests)."""
    asks = candidate.poll(max(now_ms, candidate.next_poll_ms))
    assert isinstance(candidate.state, ProspectiveState)
    out: list[Envelope] = []
    for i, voter in voters.items():
        (answer,) = voter.handle(one(asks, i, VoteRequest), now_ms)
        out += candidate.handle(answer, now_ms)
    assert isinstance(candidate.state, CandidateState)
    return out


def elect(clients: dict[int, KafkaRaftClient], node_id: int, now_ms: int) -> int:
    """Let ``node_id``'s election timer fire and the others answer; returns the time after."""
    candidate = clients[node_id]
    now_ms = max(now_ms, candidate.next_poll_ms)
    deliver(clients, candidate.poll(now_ms), now_ms)
    assert candidate.is_leader()
    return now_ms


# -- votes ---------------------------------------------------------------------------------------


def test_vote_only_for_a_log_at_least_as_up_to_date() -> None:
    # The voter's log: epochs 1, 1, 2 (end offset 3, last epoch 2).
    assert not vote(client(1, log_of([1, 1, 2])), 2, 3, 1, 9).vote_granted  # older last epoch
    assert not vote(client(1, log_of([1, 1, 2])), 2, 3, 2, 2).vote_granted  # same epoch, shorter
    assert vote(client(1, log_of([1, 1, 2])), 2, 3, 2, 3).vote_granted  # as up to date
    assert vote(client(1, log_of([1, 1, 2])), 2, 4, 3, 1).vote_granted  # later epoch wins, shorter


def test_one_vote_per_epoch_even_after_a_restart() -> None:
    store = MemoryQuorumStateStore()
    voter = client(1, store=store)
    assert vote(voter, 2, 1, 0, 0).vote_granted
    assert isinstance(voter.state, VotedState)
    assert not vote(voter, 3, 1, 0, 0).vote_granted  # a second candidate in the same epoch
    assert vote(voter, 2, 1, 0, 0).vote_granted  # the same candidate again (a lost response)
    with pytest.raises(IllegalStateError, match="one vote per epoch"):
        voter.quorum.transition_to_voted(1, 3, 20)
    restarted = client(1, store=store)
    assert store.read() == ElectionState(1, voted_id=2)
    assert isinstance(restarted.state, VotedState)
    assert not vote(restarted, 3, 1, 0, 0).vote_granted
    assert vote(restarted, 3, 2, 0, 0).vote_granted  # a new epoch, a new vote


def test_the_vote_is_durable_before_it_is_granted() -> None:
    class BrokenDisk(MemoryQuorumStateStore):
        def write(self, state: ElectionState) -> None:
            if state.has_voted():
                raise OSError("disk gone")
            super().write(state)

    voter = client(1, store=BrokenDisk())
    request = Envelope(2, 1, 7, VoteRequest(1, 2, 0, 0, 1))
    with pytest.raises(OSError):
        voter.handle(request, 10)
    assert not isinstance(voter.state, VotedState)  # and no response left


def test_vote_refused_below_the_current_epoch() -> None:
    voter = client(1)
    assert vote(voter, 2, 5, 0, 0).vote_granted
    stale = vote(voter, 3, 4, 0, 0)
    assert (stale.vote_granted, stale.error_code, stale.leader_epoch) == (
        False,
        Errors.FENCED_LEADER_EPOCH,
        5,
    )


# -- epochs --------------------------------------------------------------------------------------


def three_voters() -> dict[int, KafkaRaftClient]:
    return {i: client(i) for i in VOTERS}


def test_election_then_followers_fetch_and_the_leader_change_commits() -> None:
    clients = three_voters()
    now = elect(clients, 1, 0)
    leader = clients[1]
    assert leader.epoch == 1
    assert all(isinstance(clients[i].state, FollowerState) for i in (2, 3))
    # Its first record is the LeaderChange; once the followers fetch past it, it is committed.
    first = leader.log.read(0, 1)[0]
    assert first.leader_change == LeaderChangeMessage(
        1, VOTERS, first.leader_change.granting_voters
    )  # type: ignore[union-attr]
    offset = leader.append([b"a", b"b"], now)
    for i in (2, 3):
        deliver(clients, clients[i].poll(now), now)
    deliver(clients, leader.poll(now + CONFIG.fetch_max_wait_ms), now + CONFIG.fetch_max_wait_ms)
    assert leader.high_watermark == offset + 1
    assert [e.value for e in clients[2].log.read(1, 2)] == [b"a", b"b"]


@pytest.mark.parametrize("message", ["vote", "begin", "end", "fetch_response", "vote_response"])
def test_a_higher_epoch_in_any_message_makes_the_leader_step_down(message: str) -> None:
    clients = three_voters()
    now = elect(clients, 1, 0)
    leader = clients[1]
    epoch = leader.epoch + 1
    body = {
        "vote": VoteRequest(epoch, 2, 9, 99, 1),
        "begin": BeginQuorumEpochRequest(2, epoch),
        "end": EndQuorumEpochRequest(2, epoch, (1,)),
        "fetch_response": FetchResponse(Errors.FENCED_LEADER_EPOCH, -1, LeaderIdAndEpoch(2, epoch)),
        "vote_response": VoteResponse(Errors.NONE, -1, epoch, False),
    }[message]
    leader.handle(Envelope(2, 1, 99, body), now + 1)
    assert not leader.is_leader()
    assert leader.epoch == epoch
    assert isinstance(leader.state, (FollowerState, UnattachedState, VotedState))
    with pytest.raises(NotLeaderOrFollowerError):
        leader.append([b"late"], now + 2)


def test_a_fetch_from_an_older_epoch_is_fenced() -> None:
    clients = three_voters()
    now = elect(clients, 1, 0)
    (response,) = clients[1].handle(Envelope(2, 1, 5, FetchRequest(ReplicaState(2), 0, 0, 0)), now)
    assert isinstance(response.body, FetchResponse)
    assert response.body.error_code == Errors.FENCED_LEADER_EPOCH
    assert response.body.current_leader == LeaderIdAndEpoch(1, 1)


def test_transitions_refuse_what_breaks_safety() -> None:
    node = client(1)
    quorum = node.quorum
    with pytest.raises(IllegalStateError):
        quorum.transition_to_unattached(0, 0)  # not a higher epoch
    with pytest.raises(IllegalStateError, match="majority"):
        quorum.transition_to_leader(0, 0, 0)  # not even a candidate
    quorum.transition_to_follower(3, 2, 0)
    with pytest.raises(IllegalStateError, match="whose leader is 2"):
        quorum.transition_to_follower(3, 3, 0)  # a second leader in epoch 3
    with pytest.raises(IllegalStateError):
        quorum.transition_to_follower(2, 3, 0)  # an older epoch
    with pytest.raises(IllegalStateError, match="pre-votes"):
        quorum.transition_to_candidate(0)  # no pre-vote asked for
    quorum.transition_to_prospective(0)
    assert isinstance(quorum.state, ProspectiveState) and quorum.epoch == 3
    with pytest.raises(IllegalStateError, match="pre-votes"):
        quorum.transition_to_candidate(0)  # one pre-vote of three
    quorum.state.granting.add(2)
    quorum.transition_to_candidate(0)
    assert isinstance(quorum.state, CandidateState) and quorum.epoch == 4
    with pytest.raises(IllegalStateError, match="majority"):
        quorum.transition_to_leader(0, 0, 0)  # one vote of three


def test_restart_resumes_from_the_election_state() -> None:
    cases = [
        (ElectionState(4, voted_id=1, leader_id=1), ResignedState),
        (ElectionState(4, leader_id=2), FollowerState),
        (ElectionState(4, voted_id=1), CandidateState),
        (ElectionState(4, voted_id=3), VotedState),
        (ElectionState(4), UnattachedState),
    ]
    for election, kind in cases:
        store = MemoryQuorumStateStore()
        store.write(election)
        node = client(1, store=store)
        assert isinstance(node.state, kind), election
        assert node.epoch == 4


# -- replication ---------------------------------------------------------------------------------


def test_a_diverging_follower_truncates_and_catches_up() -> None:
    # The leader of epoch 4 has epochs 1, 1, 2, 2; the follower has 1, 1, 3, 3, 3 from a leader
    # of epoch 3 that nobody else heard.
    leader_store = MemoryQuorumStateStore()
    leader_store.write(ElectionState(3))
    clients = {
        1: client(1, log_of([1, 1, 2, 2]), leader_store),
        2: client(2, log_of([1, 1, 3, 3, 3])),
        3: client(3, log_of([1, 1, 2, 2])),
    }
    # Node 2's log is ahead in epochs, so it would refuse 1 its vote; 3 elects 1 alone.
    leader = clients[1]
    now = leader.next_poll_ms
    deliver(clients, leader.poll(now), now, cut=2)
    assert leader.is_leader() and leader.epoch == 4
    follower = clients[2]
    fetches = follower.handle(Envelope(1, 2, 1, BeginQuorumEpochRequest(1, 4)), now)
    (fetch,) = [e for e in fetches if isinstance(e.body, FetchRequest)]
    assert isinstance(fetch.body, FetchRequest)
    assert (fetch.body.fetch_offset, fetch.body.last_fetched_epoch) == (5, 3)
    (answer,) = leader.handle(fetch, now)
    assert isinstance(answer.body, FetchResponse)
    assert answer.body.diverging_epoch is not None
    assert (answer.body.diverging_epoch.epoch, answer.body.diverging_epoch.end_offset) == (2, 4)
    (refetch,) = follower.handle(answer, now)
    assert follower.log.end_offset() == 2  # its epoch 3 entries are gone; it has no epoch 2
    assert isinstance(refetch.body, FetchRequest)
    assert (refetch.body.fetch_offset, refetch.body.last_fetched_epoch) == (2, 1)
    deliver(clients, [refetch], now)
    assert follower.log.read(0, 10) == leader.log.read(0, 10)


def test_the_high_watermark_waits_for_an_entry_of_the_leaders_epoch() -> None:
    # Entries of epoch 1 held by the leader and one follower: a majority, but of an old epoch.
    store = MemoryQuorumStateStore()
    store.write(ElectionState(1))
    clients = {1: client(1, log_of([1, 1]), store), 2: client(2, log_of([1, 1])), 3: client(3)}
    leader = clients[1]
    now = leader.next_poll_ms
    (to_2,) = [e for e in pre_vote(leader, {2: clients[2]}, now) if e.destination_id == 2]
    (granted,) = clients[2].handle(to_2, now)
    leader.handle(granted, now)  # its BeginQuorumEpoch is not delivered: 2 fetches by hand
    assert leader.is_leader() and leader.log.end_offset() == 3  # the LeaderChange at offset 2
    fetch = Envelope(2, 1, 50, FetchRequest(ReplicaState(2), leader.epoch, 2, 1))
    leader.handle(fetch, now)
    assert leader.high_watermark == 0  # offsets 0 and 1 are on a majority, but not committed
    leader.handle(
        Envelope(2, 1, 51, FetchRequest(ReplicaState(2), leader.epoch, 3, leader.epoch)), now
    )
    assert leader.high_watermark == 3  # the LeaderChange is, and everything before it with it


def test_entries_of_an_old_epoch_on_a_majority_are_not_committed_until_one_of_the_new() -> None:
    """Raft's figure 8, in five voters: why the commit rule counts only the leader's epoch.

    Node 1 led epoch 2 and left two entries of it on nodes 1 and 2; node 5 led epoch 3 and left
    its own entry at the same offset on itself alone.  Node 1 is elected for epoch 4 and copies
    its epoch 2 entries to node 3: three voters of five hold them, yet they are not committed,
    and rightly so: node 5 (its last epoch, 3, is later) wins epoch 5 and replaces them.
    """
    voters = (1, 2, 3, 4, 5)
    small = RaftConfig(fetch_max_entries=2)

    def voter(node_id: int, epochs: list[int], election: ElectionState) -> KafkaRaftClient:
        store = MemoryQuorumStateStore()
        store.write(election)
        log = log_of(epochs)
        log.update_high_watermark(1)
        return KafkaRaftClient(node_id, voters, log, store, random.Random(node_id), 0, small)

    clients = {
        1: voter(1, [1, 2, 2], ElectionState(3)),
        2: voter(2, [1, 2, 2], ElectionState(3)),
        3: voter(3, [1], ElectionState(3, voted_id=5)),
        4: voter(4, [1], ElectionState(3, voted_id=5)),
        5: voter(5, [1, 3], ElectionState(4)),
    }
    node1, node3 = clients[1], clients[3]
    now = node1.next_poll_ms
    asks = pre_vote(node1, {2: clients[2], 3: clients[3]}, now)
    begins: list[Envelope] = []
    for i in (2, 3):
        (granted,) = clients[i].handle(one(asks, i, VoteRequest), now)
        begins += node1.handle(granted, now)
    assert node1.is_leader() and node1.epoch == 4 and node1.log.end_offset() == 4
    # Node 3 fetches offsets 1 and 2 (epoch 2); then nodes 2 and 3 fetch at 3, the LeaderChange,
    # and those answers are lost.
    fetch = one(node3.handle(one(begins, 3, BeginQuorumEpochRequest), now), 1, FetchRequest)
    (answer,) = node1.handle(fetch, now)
    (next_fetch,) = node3.handle(answer, now)
    assert next_fetch.body.fetch_offset == 3  # type: ignore[union-attr]
    node1.handle(next_fetch, now)
    node2_fetch = clients[2].handle(one(begins, 2, BeginQuorumEpochRequest), now)
    node1.handle(one(node2_fetch, 1, FetchRequest), now)
    holders = [i for i in voters if [e.epoch for e in clients[i].log.read(0, 3)] == [1, 2, 2]]
    assert holders == [1, 2, 3]  # a majority
    assert node1.high_watermark == 1  # and still not committed
    # Node 1 crashes; once its followers have not heard from it for the fetch timeout (they
    # refuse pre-votes before), node 5 stands with the later last epoch and wins.
    del clients[1]
    node5 = clients[5]
    later = max(node5.next_poll_ms, now + small.fetch_timeout_ms)
    deliver(clients, node5.poll(later), later)
    # The voters that grant its pre-vote name node 1 as the leader of epoch 4, which node 5 did
    # not know: it follows node 1 first, and stands when its own fetch timeout passes.
    assert isinstance(node5.state, FollowerState) and node5.state.leader == 1
    later += small.fetch_timeout_ms
    deliver(clients, node5.poll(later), later)
    assert node5.is_leader() and node5.epoch == 5 and node5.high_watermark == 3
    # Its held fetches are answered after their wait, with the high watermark.
    deliver(clients, node5.poll(later + small.fetch_max_wait_ms), later + small.fetch_max_wait_ms)
    for i in (2, 3, 4):
        assert [e.epoch for e in clients[i].log.read(0, 10)] == [1, 3, 5]
        assert clients[i].high_watermark == 3


def test_a_leader_without_a_majority_resigns() -> None:
    clients = three_voters()
    now = elect(clients, 1, 0)
    leader = clients[1]
    timeout = CONFIG.fetch_timeout_ms * 3 // 2
    # Follower 2 keeps fetching: with the leader that is a majority of three.
    fetch = Envelope(2, 1, 77, FetchRequest(ReplicaState(2), 1, leader.log.end_offset(), 1, 0))
    for t in range(now, now + 2 * timeout, 500):
        leader.handle(fetch, t)
        leader.poll(t)
    assert leader.is_leader()
    # Then nobody: after 1.5 fetch timeouts it resigns and tells the others.
    later = now + 2 * timeout
    leader.poll(later)
    sent = leader.poll(later + timeout)
    assert isinstance(leader.state, ResignedState)
    assert {e.destination_id for e in sent if isinstance(e.body, EndQuorumEpochRequest)} == {2, 3}


def test_a_follower_stands_after_the_fetch_timeout() -> None:
    clients = three_voters()
    now = elect(clients, 1, 0)
    follower = clients[2]
    later = now + CONFIG.fetch_timeout_ms + 1
    asks = follower.poll(later)
    # First a pre-vote, in its epoch: the leader is silent, and voter 3 has not fetched.
    assert isinstance(follower.state, ProspectiveState) and follower.epoch == 1
    (answer,) = clients[3].handle(one(asks, 3, VoteRequest), later)
    assert answer.body == VoteResponse(Errors.NONE, 1, 1, True)
    follower.handle(answer, later)
    assert isinstance(follower.state, CandidateState) and follower.epoch == 2


def test_follower_log_refuses_to_truncate_committed_entries() -> None:
    log = log_of([1, 1, 1])
    log.update_high_watermark(2)
    with pytest.raises(IllegalStateError, match="below the high watermark"):
        log.truncate_to(1)
    with pytest.raises(IllegalStateError):
        log.append_as_follower([LogEntry(5, 1)])
    assert log.end_offset_for_epoch(1) == (3, 1)
    assert log.end_offset_for_epoch(0) == (0, 0)


# -- the store -----------------------------------------------------------------------------------


def test_file_store_round_trip_and_corruption(tmp_path: pathlib.Path) -> None:
    store = FileQuorumStateStore(tmp_path)
    assert store.read() is None
    store.write(ElectionState(7, voted_id=2, leader_id=2))
    assert FileQuorumStateStore(tmp_path).read() == ElectionState(7, voted_id=2, leader_id=2)
    assert [p.name for p in tmp_path.iterdir()] == ["quorum-state"]
    (tmp_path / "quorum-state").write_text("{not json")
    with pytest.raises(CorruptRecordError, match="not a quorum state"):
        store.read()


def test_a_voter_restarted_on_a_file_store_keeps_its_vote(tmp_path: pathlib.Path) -> None:
    log = MemoryRaftLog()
    first = KafkaRaftClient(1, VOTERS, log, FileQuorumStateStore(tmp_path), random.Random(1), 0)
    assert vote(first, 2, 3, 0, 0).vote_granted
    again = KafkaRaftClient(1, VOTERS, log, FileQuorumStateStore(tmp_path), random.Random(2), 0)
    assert not vote(again, 3, 3, 0, 0).vote_granted
    assert isinstance(again.state, VotedState) and again.state.voted_id == 2


def test_leader_state_high_watermark_is_the_majority_offset() -> None:
    state = LeaderState(2, 1, frozenset({1, 2, 3, 4, 5}), frozenset({1, 2, 3}), 10, 0, 0)
    for replica, end in [(1, 20), (2, 15), (3, 11)]:
        state.update_end_offset(replica, end)
    assert state.high_watermark == 11  # three of five have 11
    state.update_end_offset(4, 18)
    assert state.high_watermark == 15


def test_bad_input_gets_a_typed_answer_or_error() -> None:
    node = client(1)
    (stranger,) = node.handle(Envelope(9, 1, 1, VoteRequest(1, 9, 0, 0, 1)), 0)
    assert stranger.body == VoteResponse(Errors.INCONSISTENT_VOTER_SET, -1, 0, False)
    (forged,) = node.handle(Envelope(2, 1, 2, VoteRequest(1, 3, 0, 0, 1)), 0)
    assert (
        isinstance(forged.body, VoteResponse) and forged.body.error_code == Errors.INVALID_REQUEST
    )
    assert not isinstance(node.state, VotedState)
    with pytest.raises(IllegalStateError, match="for node 2"):
        node.handle(Envelope(3, 2, 3, VoteRequest(1, 3, 0, 0, 2)), 0)
    with pytest.raises(TypeError, match="not a message of the quorum"):
        node.handle(Envelope(2, 1, 4, "hello"), 0)  # type: ignore[arg-type]
    clients = three_voters()
    now = elect(clients, 1, 0)
    with pytest.raises(ValueError, match="no records"):
        clients[1].append([], now)
    with pytest.raises(IllegalStateError, match="not one of the voters"):
        KafkaRaftClient(4, VOTERS, MemoryRaftLog(), MemoryQuorumStateStore(), random.Random(0), 0)


def test_the_raft_package_imports_nothing_of_the_broker(tmp_path: pathlib.Path) -> None:
    # Run outside the checkout: from its root, ``-c`` would import the uncompiled source tree
    # instead of the installed package.
    code = (
        "import sys, kafkacore.raft, kafkacore.raft.kafka_raft_client; "
        "print(sorted(m for m in sys.modules if m.startswith('kafkacore.broker')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True, text=True, check=True, timeout=60, cwd=tmp_path,
    )
    assert out.stdout.strip() == "[]"
