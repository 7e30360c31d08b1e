"""Snapshots in the Raft core (KIP-630): a voter too far behind catches up by FetchSnapshot.

The simulation of ``raft_simulation`` without random faults: a follower crashes, the others
commit and snapshot until the leader has deleted the entries it would need, and the follower
restarts: its Fetch gets the leader's ``SnapshotId``, it fetches the snapshot in chunks
(FetchSnapshot), installs it and fetches the rest of the log.  The invariant checker runs
after every event, as in the model test.  Then FetchSnapshot's refusals, by error name.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from raft_simulation import SIMULATION_CONFIG, RaftSimulation, SimNode, state_records

from kafkacore.errors import Errors, IllegalStateError
from kafkacore.raft import OffsetAndEpoch
from kafkacore.raft.epoch_state import FollowerState
from kafkacore.raft.raft_messages import (
    Envelope,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    LeaderIdAndEpoch,
    ReplicaState,
)

BOUND_MS = 15_000


def _leader(sim: RaftSimulation) -> SimNode:
    (leader,) = [n for n in sim.nodes.values() if n.client is not None and n.client.is_leader()]
    return leader


def _commit_and_snapshot(sim: RaftSimulation, rounds: int) -> None:
    """Append a few records a round through the leader, let them commit, and have every live
    voter snapshot at its high watermark."""
    for i in range(rounds):
        leader = _leader(sim)
        assert leader.client is not None
        leader.client.append([f"record {i}.{j}".encode() for j in range(5)], sim.now)
        sim._schedule_poll(leader, sim.now)  # noqa: SLF001 - the simulation's own driver
        sim.run_until_committed(BOUND_MS)
        for node in sim.nodes.values():
            sim.snapshot(node)


@pytest.mark.parametrize("voters", [3, 5])
def test_a_voter_behind_the_log_start_catches_up_by_fetch_snapshot(voters: int) -> None:
    sim = RaftSimulation(7, voters, replace(SIMULATION_CONFIG, fetch_snapshot_max_bytes=200,
                                            snapshots_retained=2))
    sim.snapshot_every = 5
    chunks: list[int] = []
    sim.trace = lambda line: chunks.append(1) if "FetchSnapshotResponse(error_code=<Errors.NONE" \
        in line else None
    sim.heal()
    sim.run_until_committed(BOUND_MS)
    leader = _leader(sim)
    behind = next(n for n in sim.nodes.values() if n is not leader)
    behind.client = None  # crashed: it keeps its log and its election state
    behind.incarnation += 1
    end_before = behind.log.end_offset()

    _commit_and_snapshot(sim, 6)
    leader = _leader(sim)
    assert leader.log.log_start_offset > end_before, "the leader still has the entries"

    sim._start(behind)  # noqa: SLF001 - the restart of the simulation's crash
    sim.checker.restarted(behind.node_id)
    start = sim.now
    while not (behind.log.installs and behind.log.end_offset() == leader.log.end_offset()
               and behind.client is not None
               and behind.client.high_watermark == leader.client.high_watermark):  # type: ignore[union-attr]
        assert sim.now - start <= BOUND_MS, "the voter did not catch up"
        assert sim.step(), "the simulation ran out of events"
    assert behind.log.installs == 1
    assert len(chunks) > 1, "the snapshot came in one chunk: max bytes not applied"
    # Its log starts at the snapshot, and its state is the leader's.
    assert behind.log.log_start_offset == behind.log.latest_snapshot_id().offset  # type: ignore[union-attr]
    hw = leader.client.high_watermark  # type: ignore[union-attr]
    assert state_records(behind.log, hw) == state_records(leader.log, hw)
    # It takes part again: the next record is committed with it among the voters.
    _commit_and_snapshot(sim, 1)


def _quiet_leader() -> tuple[RaftSimulation, SimNode]:
    sim = RaftSimulation(3, 3, replace(SIMULATION_CONFIG, fetch_snapshot_max_bytes=64))
    sim.snapshot_every = 5
    sim.heal()
    sim.run_until_committed(BOUND_MS)
    _commit_and_snapshot(sim, 3)
    return sim, _leader(sim)


def _ask(sim: RaftSimulation, leader: SimNode, source: int, body: object) -> object:
    assert leader.client is not None
    out = leader.client.handle(Envelope(source, leader.node_id, 10_000, body), sim.now)  # type: ignore[arg-type]
    (answer,) = [e.body for e in out if e.correlation_id == 10_000]
    return answer


def test_fetch_snapshot_refuses_bad_input_by_name() -> None:
    sim, leader = _quiet_leader()
    assert leader.client is not None
    follower = next(i for i in sim.nodes if i != leader.node_id)
    epoch = leader.client.epoch
    snapshot_id = leader.log.latest_snapshot_id()
    assert snapshot_id is not None
    reader = leader.log.read_snapshot(snapshot_id)
    assert reader is not None
    size = reader.size_in_bytes()

    def fetch_snapshot(**changes: object) -> FetchSnapshotResponse:
        request = replace(FetchSnapshotRequest(follower, epoch, snapshot_id, 0, 1000), **changes)
        answer = _ask(sim, leader, follower, request)
        assert isinstance(answer, FetchSnapshotResponse)
        return answer

    chunk = fetch_snapshot(position=10, max_bytes=1000)
    # Bounded by the leader's fetch_snapshot_max_bytes (64), whatever the request asks.
    assert (chunk.error_code, chunk.size, chunk.position) == (Errors.NONE, size, 10)
    assert chunk.unaligned_records == reader.data[10:74]
    assert fetch_snapshot(position=size).unaligned_records == b""  # the end: nothing more
    assert fetch_snapshot(snapshot_id=OffsetAndEpoch(snapshot_id.offset + 1, 1)).error_code \
        == Errors.SNAPSHOT_NOT_FOUND
    assert fetch_snapshot(position=size + 1).error_code == Errors.POSITION_OUT_OF_RANGE
    assert fetch_snapshot(position=-1).error_code == Errors.POSITION_OUT_OF_RANGE
    assert fetch_snapshot(current_leader_epoch=epoch - 1).error_code == Errors.FENCED_LEADER_EPOCH
    assert fetch_snapshot(current_leader_epoch=epoch + 1).error_code == Errors.UNKNOWN_LEADER_EPOCH
    assert fetch_snapshot(max_bytes=0).error_code == Errors.INVALID_REQUEST
    assert fetch_snapshot(replica_id=leader.node_id).error_code == Errors.INVALID_REQUEST
    # Only the leader serves snapshots.
    other = sim.nodes[follower]
    answer = _ask(sim, other, leader.node_id,
                  FetchSnapshotRequest(leader.node_id, epoch, snapshot_id, 0, 1000))
    assert isinstance(answer, FetchSnapshotResponse)
    assert answer.error_code == Errors.NOT_LEADER_OR_FOLLOWER

    # A Fetch from before the log start gets the latest snapshot's id, and no records.
    assert leader.log.log_start_offset > 0
    fetch = _ask(sim, leader, follower,
                 FetchRequest(ReplicaState(follower), epoch, 0, 0, max_wait_ms=0))
    assert isinstance(fetch, FetchResponse)
    assert fetch.snapshot_id == snapshot_id and fetch.records == ()


def test_a_snapshot_is_taken_only_of_committed_entries() -> None:
    sim, leader = _quiet_leader()
    assert leader.client is not None
    hw = leader.client.high_watermark
    leader.client.append([b"not committed yet"], sim.now)
    with pytest.raises(IllegalStateError, match="high watermark"):
        leader.client.create_snapshot(hw + 1, [b"x"])
    with pytest.raises(IllegalStateError, match="log start"):
        leader.client.create_snapshot(leader.log.log_start_offset - 1, [b"x"])


def test_a_follower_does_not_hold_a_snapshot_larger_than_its_bound() -> None:
    """The bytes of a snapshot are held until it is complete: a leader announcing one larger
    than ``max_snapshot_bytes`` is not followed into it (the download is dropped)."""
    sim, leader = _quiet_leader()
    node = next(n for n in sim.nodes.values() if n is not leader)
    assert node.client is not None and leader.client is not None
    state = node.client.state
    assert isinstance(state, FollowerState)
    snapshot_id = OffsetAndEpoch(1, 1)
    state.fetching_snapshot = (snapshot_id, bytearray())
    state.in_flight = (777, sim.now + 1000)
    huge = FetchSnapshotResponse(Errors.NONE, LeaderIdAndEpoch(leader.node_id, leader.client.epoch),
                                 snapshot_id, SIMULATION_CONFIG.max_snapshot_bytes + 1, 0, b"x")
    node.client.handle(Envelope(leader.node_id, node.node_id, 777, huge), sim.now)
    assert state.fetching_snapshot is None and node.log.installs == 0
