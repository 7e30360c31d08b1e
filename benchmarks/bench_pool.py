"""BufferPool and CopyOnWriteMap micro-benchmarks.

    python benchmarks/bench_pool.py [--seconds 0.5]

prints a table; ``run()`` returns the same numbers as a dict.  These machines are shared and noisy,
so read the ratios in the last column (each against a baseline measured in the same run, the two
taking turns, best of five), not the absolute rates.

- ``allocate/deallocate`` pairs per second for ``batch.size`` = 16384: one thread; four threads on
  the default 32 MiB pool (they never wait, they only share the lock and the GIL); and four threads
  on a pool of two buffers, so that most allocations wait and are woken by a deallocate.
  Baseline: making a fresh 16 KiB ``bytearray`` (what the free list saves).
- ``CopyOnWriteMap.get`` lookups per second (hits on a map of 100 partitions), beside ``dict.get``
  on the same keys.
"""

from __future__ import annotations

import argparse
import threading
import time

from kafkacore.core.buffer_pool import BufferPool
from kafkacore.core.partition_map import CopyOnWriteMap

POOLABLE = 16384
TOTAL = 32 * 1024 * 1024  # buffer.memory's default


def _timed(loop, seconds):
    """Run ``loop(n)`` with growing n until it takes ``seconds``; return operations per second."""
    n = 1000
    while True:
        t0 = time.perf_counter()
        loop(n)
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            return n / elapsed
        n = max(n * 2, int(n * seconds / max(elapsed, 1e-6) * 1.1))


def _best_of(loops, seconds, rounds=5):
    """Best rate of each loop over ``rounds`` rounds, the loops taking turns (fair under noise)."""
    best = [0.0] * len(loops)
    for _ in range(rounds):
        for i, loop in enumerate(loops):
            best[i] = max(best[i], _timed(loop, seconds / rounds))
    return best


def _pairs(pool, n):
    allocate, deallocate = pool.allocate, pool.deallocate
    for _ in range(n):
        deallocate(allocate(POOLABLE, 1000))


def _fresh(n):
    for _ in range(n):
        bytearray(POOLABLE)


def _threaded_pairs(pool, threads, seconds):
    """Pairs per second, all threads together, each running for about ``seconds``."""
    counts = [0] * threads
    start = threading.Barrier(threads + 1)
    stop = threading.Event()

    def work(i):
        allocate, deallocate = pool.allocate, pool.deallocate
        start.wait()
        done = 0
        while not stop.is_set():
            for _ in range(200):
                deallocate(allocate(POOLABLE, 10_000))
            done += 200
        counts[i] = done

    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    start.wait()
    t0 = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - t0
    assert pool.available_memory() == pool.total_memory and pool.queued() == 0
    return sum(counts) / elapsed


def run(seconds: float = 0.5) -> dict:
    """Measure; returns ``{name: {"rate": ops per second, "baseline": ..., "ratio": ...}}``."""
    results = {}
    pool = BufferPool(TOTAL, POOLABLE)
    pool.deallocate(pool.allocate(POOLABLE, 0))  # one buffer on the free list
    one, fresh = _best_of([lambda n: _pairs(pool, n), _fresh], seconds)
    results["pool pairs/s, 1 thread"] = {"rate": one, "baseline": fresh}

    four = _threaded_pairs(BufferPool(TOTAL, POOLABLE), 4, seconds * 2)
    results["pool pairs/s, 4 threads"] = {"rate": four, "baseline": fresh}

    tight = _threaded_pairs(BufferPool(2 * POOLABLE, POOLABLE), 4, seconds * 2)
    results["pool pairs/s, 4 threads, 2 buffers"] = {"rate": tight, "baseline": fresh}

    keys = [("topic", p) for p in range(100)]
    plain = {k: [] for k in keys}
    cow = CopyOnWriteMap(plain)
    probe = keys * 100

    def dict_gets(n):
        get = plain.get
        for _ in range(n // len(probe) + 1):
            for k in probe:
                get(k)

    def cow_gets(n):
        get = cow.get
        for _ in range(n // len(probe) + 1):
            for k in probe:
                get(k)

    c, d = _best_of([cow_gets, dict_gets], seconds)
    results["CopyOnWriteMap.get/s"] = {"rate": c, "baseline": d}

    for r in results.values():
        r["ratio"] = r["rate"] / r["baseline"]
    return results


BASELINES = {
    "pool pairs/s, 1 thread": "bytearray(16384)/s",
    "pool pairs/s, 4 threads": "bytearray(16384)/s",
    "pool pairs/s, 4 threads, 2 buffers": "bytearray(16384)/s",
    "CopyOnWriteMap.get/s": "dict.get/s",
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.5, help="time per measurement")
    args = parser.parse_args(argv)
    results = run(args.seconds)
    print(f"{'measurement':38} {'rate':>12}   {'baseline':>12} {'(what)':20} {'ratio':>6}")
    for name, r in results.items():
        print(
            f"{name:38} {r['rate']:12,.0f}   {r['baseline']:12,.0f} {BASELINES[name]:20} "
            f"{r['ratio']:6.2f}"
        )
    return results


if __name__ == "__main__":
    main()
