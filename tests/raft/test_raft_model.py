"""The model-based test of the Raft core: seeded runs of simulated voters with faults.

Each seed runs three or five ``KafkaRaftClient`` voters in one process (``raft_simulation``)
for eight simulated seconds of message loss, delay, reordering and duplication, partitions, and
crashes with restarts, checking Raft's safety properties after every event; then the network
heals and the quorum must elect a leader and commit a new record within a bound.  A failure
names its seed and the command that replays it with a trace of every message.  The voters ask
for pre-votes before they stand (KIP-996), as the controllers' do.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from raft_simulation import SIMULATION_CONFIG, RaftSimulation, run_seed

from kafkacore.raft.epoch_state import FollowerState, ProspectiveState, ResignedState

#: Seeds per quorum size: a few seconds in all.  The long randomized runs are
#: ``benchmarks/bench_raft_model.py``'s (``--seeds 2000``, or as many as asked), out of CI's budget.
SEEDS = 100
#: After healing, a commit must come within this many simulated ms (two election rounds of
#: the worst case, with room: the longest seen over thousands of seeds is about 2.5 s).
LIVENESS_BOUND_MS = 15_000


def _run(voters: int, seeds: range) -> int:
    failures = []
    worst = 0
    for seed in seeds:
        try:
            worst = max(worst, run_seed(seed, voters, liveness_bound_ms=LIVENESS_BOUND_MS))
        except Exception as e:  # noqa: BLE001 - every failure is reported with its seed
            failures.append(
                f"seed {seed}, {voters} voters: {type(e).__name__}: {e}\n"
                f"    replay: python benchmarks/bench_raft_model.py --voters {voters} "
                f"--seed {seed} --trace"
            )
    assert not failures, "\n".join(failures)
    return worst


@pytest.mark.parametrize("voters", [3, 5])
def test_raft_model(voters: int) -> None:
    worst = _run(voters, range(SEEDS))
    print(f"{voters} voters, {SEEDS} seeds: longest time to a commit after healing {worst} ms")


def _run_until(sim: RaftSimulation, bound_ms: int, done: Callable[[], bool]) -> int:
    """Step until ``done()``; the simulated ms it took (fails past ``bound_ms``)."""
    start = sim.now
    while not done():
        assert sim.now - start <= bound_ms, f"not within {bound_ms} simulated ms"
        assert sim.step(), "the simulation ran out of events"
    return sim.now - start


@pytest.mark.parametrize("voters", [3, 5])
def test_an_isolated_leader_steps_down_the_others_elect_and_it_follows_when_healed(
    voters: int,
) -> None:
    sim = RaftSimulation(1, voters)
    sim.heal()  # no random faults: only the partition below
    sim.run_until_committed(LIVENESS_BOUND_MS)
    (old,) = [n for n in sim.nodes.values() if n.client is not None and n.client.is_leader()]
    assert old.client is not None
    old_epoch = old.client.epoch
    sim.group = {i: int(i == old.node_id) for i in sim.nodes}

    # Check quorum: no majority fetches from it for 1.5 fetch timeouts, and it resigns.
    check_quorum_ms = SIMULATION_CONFIG.fetch_timeout_ms * 3 // 2
    client = old.client
    took = _run_until(sim, check_quorum_ms + 100, lambda: not client.is_leader())
    assert isinstance(old.client.state, ResignedState)
    # The majority side elects another leader, in a later epoch.
    _run_until(
        sim,
        LIVENESS_BOUND_MS,
        lambda: any(
            n.client is not None and n.client.is_leader()
            for n in sim.nodes.values()
            if n is not old
        ),
    )
    (new,) = [n for n in sim.nodes.values() if n.client is not None and n.client.is_leader()]
    assert new.client is not None and new.client.epoch > old_epoch
    new.client.append([b"while isolated"], sim.now)

    # Healed, the old leader follows the new one and catches up with its log.
    sim.group = {i: 0 for i in sim.nodes}
    _run_until(
        sim,
        LIVENESS_BOUND_MS,
        lambda: (
            isinstance(old.client.state, FollowerState)  # type: ignore[union-attr]
            and old.client.state.leader == new.node_id  # type: ignore[union-attr]
            and old.log.entries == new.log.entries
        ),
    )
    print(f"{voters} voters: the isolated leader resigned after {took} simulated ms")


@pytest.mark.parametrize("voters", [3, 5])
def test_an_isolated_follower_rejoins_without_changing_the_leader_or_the_epoch(
    voters: int,
) -> None:
    """Pre-Vote (KIP-996): a follower cut off for many election timeouts asks for pre-votes in
    its epoch again and again, nobody answers, and it never raises the epoch; healed, the
    others refuse it (they hear from their leader), and it follows that leader again.  Without
    pre-votes it stands in a higher epoch at its first timeout; with the followers granting
    pre-votes regardless of their leader, it wins the round after healing."""
    sim = RaftSimulation(2, voters)
    sim.heal()  # no random faults: only the partition below
    sim.run_until_committed(LIVENESS_BOUND_MS)
    (leader,) = [n for n in sim.nodes.values() if n.client is not None and n.client.is_leader()]
    assert leader.client is not None
    epoch = leader.client.epoch
    # Every log the same before the cut (and nothing appended after): the healed voter's log is
    # then as up to date as anyone's, and only the rule under test can refuse it a pre-vote.
    _run_until(
        sim,
        LIVENESS_BOUND_MS,
        lambda: all(
            isinstance(n.client.state, FollowerState) and n.log.entries == leader.log.entries
            for n in sim.nodes.values()
            if n is not leader
        ),
    )
    cut = next(n for n in sim.nodes.values() if n is not leader)
    sim.group = {i: int(i == cut.node_id) for i in sim.nodes}

    rounds = 0
    was_prospective = False

    def check_steady() -> None:
        nonlocal rounds, was_prospective
        assert leader.client is not None and cut.client is not None
        assert leader.client.is_leader() and leader.client.epoch == epoch, leader.client.state
        assert cut.client.epoch == epoch, cut.client.state
        prospective = isinstance(cut.client.state, ProspectiveState)
        rounds += prospective and not was_prospective
        was_prospective = prospective

    # Twenty election timeouts cut off.
    end = sim.now + 20 * SIMULATION_CONFIG.election_timeout_ms
    while sim.now < end:
        assert sim.step(), "the simulation ran out of events"
        check_steady()
    assert rounds >= 5, f"only {rounds} pre-vote rounds while cut off"

    # Healed in the middle of a pre-vote round (its requests are sent again after the request
    # timeout, before the round ends): the others refuse it, since they hear from their leader;
    # it follows that leader in the same epoch and catches up with its log.
    _run_until(sim, LIVENESS_BOUND_MS, lambda: isinstance(cut.client.state, ProspectiveState))
    sim.group = {i: 0 for i in sim.nodes}

    def caught_up() -> bool:
        check_steady()
        state = cut.client.state  # type: ignore[union-attr]
        return (
            isinstance(state, FollowerState)
            and state.leader == leader.node_id
            and cut.log.entries == leader.log.entries
        )

    took = _run_until(sim, LIVENESS_BOUND_MS, caught_up)
    print(f"{voters} voters: {rounds} pre-vote rounds cut off, caught up {took} ms after healing")
