"""Tutorial 46: produce requests wait in the purgatory until the followers catch up, or time out.

A leader answers an acks=all produce only when every in-sync follower has the batch.  Until then
the request waits in the produce purgatory as a delayed operation, watched by each partition it
wrote to, and timed by the purgatory's timer.  A follower's fetch moves that partition's
replicated offset and calls ``check_and_complete(partition)``; the timer expires what no fetch
completed.  (The real ``DelayedProduce`` comes with replication; this one is reduced to its wait.)

We drive the clock by hand, so that every step is visible and repeatable.

    python tutorials/46_purgatory.py

Needs: nothing but kafkacore (no broker: the purgatory runs in this process).
"""

from kafkacore.broker.server_common.purgatory import DelayedOperation, DelayedOperationPurgatory
from kafkacore.broker.server_common.timer import SystemTimer

now = 0
replicated = {"orders-0": 0, "orders-1": 0, "payments-0": 0}  # offset every follower has


class DelayedProduce(DelayedOperation):
    """Waits until each partition it wrote to is replicated up to its batch's last offset."""

    def __init__(self, name: str, timeout_ms: int, required: dict[str, int]) -> None:
        super().__init__(timeout_ms)
        self.name = name
        self.required = required  # {partition: offset the followers must reach}
        self.outcome: str | None = None

    def try_complete(self) -> bool:
        if all(replicated[p] >= offset for p, offset in self.required.items()):
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        # Completed by the followers, or by the timer: both pass here exactly once.
        done = all(replicated[p] >= offset for p, offset in self.required.items())
        self.outcome = "NONE" if done else "REQUEST_TIMED_OUT"
        print(f"  {now:4} ms: {self.name} answered: {self.outcome}")

    def on_expiration(self) -> None:
        print(f"  {now:4} ms: {self.name} expired after {self.delay_ms} ms")


def follower_fetched(partition: str, offset: int) -> int:
    replicated[partition] = offset
    completed = purgatory.check_and_complete(partition)
    print(f"  {now:4} ms: follower has {partition} up to {offset}; completed {completed}")
    return completed


timer = SystemTimer("Produce", start_ms=0, time_ms=lambda: now)
purgatory = DelayedOperationPurgatory("Produce", timer, reaper_enabled=False)

p1 = DelayedProduce("produce-1", 1000, {"orders-0": 10, "orders-1": 5})
p2 = DelayedProduce("produce-2", 1000, {"orders-0": 20})
p3 = DelayedProduce("produce-3", 300, {"payments-0": 3})
for op in (p1, p2, p3):
    assert purgatory.try_complete_else_watch(op, list(op.required)) is False
print(
    f"waiting: {purgatory.num_delayed()} in the timer, "
    f"{purgatory.watched()} in watcher lists (produce-1 is watched by two partitions)"
)
assert (purgatory.num_delayed(), purgatory.watched()) == (3, 4)

now = 50
assert follower_fetched("orders-0", 12) == 0  # produce-1 still waits for orders-1
now = 80
assert follower_fetched("orders-1", 5) == 1  # now produce-1 has both partitions
assert p1.outcome == "NONE"
# produce-1 left the timer at once; it still sits in orders-0's list until orders-0 is checked or
# the reaper purges it.  That is why a purgatory purges.
print(f"waiting: {purgatory.num_delayed()} in the timer, {purgatory.watched()} watched")
assert purgatory.num_delayed() == 2 and purgatory.watched() == 3

for now in range(81, 1001):  # the reaper's job: advance the timer's clock
    purgatory.advance_clock(0)
    if now == 300:
        assert p3.outcome == "REQUEST_TIMED_OUT"  # nobody replicated payments-0 in 300 ms
    if now == 600:
        assert follower_fetched("orders-0", 25) == 1
        assert p2.outcome == "NONE"

assert purgatory.expired() == 1 and purgatory.num_delayed() == 0
# Each operation was answered once, whoever got there first.
assert [p1.outcome, p2.outcome, p3.outcome] == ["NONE", "NONE", "REQUEST_TIMED_OUT"]
print(f"expired {purgatory.expired()}, still waiting {purgatory.num_delayed()}")
