"""The Raft core's model test at length: many seeds, or one seed replayed with a trace.

    python benchmarks/bench_raft_model.py [--voters 3,5] [--seeds 2000] [--first 0]
    python benchmarks/bench_raft_model.py --voters 5 --seed 1234 --trace

Each seed runs the simulation of ``tests/raft/raft_simulation.py`` (loss, delay, reordering,
duplication, partitions, crashes and restarts, then healing), checking Raft's safety properties
after every event, snapshots and FetchSnapshot included.  The figures: seeds run and failed,
simulated events per second of CPU, the time from healing to a committed record (median, 99th
percentile, longest), in simulated ms, and the snapshots voters installed by FetchSnapshot.  A
failing seed is printed with the command that replays it; ``--trace`` prints every delivered
message, crash and partition of that run.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "raft"))

from raft_simulation import RaftSimulation  # noqa: E402


def run(seed: int, voters: int, chaos_ms: int, bound_ms: int, trace: bool,
        ) -> tuple[int, int, int]:
    sim = RaftSimulation(seed, voters)
    if trace:
        sim.trace = print
    sim.run_for(chaos_ms)
    sim.heal()
    if trace:
        print(f"{sim.now:>7} healed")
    took = sim.run_until_committed(bound_ms)
    installs = sum(node.log.installs for node in sim.nodes.values())
    return took, sim.events, installs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--voters", default="3,5")
    parser.add_argument("--seeds", type=int, default=2000)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--seed", type=int, help="replay this one seed")
    parser.add_argument("--trace", action="store_true")
    parser.add_argument("--chaos-ms", type=int, default=8000)
    parser.add_argument("--bound-ms", type=int, default=15000)
    args = parser.parse_args()
    failed = 0
    for voters in (int(v) for v in args.voters.split(",")):
        seeds = [args.seed] if args.seed is not None else range(args.first, args.first + args.seeds)
        took: list[int] = []
        events = 0
        installs = 0
        start = time.process_time()
        for seed in seeds:
            try:
                ms, n, installed = run(seed, voters, args.chaos_ms, args.bound_ms, args.trace)
            except Exception as e:  # noqa: BLE001 - reported with the seed that replays it
                failed += 1
                print(f"FAILED seed {seed}, {voters} voters: {type(e).__name__}: {e}")
                print(
                    f"    replay: python benchmarks/bench_raft_model.py --voters {voters} "
                    f"--seed {seed} --trace"
                )
                continue
            took.append(ms)
            events += n
            installs += installed
        cpu = time.process_time() - start
        if took:
            took.sort()
            p99 = took[min(len(took) - 1, len(took) * 99 // 100)]
            print(
                f"{voters} voters: {len(seeds)} seeds, {len(seeds) - len(took)} failed, "
                f"{events / cpu:,.0f} events/s of CPU ({cpu:.1f} s); to a commit after healing: "
                f"median {statistics.median(took):.0f} ms, p99 {p99} ms, longest {took[-1]} ms; "
                f"{installs} snapshots installed by FetchSnapshot"
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
