"""The purgatory's timer against a heap of individual tasks, with many operations outstanding.

    python benchmarks/bench_purgatory.py [--sizes 1000,100000,1000000] [--measure 200000]

keeps the figures in ``benchmarks/results/purgatory.json``.

The workload is the one Kafka's timer redesign was for (the purgatory of a busy broker): every
simulated millisecond ``PER_MS`` operations are added with the same timeout; 90% of them are
completed before it (at a uniformly random moment within it, as acks=all produces are when the
followers catch up) and the other 10% expire.  The timeout is chosen so that ``outstanding``
operations are waiting in the steady state (1,000 / 100,000 / 1,000,000).  After a warm-up of one
full timeout, we time ``--measure`` operations; the figure is the cost per operation of add +
complete-early-or-expire, clock advances included, in microseconds.

- ``timing wheel``: :class:`kafkacore.broker.server_common.timer.SystemTimer` (``add``, ``TimerTask.cancel`` on
  completion, ``advance_clock(0)`` every simulated millisecond).
- ``heap (lazy deletion)``: the old design, one ``heapq`` entry per task (``heapq`` is C); a task
  completed early is only flagged, and its entry stays in the heap until its deadline pops it
  (removing it from the middle of a heap would cost O(n) per completion).  So the heap holds
  every operation added in the last timeout, completed or not.

Both are driven by the same loop, which calls each timer's own API directly (``add``, its cancel,
``advance_clock``) and nothing else: ``TimerTask.cancel(task)`` for the wheel, the heap timer's
``cancel(task)`` for the heap, with no wrapper of the harness's around either.

The clock is simulated, so the figures are CPU cost only.  ``no timer`` runs the same loop
(making the operations, choosing when each completes) with no timer at all; ``net`` figures
subtract it, leaving the timer's own cost.  It runs twice, once with each timer's operations: an
``Operation`` is a ``TimerTask`` subclass, which costs more to make than the heap's plain
``HeapTask`` (its ``super().__init__`` call), and that is the operation's cost, not the timer's.
In every loop an operation lives until it completes or expires: the loop holds the ones that
will expire until their timeout, as a purgatory's watchers would, timer or not.

Every loop of every size runs side by side and takes turns, so that the shared machine's slow
moments, which change its speed by half from one second to the next, fall on all of them alike:
a size's four loops run ``TURN_MS`` simulated milliseconds each, in a rotating order, and do so
``BLOCK_TURNS`` times before the next size's loops take over (in a rotating order of sizes too).
So the growth from 1,000 to 1,000,000 outstanding is measured over the same stretch of time, not
minutes apart.  The collector is off during the turns (a collection would walk every loop's
objects and be charged to whichever loop triggered it).  The figures are medians of ``--rounds``
rounds; ``net_per_round`` keeps each round's, and the growth is the median of the rounds'.  Read
the ratios, not the absolute figures.
"""

from __future__ import annotations

import argparse
import gc
import heapq
import json
import pathlib
import platform
import random
import statistics
import time

from kafkacore.broker.server_common.timer import SystemTimer, TimerTask

HERE = pathlib.Path(__file__).parent
#: CPU time of this process, not wall time: on a shared machine, time spent waiting for a core
#: while other processes run would otherwise count against whichever timer was running then.
_clock = time.process_time_ns
PER_MS = 50  # operations added per simulated millisecond
EARLY = 0.9  # the share completed before their timeout


class Operation(TimerTask):
    __slots__ = ("done",)

    def __init__(self, delay_ms):
        super().__init__(delay_ms)
        self.done = False

    def run(self):
        self.done = True


class HeapTask:
    __slots__ = ("delay_ms", "cancelled", "done")

    def __init__(self, delay_ms):
        self.delay_ms = delay_ms
        self.cancelled = False
        self.done = False

    def run(self):
        self.done = True


class HeapTimer:
    """A delay queue of individual tasks; completion only flags the task (lazy deletion)."""

    def __init__(self, time_ms):
        self._time_ms = time_ms
        self._heap = []
        self._seq = 0

    def add(self, task):
        self._seq += 1
        heapq.heappush(self._heap, (self._time_ms() + task.delay_ms, self._seq, task))

    def cancel(self, task):
        task.cancelled = True

    def advance_clock(self, _timeout_ms):
        heap, now = self._heap, self._time_ms()
        while heap and heap[0][0] <= now:
            task = heapq.heappop(heap)[2]
            if not task.cancelled:
                task.run()  # as the wheel runs its tasks

    def waiting(self):
        """The tasks neither completed nor run (the heap also holds the completed ones)."""
        return sum(1 for _, _, t in self._heap if not t.cancelled and not t.done)


def _timeout_for(outstanding):
    # Outstanding = PER_MS * timeout * (EARLY * 1/2 + (1 - EARLY)): the early ones wait half the
    # timeout on average, the others all of it.
    return max(2, round(outstanding / (PER_MS * (EARLY / 2 + (1 - EARLY)))))


def _schedule(timeout, n_ms, seed):
    """Per simulated ms, for each operation added then: the ms it completes at, or None (expires)."""
    rng = random.Random(seed)
    plan = []
    for _ in range(n_ms):
        plan.append(
            [rng.randrange(1, timeout) if rng.random() < EARLY else None for _ in range(PER_MS)]
        )
    return plan


class _Loop:
    """The loop that drives one timer (or none) through the plan."""

    def __init__(self, kind, clock, timeout):
        time_ms = lambda: clock[0]  # noqa: E731  (each loop its own, alike)
        if kind == "wheel":
            timer = SystemTimer("bench", tick_ms=1, wheel_size=20, start_ms=0, time_ms=time_ms)
            self.make = Operation
            # The timer's own cancel, called directly, as the heap's ``timer.cancel`` is: a wrapper
            # function here would charge the wheel one Python call that the heap does not pay.
            self.complete = TimerTask.cancel
            self.size = timer.size
        elif kind == "heap":
            timer = HeapTimer(time_ms)
            self.make = HeapTask
            self.complete = timer.cancel
            self.size = timer.waiting
        else:  # "none-*": the same loop with no timer at all, to subtract the loop's own cost
            timer = None
            self.make = Operation if kind == "none-wheel" else HeapTask
            self.complete = id  # a builtin that does nothing
            self.size = None
        self.add = timer.add if timer else id
        self.advance = timer.advance_clock if timer else id
        self.timer = timer
        self.timeout = timeout
        self.completions: dict[int, list] = {}
        self.expiring: dict[int, list] = {}
        self.cpu_ns = 0

    def run(self, plan, clock, start, stop):
        make, add, complete, advance = self.make, self.add, self.complete, self.advance
        completions, expiring, timeout = self.completions, self.expiring, self.timeout
        for ms in range(start, stop):
            clock[0] = ms
            for at in plan[ms]:
                task = make(timeout)
                add(task)
                if at is None:
                    # Held until it times out, as a purgatory's watchers hold it, in every loop:
                    # an operation lives as long with a timer as without one.
                    expiring.setdefault(ms + timeout, []).append(task)
                else:
                    completions.setdefault(ms + at, []).append(task)
            for task in completions.pop(ms, ()):
                complete(task)
            advance(0)
            expiring.pop(ms, None)


_KINDS = ("wheel", "none-wheel", "heap", "none-heap")
#: Simulated milliseconds a loop runs in one turn (1,000 operations).
TURN_MS = 20
#: Turns each of a size's loops takes before the next size's loops run.  One size's turns follow
#: each other, so a small size's loops find their memory in the caches after the first turn, as
#: they would alone; the blocks are short enough (a fraction of a second) for a slow moment of
#: the machine to fall on every size.
BLOCK_TURNS = 5


def _round(setups, measure_ms):
    """Run every size's plan through its four loops, all taking turns.

    ``setups`` is ``[(outstanding, timeout, plan)]``; each plan is a warm-up of one timeout and
    then ``measure_ms`` simulated ms.  Returns ``{outstanding: {kind: (us per op, outstanding)}}``.
    """
    sizes = []
    for outstanding, timeout, plan in setups:
        clock = [0]
        loops = [_Loop(kind, clock, timeout) for kind in _KINDS]
        for loop in loops:
            loop.run(plan, clock, 0, timeout + 1)
        sizes.append((outstanding, timeout + 1, plan, clock, loops))
    gc.collect()
    gc.disable()
    try:
        turns = range(0, measure_ms, TURN_MS)
        for block, block_start in enumerate(range(0, len(turns), BLOCK_TURNS)):
            first_size = block % len(sizes)
            for _, warm_ms, plan, clock, loops in sizes[first_size:] + sizes[:first_size]:
                for turn in range(block_start, min(block_start + BLOCK_TURNS, len(turns))):
                    start = warm_ms + turns[turn]
                    stop = min(start + TURN_MS, warm_ms + measure_ms)
                    # Each loop runs the same stretch of the plan in its turn, in an order that
                    # rotates: a slow moment of the shared machine falls on all four alike.
                    first = turn % len(loops)
                    for loop in loops[first:] + loops[:first]:
                        started = _clock()
                        loop.run(plan, clock, start, stop)
                        loop.cpu_ns += _clock() - started
    finally:
        gc.enable()
    ops = measure_ms * PER_MS
    return {
        outstanding: {
            kind: (loop.cpu_ns / 1e3 / ops, loop.size() if loop.size else outstanding)
            for kind, loop in zip(_KINDS, loops, strict=True)
        }
        for outstanding, _, _, _, loops in sizes
    }


def _median(per_round, f):
    return statistics.median(f(r) for r in per_round)


def run(sizes=(1_000, 100_000, 1_000_000), measure_ops=200_000, rounds=5):
    measure_ms = max(1, measure_ops // PER_MS)
    timeouts = {outstanding: _timeout_for(outstanding) for outstanding in sizes}
    setups = [
        (outstanding, timeout, _schedule(timeout, timeout + 1 + measure_ms, seed=outstanding))
        for outstanding, timeout in timeouts.items()
    ]
    # The plans are the harness's, not a timer's: out of the collector's sight.
    gc.collect()
    gc.freeze()
    by_round = [_round(setups, measure_ms) for _ in range(rounds)]
    gc.unfreeze()
    del setups
    results = {}
    for outstanding, timeout in timeouts.items():
        per_round = [r[outstanding] for r in by_round]
        cost = {kind: _median(per_round, lambda r, k=kind: r[k][0]) for kind in _KINDS}
        net_wheel = _median(per_round, lambda r: r["wheel"][0] - r["none-wheel"][0])
        net_heap = _median(per_round, lambda r: r["heap"][0] - r["none-heap"][0])
        results[str(outstanding)] = {
            "timeout_ms": timeout,
            # Operations waiting in the wheel at the end of the last round.
            "outstanding_seen": per_round[-1]["wheel"][1],
            "heap_entries": round(PER_MS * timeout),
            "us_per_op": {
                "timing wheel": cost["wheel"],
                "heap (lazy deletion)": cost["heap"],
                "no timer, the wheel's operations": cost["none-wheel"],
                "no timer, the heap's operations": cost["none-heap"],
            },
            "net_us_per_op": {"timing wheel": net_wheel, "heap (lazy deletion)": net_heap},
            "heap_over_wheel": cost["heap"] / cost["wheel"],
            "net_heap_over_wheel": net_heap / net_wheel,
            "net_per_round": [
                {
                    "timing wheel": r["wheel"][0] - r["none-wheel"][0],
                    "heap (lazy deletion)": r["heap"][0] - r["none-heap"][0],
                }
                for r in per_round
            ],
        }

    def growth(timer):
        # Largest size over smallest, round by round (measured over the same stretch of time).
        first, last = str(sizes[0]), str(sizes[-1])
        return [
            big[timer] / small[timer]
            for small, big in zip(
                results[first]["net_per_round"], results[last]["net_per_round"], strict=True
            )
        ]

    return {
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": f"{platform.machine()}, CPython {platform.python_version()}",
        "rounds": rounds,
        "measured_ops": max(1, measure_ops // PER_MS) * PER_MS,
        "per_ms": PER_MS,
        "early": EARLY,
        "turn_ms": TURN_MS,
        "block_turns": BLOCK_TURNS,
        "sizes": results,
        "net_wheel_largest_over_smallest": statistics.median(growth("timing wheel")),
        "net_heap_largest_over_smallest": statistics.median(growth("heap (lazy deletion)")),
        "net_wheel_growth_per_round": growth("timing wheel"),
        "net_heap_growth_per_round": growth("heap (lazy deletion)"),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,100000,1000000")
    parser.add_argument("--measure", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    sizes = tuple(int(s) for s in args.sizes.split(","))
    figures = run(sizes, args.measure, args.rounds)
    print(
        f"{'outstanding':>12} {'wheel':>7} {'loop':>7} {'heap':>7} {'loop':>7}"
        f" {'net wheel':>10} {'net heap':>9} {'net heap/wheel':>15}   (us/op)"
    )
    for size, r in figures["sizes"].items():
        c, n = r["us_per_op"], r["net_us_per_op"]
        loop_wheel = c["no timer, the wheel's operations"]
        loop_heap = c["no timer, the heap's operations"]
        print(
            f"{int(size):>12,} {c['timing wheel']:>7.2f} {loop_wheel:>7.2f}"
            f" {c['heap (lazy deletion)']:>7.2f} {loop_heap:>7.2f}"
            f" {n['timing wheel']:>10.2f} {n['heap (lazy deletion)']:>9.2f}"
            f" {r['net_heap_over_wheel']:>15.2f}"
        )
    print(
        "net cost at the largest size over the smallest (median of the rounds'): wheel "
        f"{figures['net_wheel_largest_over_smallest']:.2f}, "
        f"heap {figures['net_heap_largest_over_smallest']:.2f}; wheel round by round: "
        + ", ".join(f"{x:.2f}" for x in figures["net_wheel_growth_per_round"])
    )
    if not args.no_save:
        out = HERE / "results" / "purgatory.json"
        out.write_text(json.dumps(figures, indent=2) + "\n")
        print(f"saved {out}")
    return figures


if __name__ == "__main__":
    main()
