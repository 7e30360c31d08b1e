"""The timer: Kafka's worked example, random schedules against a model, a million timers.

The clock is a list the test moves by hand (``time_ms=lambda: now[0]``) and ``advance_clock(0)``
never waits, so nothing here depends on how fast the machine is.
"""

from __future__ import annotations

import random
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.examples import examples
from waits import wait_until

from kafkacore.broker.server_common.timer import (
    DelayQueue,
    SystemTimer,
    TaskCounter,
    TimerTask,
    TimerTaskEntry,
    TimerTaskList,
    TimingWheel,
)


class Clock:
    def __init__(self, start=0):
        self.now = start

    def __call__(self):
        return self.now


class Recorded(TimerTask):
    """Records (name, clock at run) in ``log``."""

    def __init__(self, delay_ms, name, clock, log):
        super().__init__(delay_ms)
        self.name = name
        self.clock = clock
        self.log = log

    def run(self):
        self.log.append((self.name, self.clock()))


def occupied(wheel):
    """{bucket index: [task names]} of one wheel."""
    found = {}
    for i, bucket in enumerate(wheel.buckets):
        names = [task.name for task in _tasks(bucket)]
        if names:
            found[i] = names
    return found


def test_the_worked_example_goes_through_two_wheels():
    """tick_ms=1, wheel_size=20; tasks at 8, 8, 25, 30, 35 ms (Kafka's timing wheel example)."""
    clock, log = Clock(0), []
    timer = SystemTimer(tick_ms=1, wheel_size=20, start_ms=0, time_ms=clock)
    for name, delay in [("a", 8), ("b", 8), ("c", 25), ("d", 30), ("e", 35)]:
        timer.add(Recorded(delay, name, clock, log))

    level1 = timer.timing_wheel
    level2 = level1.overflow_wheel
    assert (level1.tick_ms, level1.interval) == (1, 20)
    assert level2 is not None and (level2.tick_ms, level2.interval) == (20, 400)
    assert level2.overflow_wheel is None  # 35 ms fits in 400: no third level
    # 8 ms: bucket 8 of the first wheel.  25, 30, 35 ms: all past its 20 ms, so bucket 25 // 20 = 1
    # of the second wheel, whose slot starts at 20 ms.
    assert occupied(level1) == {8: ["a", "b"]}
    assert occupied(level2) == {1: ["c", "d", "e"]}
    assert level1.buckets[8].get_expiration() == 8
    assert level2.buckets[1].get_expiration() == 20
    assert timer.size() == 5
    assert len(timer.delay_queue) == 2  # two buckets queued, not five tasks

    # Nothing is due before 8 ms.
    for now in range(8):
        clock.now = now
        assert timer.advance_clock(0) is False
    assert log == []

    # 8 ms: bucket 8 expires; re-adding its tasks fails (8 < 8 + tick), so they run.
    clock.now = 8
    assert timer.advance_clock(0) is True
    assert log == [("a", 8), ("b", 8)]
    assert occupied(level1) == {}
    assert timer.size() == 3

    for now in range(9, 20):
        clock.now = now
        assert timer.advance_clock(0) is False

    # 20 ms: the second wheel's bucket 1 expires; its tasks are not due yet, and now fit into the
    # first wheel (current time 20, range 20..39): buckets 25 % 20, 30 % 20, 35 % 20.
    clock.now = 20
    assert timer.advance_clock(0) is True
    assert len(log) == 2
    assert level1.current_time == 20 and level2.current_time == 20
    assert occupied(level2) == {}
    assert occupied(level1) == {5: ["c"], 10: ["d"], 15: ["e"]}
    assert [level1.buckets[i].get_expiration() for i in (5, 10, 15)] == [25, 30, 35]
    assert timer.size() == 3

    for now in range(21, 40):
        clock.now = now
        timer.advance_clock(0)
    assert log == [("a", 8), ("b", 8), ("c", 25), ("d", 30), ("e", 35)]
    assert timer.size() == 0
    assert len(timer.delay_queue) == 0


def test_a_cancelled_task_never_runs_and_leaves_at_once():
    clock, log = Clock(0), []
    timer = SystemTimer(tick_ms=1, wheel_size=20, start_ms=0, time_ms=clock)
    keep = Recorded(30, "keep", clock, log)
    drop = Recorded(30, "drop", clock, log)
    timer.add(keep)
    timer.add(drop)
    assert timer.size() == 2
    drop.cancel()
    assert timer.size() == 1 and drop.is_cancelled()
    drop.cancel()  # twice is harmless
    for now in range(0, 40):
        clock.now = now
        timer.advance_clock(0)
    assert log == [("keep", 30)]


def test_an_already_expired_task_runs_on_add():
    clock, log = Clock(100), []
    timer = SystemTimer(start_ms=100, time_ms=clock)
    timer.add(Recorded(0, "now", clock, log))
    assert log == [("now", 100)]
    assert timer.size() == 0


def test_adding_a_task_again_moves_it():
    """A task is in one bucket at most: a new entry takes it out of the old one."""
    clock, log = Clock(0), []
    timer = SystemTimer(start_ms=0, time_ms=clock)
    task = Recorded(5, "t", clock, log)
    timer.add(task)
    task.delay_ms = 15
    timer.add(task)
    assert timer.size() == 1
    for now in range(0, 20):
        clock.now = now
        timer.advance_clock(0)
    assert log == [("t", 15)]


def test_timer_task_list_links_and_unlinks_in_place():
    counter = TaskCounter()
    first, second = TimerTaskList(counter), TimerTaskList(counter)
    tasks = [Recorded(0, i, None, []) for i in range(3)]
    entries = tasks  # every task is its own TimerTaskEntry (an intrusive link)
    assert all(isinstance(e, TimerTaskEntry) and e.timer_task is e for e in entries)
    assert all(e.list is None for e in entries)
    for e in entries:
        first.add(e)
    assert counter.value == 3 and len(first) == 3
    assert all(e.list is first for e in entries)
    first.remove(entries[1])  # from the middle
    assert [t.name for t in _tasks(first)] == [0, 2]
    second.add(entries[0])  # moving an entry takes it out of its old list
    assert [t.name for t in _tasks(first)] == [2] and [t.name for t in _tasks(second)] == [0]
    assert counter.value == 2
    assert first.set_expiration(7) is True
    assert first.set_expiration(7) is False  # unchanged: not offered to the queue again
    flushed = []
    first.flush(flushed.append)
    assert flushed == [entries[2]] and len(first) == 0 and first.get_expiration() == -1
    assert counter.value == 1
    tasks[0].cancel()
    assert len(second) == 0 and counter.value == 0


def _tasks(bucket):
    found = []
    bucket.foreach(found.append)
    return found


def test_bad_configuration_is_refused():
    with pytest.raises(ValueError):
        SystemTimer(tick_ms=0)
    with pytest.raises(ValueError):
        SystemTimer(wheel_size=0)


# -- random schedules against a model ---------------------------------------------------------

STEP = st.one_of(
    st.tuples(st.just("add"), st.integers(0, 3000)),
    st.tuples(st.just("cancel"), st.integers(0, 10_000)),
    st.tuples(st.just("add again"), st.integers(0, 10_000)),
    st.tuples(st.just("tick"), st.integers(0, 120)),
)


@settings(max_examples=examples(150), deadline=None)
@given(
    wheel_size=st.integers(2, 12),
    start=st.integers(0, 10_000),
    steps=st.lists(STEP, max_size=120),
)
def test_random_schedules_match_the_model(wheel_size, start, steps):
    """Every task runs once, never early, and no later than the first advance_clock past its deadline.

    A small wheel makes many levels (wheel_size 2 needs eleven for 3000 ms).  The clock moves by
    random jumps; tasks added, cancelled and added again (waiting or cancelled) in between.
    """
    clock, log = Clock(start), []
    timer = SystemTimer(tick_ms=1, wheel_size=wheel_size, start_ms=start, time_ms=clock)
    deadline = {}
    tasks = []
    cancelled = set()
    readings = [start]
    added_after = {}  # task: index of the first advance_clock reading after its add
    for kind, value in steps:
        if kind == "add":
            task = Recorded(value, len(tasks), clock, log)
            tasks.append(task)
            deadline[task.name] = clock.now + value
            added_after[task.name] = len(readings)
            timer.add(task)
        elif kind == "cancel":
            if tasks:
                task = tasks[value % len(tasks)]
                if task.name not in {name for name, _ in log}:
                    task.cancel()
                    cancelled.add(task.name)
        elif kind == "add again":
            if tasks:
                task = tasks[value % len(tasks)]
                if task.name not in {name for name, _ in log}:  # it runs once more otherwise
                    deadline[task.name] = clock.now + task.delay_ms
                    added_after[task.name] = len(readings)
                    cancelled.discard(task.name)
                    timer.add(task)
        else:
            clock.now += value
            readings.append(clock.now)
            timer.advance_clock(0)
        live = {t.name for t in tasks} - cancelled - {name for name, _ in log}
        assert timer.size() == len(live)
    # Run out the clock.
    clock.now += 3000
    readings.append(clock.now)
    timer.advance_clock(0)

    ran = [name for name, _ in log]
    assert len(ran) == len(set(ran)), "a task ran twice"
    assert set(ran) == {t.name for t in tasks} - cancelled
    for name, at in log:
        assert at >= deadline[name], f"task {name} ran at {at}, before its deadline"
        # At its add (delay 0), or at the latest in the first advance_clock after its add that
        # reads a time at or past its deadline.
        due = min(r for r in readings[added_after[name] :] if r >= deadline[name])
        assert at <= due, f"task {name} (due {deadline[name]}) ran at {at}, after {due}"
    assert timer.size() == 0


def test_driven_one_millisecond_at_a_time_a_task_runs_at_its_deadline():
    """With Kafka's tick of 1 ms and the clock read every ms: within one tick, i.e. exactly then."""
    rng = random.Random(8)
    clock, log = Clock(0), []
    timer = SystemTimer(tick_ms=1, wheel_size=20, start_ms=0, time_ms=clock)
    want = {}
    for name in range(2000):
        delay = rng.randrange(0, 9000)
        want[name] = delay
        timer.add(Recorded(delay, name, clock, log))
    for now in range(0, 9001):
        clock.now = now
        timer.advance_clock(0)
    assert sorted(log) == sorted(want.items())


def test_a_million_timers_expire_once_each():
    clock = Clock(0)
    ran = [0]

    class Count(TimerTask):
        __slots__ = ("due",)

        def run(self):
            assert clock.now >= self.due
            ran[0] += 1

    timer = SystemTimer(tick_ms=1, wheel_size=20, start_ms=0, time_ms=clock)
    rng = random.Random(1)
    n = 1_000_000
    for _ in range(n):
        task = Count(rng.randrange(1, 60_000))  # up to a minute: four levels of wheels
        task.due = task.delay_ms
        timer.add(task)
    assert timer.size() == n
    assert len(timer.delay_queue) <= 4 * 20  # buckets, not tasks
    for now in range(0, 60_001, 7):
        clock.now = now
        timer.advance_clock(0)
    clock.now = 60_007
    timer.advance_clock(0)
    assert ran[0] == n
    assert timer.size() == 0


def test_a_real_clock_and_a_thread_advancing_it():
    """With the system clock: every task runs, never before its deadline; the wait is bounded."""
    timer = SystemTimer("real")
    done = threading.Event()
    runs = []
    expected = 50

    class Stamp(TimerTask):
        __slots__ = ("due",)

        def run(self):
            runs.append((self.due, time.monotonic_ns() // 1_000_000))
            if len(runs) == expected:
                done.set()

    stop = threading.Event()

    def reaper():
        while not stop.is_set():
            timer.advance_clock(50)

    thread = threading.Thread(target=reaper)
    thread.start()
    try:
        for i in range(expected):
            task = Stamp(i % 25)
            task.due = time.monotonic_ns() // 1_000_000 + task.delay_ms
            timer.add(task)
        assert done.wait(30), f"only {len(runs)} of {expected} tasks ran"
    finally:
        stop.set()
        timer.shutdown()
        thread.join(10)
    assert not thread.is_alive()
    assert all(at >= due for due, at in runs)


def test_tasks_are_freed_once_run_cancelled_or_shut_down():
    """Links are not garbage-collected: each bucket must give back its reference to a task."""
    import gc
    import weakref

    clock = Clock(0)
    timer = SystemTimer(start_ms=0, time_ms=clock)
    refs = []
    for i in range(3000):
        task = Recorded(10 + i % 500, i, clock, [])
        refs.append(weakref.ref(task))
        timer.add(task)
        if i % 3 == 0:
            task.cancel()
        del task
    clock.now = 300
    timer.advance_clock(0)  # about half of the rest run
    waiting = timer.size()
    assert 0 < waiting < 2000
    gc.collect()
    alive = sum(1 for r in refs if r() is not None)
    assert alive == waiting  # the cancelled and the run ones are gone; the waiting ones are held
    timer.shutdown()
    del timer
    gc.collect()
    assert all(r() is None for r in refs)


def test_a_timer_dropped_while_tasks_wait_frees_them():
    """A bucket owns its entries: when the timer (and so its buckets) goes, the tasks go too."""
    import gc
    import weakref

    clock = Clock(0)
    timer = SystemTimer(start_ms=0, time_ms=clock)
    refs = []
    for i in range(2000):
        task = Recorded(10 + i * 37, i, clock, [])  # up to 74 s: four wheels
        refs.append(weakref.ref(task))
        timer.add(task)
        del task
    assert timer.size() == 2000
    kept = refs[5]()  # one task the caller still holds outlives the timer, unlinked
    for r in refs[10:13]:
        r().cancel()  # cancelled ones go too
    del timer
    gc.collect()
    assert sum(1 for r in refs if r() is not None) == 1
    assert kept is not None and kept.get_timer_task_entry() is None
    kept.cancel()  # harmless: it is in no bucket

    # A timer in a reference cycle goes with the collector; a task held elsewhere survives it,
    # unlinked, and may be cancelled or added again safely.
    class Owner:
        pass

    owner = Owner()
    owner.timer = SystemTimer(start_ms=0, time_ms=clock)
    owner.timer_ref = owner  # a cycle: only the collector frees it
    held = Recorded(500, "held", clock, [])
    owner.timer.add(held)
    owner.timer.add(Recorded(600, "other", clock, []))
    del owner
    gc.collect()
    assert held.get_timer_task_entry() is None
    held.cancel()
    again = SystemTimer(start_ms=0, time_ms=clock)
    again.add(held)
    assert again.size() == 1

    # The same for a bare bucket.
    bucket = TimerTaskList(TaskCounter())
    task = Recorded(0, "x", None, [])
    ref = weakref.ref(task)
    bucket.add(task)
    del task
    assert ref() is not None and len(bucket) == 1
    del bucket
    assert ref() is None


def test_none_is_refused_with_a_type_error():
    timer = SystemTimer(start_ms=0, time_ms=Clock(0))
    bucket = TimerTaskList(TaskCounter())
    with pytest.raises(TypeError):
        timer.add(None)
    with pytest.raises(TypeError):
        bucket.add(None)
    with pytest.raises(TypeError):
        bucket.remove(None)
    with pytest.raises(TypeError):
        timer.timing_wheel.add(None)
    with pytest.raises(TypeError):
        timer.add(object())
    with pytest.raises(TypeError):  # the wheels offer their buckets to a DelayQueue, in C
        TimingWheel(1, 20, 0, TaskCounter(), None)
    with pytest.raises(TypeError):
        timer.delay_queue.offer(None)
    assert timer.size() == 0


def test_a_failing_task_does_not_stop_the_others(caplog):
    clock, log = Clock(0), []

    class Failing(TimerTask):
        def run(self):
            raise RuntimeError("boom")

    timer = SystemTimer(start_ms=0, time_ms=clock)
    timer.add(Recorded(5, "before", clock, log))
    timer.add(Failing(5))
    timer.add(Recorded(5, "after", clock, log))
    clock.now = 5
    with caplog.at_level("ERROR", logger="kafkacore.broker.server_common.timer"):
        assert timer.advance_clock(0) is True
    assert sorted(name for name, _ in log) == ["after", "before"]
    assert "boom" in caplog.text


def test_a_waiting_poll_is_woken_by_an_offer_due_sooner_and_by_close():
    """``offer`` wakes a ``poll`` that waits (it would otherwise sleep its whole timeout, ten
    minutes here, and the join would give up), and ``close`` makes it return None."""
    clock = Clock(1_000)
    queue = DelayQueue(clock)
    got = []
    poller = threading.Thread(target=lambda: got.append(queue.poll(600_000)), daemon=True)
    poller.start()
    wait_until(lambda: queue.waiting == 1, "a poll waiting")
    bucket = TimerTaskList(TaskCounter())
    bucket.set_expiration(1_000)  # due now
    queue.offer(bucket)
    poller.join(30)
    assert not poller.is_alive() and got == [bucket] and queue.waiting == 0 and len(queue) == 0

    later = TimerTaskList(TaskCounter())
    later.set_expiration(5_000)  # not due: a poll waits for it (or its timeout)
    queue.offer(later)
    poller = threading.Thread(target=lambda: got.append(queue.poll(600_000)), daemon=True)
    poller.start()
    wait_until(lambda: queue.waiting == 1, "a poll waiting")
    queue.close()
    poller.join(30)
    assert not poller.is_alive() and got[-1] is None and len(queue) == 1
    assert queue.poll(0) is None  # closed, and still not due
    clock.now = 5_000
    assert queue.poll(0) is later  # a due bucket is still given out without waiting
