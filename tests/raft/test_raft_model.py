"""The model-based test of the Raft core: seeded runs of simulated voters with faults.

Each seed runs three or five ``KafkaRaftClient`` voters in one process (``raft_simulation``)
for eight simulated seconds of message loss, delay, reordering and duplication, partitions, and
crashes with restarts, checking Raft's safety properties after every event; then the network
heals and the quorum must elect a leader and commit a new record within a bound.  A failure
names its seed and the command that replays it with a trace of every message.
"""

from __future__ import annotations

import pytest
from raft_simulation import run_seed

#: Seeds per quorum size in the default tier: a few seconds in all (the long run is ``slow``,
#: and ``benchmarks/bench_raft_model.py`` runs as many as asked).
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


@pytest.mark.slow
@pytest.mark.parametrize("voters", [3, 5])
def test_raft_model_long(voters: int) -> None:
    _run(voters, range(SEEDS, SEEDS + 2000))
