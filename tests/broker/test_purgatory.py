"""The purgatory: completion by key, expiry by the timer, exactly once, purge, reaper shutdown."""

from __future__ import annotations

import threading

import pytest

from kafkacore.broker.server_common.purgatory import DelayedOperation, DelayedOperationPurgatory
from kafkacore.broker.server_common.timer import SystemTimer


class Clock:
    def __init__(self, start=0):
        self.now = start

    def __call__(self):
        return self.now


class MockDelayedOperation(DelayedOperation):
    """Completes when ``ready`` is set (think: the followers have the batch)."""

    def __init__(self, delay_ms, ready=False, lock=None):
        super().__init__(delay_ms, lock)
        self.ready = ready
        self.completions = 0
        self.expirations = 0

    def try_complete(self):
        if self.ready:
            return self.force_complete()
        return False

    def on_complete(self):
        self.completions += 1

    def on_expiration(self):
        self.expirations += 1


def manual_purgatory(purge_interval=1000, start=0):
    """A purgatory whose clock the test moves; nobody advances it but the test."""
    clock = Clock(start)
    timer = SystemTimer("test", start_ms=start, time_ms=clock)
    purgatory = DelayedOperationPurgatory(
        "test", timer, purge_interval=purge_interval, reaper_enabled=False
    )
    return purgatory, clock


def test_an_operation_ready_at_once_is_never_watched():
    purgatory, _ = manual_purgatory()
    op = MockDelayedOperation(100, ready=True)
    assert purgatory.try_complete_else_watch(op, ["p0"]) is True
    assert op.completions == 1
    assert purgatory.watched() == 0 and purgatory.num_delayed() == 0


def test_completes_when_a_watched_key_is_checked():
    purgatory, clock = manual_purgatory()
    op1 = MockDelayedOperation(100)
    op2 = MockDelayedOperation(100)
    assert purgatory.try_complete_else_watch(op1, ["p0"]) is False
    assert purgatory.try_complete_else_watch(op2, ["p0", "p1"]) is False
    assert purgatory.watched() == 3  # op1 on p0; op2 on p0 and p1
    assert purgatory.num_delayed() == 2

    assert purgatory.check_and_complete("p0") == 0  # checked, not ready: still waiting
    assert purgatory.check_and_complete("other") == 0
    op1.ready = True
    assert purgatory.check_and_complete("p0") == 1
    assert (op1.completions, op1.expirations) == (1, 0)
    assert purgatory.num_delayed() == 1  # completing took it out of the timer
    assert purgatory.watched() == 2

    op2.ready = True
    assert purgatory.check_and_complete("p1") == 1
    # op2 completed through p1; it still sits in p0's list until p0 is checked or purged.
    assert purgatory.watched() == 1
    assert (
        purgatory.check_and_complete("p0") == 0
    )  # already completed: dropped, not completed again
    assert purgatory.watched() == 0 and purgatory.watched_keys() == 0
    assert op2.completions == 1

    # Past their timeouts, completed operations do not expire.
    clock.now = 500
    purgatory.advance_clock(0)
    assert purgatory.expired() == 0
    assert op1.expirations == op2.expirations == 0


def test_expires_when_no_event_completes_it():
    purgatory, clock = manual_purgatory()
    op = MockDelayedOperation(100)
    purgatory.try_complete_else_watch(op, ["p0"])
    clock.now = 99
    purgatory.advance_clock(0)
    assert not op.is_completed  # never early
    clock.now = 100
    purgatory.advance_clock(0)
    assert op.is_completed
    assert (op.completions, op.expirations) == (1, 1)
    assert purgatory.expired() == 1 and purgatory.num_delayed() == 0
    op.ready = True  # an event after the expiry finds it completed
    assert purgatory.check_and_complete("p0") == 0
    assert op.completions == 1


def test_watch_keys_must_not_be_empty():
    purgatory, _ = manual_purgatory()
    with pytest.raises(ValueError):
        purgatory.try_complete_else_watch(MockDelayedOperation(10), [])


def test_force_complete_from_many_threads_completes_once():
    for _ in range(50):
        op = MockDelayedOperation(1000)
        barrier = threading.Barrier(8)
        results = []

        def race(op=op, barrier=barrier, results=results):
            barrier.wait(10)
            results.append(op.force_complete())

        threads = [threading.Thread(target=race) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert results.count(True) == 1 and results.count(False) == 7
        assert op.completions == 1


def test_events_and_the_timer_racing_complete_each_operation_once():
    """Threads checking keys while another expires operations: one completion each, no loss."""
    purgatory, clock = manual_purgatory(purge_interval=10)
    ops = []
    for i in range(2000):
        op = MockDelayedOperation(1 + i % 50)
        purgatory.try_complete_else_watch(op, [i % 7, 7 + i % 3])
        ops.append(op)
    for op in ops[::2]:
        op.ready = True
    barrier = threading.Barrier(4)

    def checker(keys):
        barrier.wait(10)
        for _ in range(3):
            for key in keys:
                purgatory.check_and_complete(key)

    def expirer():
        barrier.wait(10)
        for now in range(0, 60):
            clock.now = now
            purgatory.advance_clock(0)

    threads = [
        threading.Thread(target=checker, args=(range(0, 10),)),
        threading.Thread(target=checker, args=(range(9, -1, -1),)),
        threading.Thread(target=checker, args=(range(3, 10),)),
        threading.Thread(target=expirer),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    clock.now = 100
    purgatory.advance_clock(0)
    assert all(op.completions == 1 for op in ops)
    expired = sum(op.expirations for op in ops)
    assert expired == purgatory.expired()
    assert all(op.expirations == 0 for op in ops if not op.is_completed)
    assert sum(1 for op in ops[1::2] if op.expirations == 1) == 1000  # never ready: all expired
    assert purgatory.num_delayed() == 0


def test_purge_keeps_watcher_lists_bounded():
    """Operations completed through one key linger in their other key's list until purged."""
    purge_interval = 100
    purgatory, clock = manual_purgatory(purge_interval=purge_interval)
    most = 0
    for round_ in range(50):
        for _ in range(50):
            op = MockDelayedOperation(60_000)
            purgatory.try_complete_else_watch(op, ["checked", "never-checked"])
            op.ready = True
        assert purgatory.check_and_complete("checked") == 50
        clock.now += 1
        purgatory.advance_clock(0)
        lingering = purgatory.watched()
        most = max(most, lingering)
        # Never more than the purge interval plus one round's worth linger.
        assert lingering <= purge_interval + 50, (round_, lingering)
    assert purgatory.purges() == 50 // 3  # 150 lingering > 100 every third round
    assert most > 0  # they did linger between purges: the purge is what bounds them
    assert purgatory.num_delayed() == 0


def test_without_purge_they_would_pile_up():
    """The counterpart: with a huge purge interval the lists grow with every operation."""
    purgatory, clock = manual_purgatory(purge_interval=10**9)
    for _ in range(500):
        op = MockDelayedOperation(60_000)
        purgatory.try_complete_else_watch(op, ["checked", "never-checked"])
        op.ready = True
        purgatory.check_and_complete("checked")
        clock.now += 1
        purgatory.advance_clock(0)
    assert purgatory.watched() == 500
    assert purgatory.purges() == 0


def test_the_reaper_expires_with_the_real_clock_and_stops_when_shut_down():
    purgatory = DelayedOperationPurgatory("produce", purge_interval=10)
    expired = threading.Event()

    class Expiring(MockDelayedOperation):
        def on_expiration(self):
            super().on_expiration()
            expired.set()

    op = Expiring(20)
    purgatory.try_complete_else_watch(op, ["p0"])
    try:
        assert expired.wait(30), "the reaper never expired the operation"
        assert purgatory.expired() == 1
    finally:
        purgatory.shutdown(timeout=10)  # raises TimeoutError if the reaper does not stop
    assert not purgatory.reaper.is_alive()


def test_shutdown_with_nothing_due_is_bounded():
    purgatory = DelayedOperationPurgatory("fetch")
    purgatory.try_complete_else_watch(MockDelayedOperation(3_600_000), ["p0"])  # an hour away
    purgatory.shutdown(timeout=10)
    assert not purgatory.reaper.is_alive()


def test_a_shared_lock_is_held_during_try_complete():
    """Like DelayedJoin with the group's lock: the check runs under the lock given."""
    group_lock = threading.RLock()
    held = []

    class UnderLock(MockDelayedOperation):
        def try_complete(self):
            # RLock has no public owner check; acquiring without blocking from another thread
            # must fail while we hold it.
            other = []
            t = threading.Thread(target=lambda: other.append(group_lock.acquire(blocking=False)))
            t.start()
            t.join(10)
            held.append(other == [False])
            return super().try_complete()

    purgatory, _ = manual_purgatory()
    op = UnderLock(100, lock=group_lock)
    purgatory.try_complete_else_watch(op, ["group"])
    assert held and all(held)
