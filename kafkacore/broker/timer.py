"""The broker's timer: hierarchical timing wheels whose buckets sit in a delay queue.

Kafka's ``org.apache.kafka.server.util.timer`` package, in Python: ``TimerTask`` (what runs),
``TimerTaskEntry`` (its place in a bucket, removable in O(1)), ``TimerTaskList`` (a bucket: a
doubly linked list with a sentinel and one expiration), ``TimingWheel`` (``tick_ms`` x
``wheel_size`` buckets, and an overflow wheel made on demand whose tick is this wheel's interval),
and ``SystemTimer`` (``add``, ``advance_clock``).

Why buckets and not tasks in the delay queue: adding and cancelling a task is O(1) (link or unlink
it in a bucket); the queue only orders the buckets, of which there are at most ``wheel_size`` per
wheel, however many tasks are outstanding.  A task cancelled before its deadline (the common case
in the purgatory) is simply unlinked, and never costs anything again.  See
``docs/broker/timing_wheel.rst``.
"""

from __future__ import annotations

import heapq
import threading
import time as _time
from collections.abc import Callable
from typing import Any


def hi_res_clock_ms() -> int:
    """Kafka's ``Time.SYSTEM.hiResClockMs()``: a monotonic clock in whole milliseconds."""
    return _time.monotonic_ns() // 1_000_000


class TimerTask:
    """Something to run once ``delay_ms`` has passed since it was added to a timer.

    Subclasses override :meth:`run`.  :meth:`cancel` takes the task out of its bucket at once; a
    cancelled task never runs.  A task is in at most one bucket: giving it a new entry removes the
    old one (Kafka's ``TimerTask.setTimerTaskEntry``).
    """

    __slots__ = ("delay_ms", "_entry", "_task_lock")

    def __init__(self, delay_ms: int) -> None:
        self.delay_ms = int(delay_ms)
        self._entry: TimerTaskEntry | None = None
        self._task_lock = threading.Lock()

    def run(self) -> None:
        raise NotImplementedError

    def cancel(self) -> None:
        with self._task_lock:
            entry = self._entry
            self._entry = None
            if entry is not None:
                entry.remove()

    def is_cancelled(self) -> bool:
        return self._entry is None

    def set_timer_task_entry(self, entry: TimerTaskEntry) -> None:
        with self._task_lock:
            # If this task is already held by another entry, take it out of that bucket first.
            old = self._entry
            if old is not None and old is not entry:
                old.remove()
            self._entry = entry

    def get_timer_task_entry(self) -> TimerTaskEntry | None:
        return self._entry


class TimerTaskEntry:
    """A task's link in a :class:`TimerTaskList`: it knows its list, so removal is O(1)."""

    __slots__ = ("timer_task", "expiration_ms", "list", "next", "prev")

    def __init__(self, timer_task: TimerTask | None, expiration_ms: int) -> None:
        self.timer_task = timer_task
        self.expiration_ms = expiration_ms
        self.list: TimerTaskList | None = None
        self.next: TimerTaskEntry | None = None
        self.prev: TimerTaskEntry | None = None
        if timer_task is not None:  # None only for a list's sentinel
            timer_task.set_timer_task_entry(self)

    def cancelled(self) -> bool:
        """True when the task was cancelled or moved to a newer entry since this one was made."""
        return self.timer_task is None or self.timer_task.get_timer_task_entry() is not self

    def remove(self) -> None:
        # The list can change under us (a flush moves the entry to another bucket), so retry until
        # the entry is in no list at all.
        current = self.list
        while current is not None:
            current.remove(self)
            current = self.list


class TaskCounter:
    """The number of entries in all the buckets of one timer (Kafka's shared ``AtomicInteger``).

    Changed only under the lock shared by those buckets.
    """

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0


class TimerTaskList:
    """A bucket: a circular doubly linked list of entries around a sentinel, with one expiration.

    The expiration is the start of the time slot the bucket stands for; ``set_expiration`` returns
    True when it changed, which is when the bucket must (again) be offered to the delay queue.
    """

    __slots__ = ("_task_counter", "_root", "_expiration", "_lock")

    def __init__(self, task_counter: TaskCounter, lock: Any = None) -> None:
        self._task_counter = task_counter
        self._lock = lock if lock is not None else threading.RLock()
        root = TimerTaskEntry(None, -1)
        root.next = root
        root.prev = root
        self._root = root
        self._expiration = -1

    def set_expiration(self, expiration_ms: int) -> bool:
        with self._lock:  # getAndSet
            old = self._expiration
            self._expiration = expiration_ms
            return old != expiration_ms

    def get_expiration(self) -> int:
        return self._expiration

    def foreach(self, f: Callable[[TimerTask], None]) -> None:
        """Call ``f`` on each task not cancelled (a snapshot: ``f`` runs outside the lock)."""
        with self._lock:
            tasks = []
            entry = self._root.next
            while entry is not self._root:
                if not entry.cancelled():
                    tasks.append(entry.timer_task)
                entry = entry.next
        for task in tasks:
            f(task)

    def __len__(self) -> int:
        with self._lock:
            n = 0
            entry = self._root.next
            while entry is not self._root:
                n += 1
                entry = entry.next
            return n

    def add(self, entry: TimerTaskEntry) -> None:
        # Out of any other list first, outside our lock (Kafka does the same to avoid deadlocks).
        entry.remove()
        with self._lock:
            if entry.list is None:
                tail = self._root.prev
                entry.next = self._root
                entry.prev = tail
                entry.list = self
                tail.next = entry
                self._root.prev = entry
                self._task_counter.value += 1

    def remove(self, entry: TimerTaskEntry) -> None:
        with self._lock:
            if entry.list is self:
                entry.next.prev = entry.prev
                entry.prev.next = entry.next
                entry.next = None
                entry.prev = None
                entry.list = None
                self._task_counter.value -= 1

    def flush(self, f: Callable[[TimerTaskEntry], None]) -> None:
        """Take every entry out and hand it to ``f`` (the timer re-adds it), then reset the expiration."""
        with self._lock:
            root = self._root
            head = root.next
            while head is not root:
                self.remove(head)
                f(head)
                head = root.next
            self._expiration = -1

    def __lt__(self, other: TimerTaskList) -> bool:  # heap order when two expirations are equal
        return id(self) < id(other)


class DelayQueue:
    """Java's ``DelayQueue`` of buckets: a heap keyed by expiration; ``poll`` gives only expired ones.

    It holds buckets, not tasks, so it never holds more than the wheels have buckets.
    """

    def __init__(self, time_ms: Callable[[], int]) -> None:
        self._time_ms = time_ms
        self._heap: list[tuple[int, TimerTaskList]] = []
        self._available = threading.Condition(threading.Lock())
        self._closed = False

    def offer(self, bucket: TimerTaskList) -> None:
        with self._available:
            heapq.heappush(self._heap, (bucket.get_expiration(), bucket))
            if self._heap[0][1] is bucket:
                self._available.notify_all()

    def poll(self, timeout_ms: float = 0) -> TimerTaskList | None:
        """The first expired bucket, waiting up to ``timeout_ms`` of real time for one; else None."""
        deadline = _time.monotonic() + max(timeout_ms, 0) / 1000.0
        with self._available:
            while True:
                if self._heap:
                    expiration = self._heap[0][0]
                    delay_ms = expiration - self._time_ms()
                    if delay_ms <= 0:
                        return heapq.heappop(self._heap)[1]
                else:
                    delay_ms = None
                remaining = deadline - _time.monotonic()
                if remaining <= 0 or self._closed:
                    return None
                wait = remaining if delay_ms is None else min(remaining, delay_ms / 1000.0)
                self._available.wait(wait)

    def close(self) -> None:
        """Wake every waiting ``poll`` so that it returns None (used on shutdown)."""
        with self._available:
            self._closed = True
            self._available.notify_all()

    def __len__(self) -> int:
        return len(self._heap)


class TimingWheel:
    """One level of the hierarchy: ``wheel_size`` buckets of ``tick_ms`` each.

    A task whose expiration is within ``[current_time + tick_ms, current_time + interval)`` goes into
    bucket ``(expiration // tick_ms) % wheel_size``; a later one goes to the overflow wheel (made on
    first need, with ``tick_ms = interval``); an earlier one is already expired and ``add`` returns
    False so that the timer runs it.
    """

    __slots__ = (
        "tick_ms",
        "wheel_size",
        "interval",
        "current_time",
        "buckets",
        "overflow_wheel",
        "_task_counter",
        "_queue",
        "_lock",
    )

    def __init__(
        self,
        tick_ms: int,
        wheel_size: int,
        start_ms: int,
        task_counter: TaskCounter,
        queue: DelayQueue,
        lock: Any = None,
    ) -> None:
        self.tick_ms = tick_ms
        self.wheel_size = wheel_size
        self.interval = tick_ms * wheel_size
        # Rounded down to a multiple of the tick.
        self.current_time = start_ms - start_ms % tick_ms
        self._task_counter = task_counter
        self._queue = queue
        self._lock = lock if lock is not None else threading.RLock()
        self.buckets = [TimerTaskList(task_counter, self._lock) for _ in range(wheel_size)]
        self.overflow_wheel: TimingWheel | None = None

    def _add_overflow_wheel(self) -> None:
        with self._lock:
            if self.overflow_wheel is None:
                self.overflow_wheel = TimingWheel(
                    self.interval,
                    self.wheel_size,
                    self.current_time,
                    self._task_counter,
                    self._queue,
                    self._lock,
                )

    def add(self, entry: TimerTaskEntry) -> bool:
        expiration = entry.expiration_ms
        if entry.cancelled():
            return False
        if expiration < self.current_time + self.tick_ms:
            return False  # already expired: the caller runs it
        if expiration < self.current_time + self.interval:
            virtual_id = expiration // self.tick_ms
            bucket = self.buckets[virtual_id % self.wheel_size]
            bucket.add(entry)
            # Only the first task of a new time slot changes the bucket's expiration; only then
            # does the bucket enter the delay queue.
            if bucket.set_expiration(virtual_id * self.tick_ms):
                self._queue.offer(bucket)
            return True
        if self.overflow_wheel is None:
            self._add_overflow_wheel()
        return self.overflow_wheel.add(entry)

    def advance_clock(self, time_ms: int) -> None:
        if time_ms >= self.current_time + self.tick_ms:
            self.current_time = time_ms - time_ms % self.tick_ms
            if self.overflow_wheel is not None:
                self.overflow_wheel.advance_clock(self.current_time)


class SystemTimer:
    """Kafka's ``SystemTimer``: tasks in timing wheels, buckets in a delay queue.

    ``advance_clock(timeout_ms)`` waits up to ``timeout_ms`` for the first bucket to expire, then
    flushes every expired bucket: each task is added again, so it either falls into a finer wheel
    or, its deadline reached, runs.  Tasks run on ``executor`` (anything with ``submit``) when one
    is given, else in the thread that called ``add``/``advance_clock``, after the timer's lock is
    released (a task's code never runs under the timer's lock).

    ``time_ms`` is the clock (milliseconds); tests pass their own to drive time by hand.
    """

    def __init__(
        self,
        executor_name: str = "timer",
        tick_ms: int = 1,
        wheel_size: int = 20,
        start_ms: int | None = None,
        time_ms: Callable[[], int] = hi_res_clock_ms,
        executor: Any = None,
    ) -> None:
        if tick_ms < 1 or wheel_size < 1:
            raise ValueError(f"tick_ms and wheel_size must be >= 1, got {tick_ms}, {wheel_size}")
        self.executor_name = executor_name
        self._time_ms = time_ms
        self._executor = executor
        self._lock = threading.RLock()
        self._task_counter = TaskCounter()
        self.delay_queue = DelayQueue(time_ms)
        self.timing_wheel = TimingWheel(
            tick_ms,
            wheel_size,
            time_ms() if start_ms is None else start_ms,
            self._task_counter,
            self.delay_queue,
            self._lock,
        )
        self._expired: list[TimerTask] = []

    def add(self, timer_task: TimerTask) -> None:
        entry = TimerTaskEntry(timer_task, timer_task.delay_ms + self._time_ms())
        with self._lock:
            self._add_timer_task_entry(entry)
            expired = self._take_expired()
        if expired:
            self._run(expired)

    def _add_timer_task_entry(self, entry: TimerTaskEntry) -> None:
        if not self.timing_wheel.add(entry):
            # Already expired, or cancelled: run it unless it was cancelled.
            if not entry.cancelled():
                self._expired.append(entry.timer_task)

    def _take_expired(self) -> list[TimerTask]:
        expired = self._expired
        if expired:
            self._expired = []
        return expired

    def _run(self, tasks: list[TimerTask]) -> None:
        if self._executor is not None:
            for task in tasks:
                self._executor.submit(task.run)
        else:
            for task in tasks:
                task.run()

    def advance_clock(self, timeout_ms: float) -> bool:
        """Flush the expired buckets (waiting up to ``timeout_ms`` for the first); True if any was."""
        bucket = self.delay_queue.poll(timeout_ms)
        if bucket is None:
            return False
        with self._lock:
            while bucket is not None:
                self.timing_wheel.advance_clock(bucket.get_expiration())
                bucket.flush(self._add_timer_task_entry)
                bucket = self.delay_queue.poll(0)
            expired = self._take_expired()
        self._run(expired)
        return True

    def size(self) -> int:
        """The number of tasks waiting (cancelled ones leave at once)."""
        return self._task_counter.value

    def shutdown(self) -> None:
        """Wake a waiting ``advance_clock``; shut the executor down if there is one."""
        self.delay_queue.close()
        if self._executor is not None:
            self._executor.shutdown(wait=False)
