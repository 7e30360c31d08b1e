# cython: language_level=3
"""The broker's timer: hierarchical timing wheels whose buckets sit in a delay queue.

Kafka's ``org.apache.kafka.server.util.timer`` package: ``TimerTask`` (what runs),
``TimerTaskEntry`` (its place in a bucket, removable in O(1)), ``TimerTaskList`` (a bucket: a
doubly linked list with a sentinel and one expiration), ``TimingWheel`` (``tick_ms`` x
``wheel_size`` buckets, and an overflow wheel made on demand whose tick is this wheel's interval),
``DelayQueue`` (the buckets, ordered by expiration) and ``SystemTimer`` (``add``,
``advance_clock``).

Why buckets and not tasks in the delay queue: adding and cancelling a task is O(1) (link or unlink
it in a bucket); the queue only orders the buckets, of which there are at most ``wheel_size`` per
wheel, however many tasks are outstanding.  A task cancelled before its deadline (the common case
in the purgatory) is simply unlinked, and never costs anything again.

The per-task work (link, unlink, bucket choice) runs once per delayed operation, so it is
compiled; ``DelayQueue`` and ``SystemTimer``, the control flow around it, are in this file too,
so that ``add`` and the flush loop call the rest in C; they read like the Python they are.  See
``docs/broker/timing_wheel.rst``.
"""

cimport cython
from cpython.object cimport PyObject
from cpython.pythread cimport (
    NOWAIT_LOCK,
    WAIT_LOCK,
    PyThread_acquire_lock,
    PyThread_allocate_lock,
    PyThread_free_lock,
    PyThread_release_lock,
    PyThread_type_lock,
)
from cpython.ref cimport Py_INCREF, Py_XDECREF

import logging
import threading
import time as _time
from heapq import heappop, heappush


@cython.no_gc
cdef class TimerTaskEntry:
    """TimerTaskEntry()

    A task's link in a :class:`TimerTaskList`: its expiration, its list, its neighbours.  It knows
    its list, so removal is O(1).

    Kafka allocates one entry per ``add`` and points the task at it, so that a task added again
    finds its old entry stale.  Here every :class:`TimerTask` *is* its own entry (an intrusive
    link, as the Linux kernel's timers have): adding a task again moves its one link, which is
    what Kafka's stale-entry check achieves, and a waiting operation is one object, not two (one
    allocation less per ``add``, one cache miss less per ``cancel`` with a million waiting, see
    ``benchmarks/bench_purgatory.py``).  A bare ``TimerTaskEntry()`` is a list's sentinel.

    Links are not tracked by the cyclic garbage collector: with a million timers outstanding,
    every collection of the oldest generation would walk a million of them.  They are borrowed
    pointers (``next``, ``prev``, ``list``), and a bucket owns one reference to each entry linked
    in it: taken by ``TimerTaskList.add``, given back by ``remove``, and by the bucket itself for
    every entry still linked when it goes.  So links make no reference cycles, a timer dropped
    while tasks wait frees them (unless a waiting task refers back to the timer: the collector
    cannot see the bucket's reference, so such a timer needs ``shutdown``), and unlinking an
    entry writes its neighbours' links but reads nothing from them (no reference count to
    change), so with a million waiting a ``cancel`` does not wait for their memory.
    """

    def __init__(self):
        self.expiration_ms = -1

    @property
    def list(self):
        """The :class:`TimerTaskList` this entry is linked in, or None."""
        return <object>self._list if self._list != NULL else None

    @property
    def timer_task(self):
        """The task this entry links (itself), or None for a list's sentinel."""
        return self if isinstance(self, TimerTask) else None

    cpdef bint cancelled(self):
        """True when the task was cancelled since it was last added (never for a sentinel)."""
        return False

    cpdef void remove(self) noexcept:
        unlink(self)


cdef inline void unlink(TimerTaskEntry entry) noexcept:
    """``TimerTaskEntry.remove`` without the check for a Python override (tasks are subclassed)."""
    # Kafka loops because a flush may move the entry meanwhile; here nothing runs between the
    # read and the unlink (the caller holds a reference, so the bucket's is not the last), so
    # one pass empties it.
    if entry._list != NULL:
        (<TimerTaskList>entry._list).remove(entry)


@cython.no_gc
cdef class TimerTask(TimerTaskEntry):
    """TimerTask(delay_ms)

    Something to run once ``delay_ms`` has passed since it was added to a timer.  Subclasses
    override :meth:`run`.  :meth:`cancel` unlinks it from its bucket at once; a cancelled task
    never runs (unless it is added again).  A task is in at most one bucket: adding it again
    takes it out of the old one.

    The task is its own :class:`TimerTaskEntry` (see there), and like it out of the collector's
    sight (``no_gc``); a subclass's own attributes are still followed as usual.
    """

    def __init__(self, delay_ms):
        self.delay_ms = delay_ms
        self._cancelled = True  # not added yet

    def run(self):
        raise NotImplementedError

    cpdef void cancel(self) noexcept:
        self._cancelled = True
        unlink(self)

    cpdef bint cancelled(self):
        return self._cancelled

    def is_cancelled(self):
        """True when cancelled, or never added."""
        return self._cancelled

    def get_timer_task_entry(self):
        """Kafka's ``getTimerTaskEntry``: the link holding it in a bucket (itself), or None."""
        return self if self._list != NULL else None


@cython.final
cdef class TaskCounter:
    """The number of entries in all the buckets of one timer (Kafka's shared ``AtomicInteger``)."""

    def __init__(self):
        self.value = 0


@cython.final
@cython.no_gc  # its fields make no cycle; and the collector must never clear _root (__dealloc__)
cdef class TimerTaskList:
    """TimerTaskList(task_counter)

    A bucket: a circular doubly linked list of entries around a sentinel, with one expiration
    (the start of the time slot it stands for).  ``set_expiration`` returns True when that
    changed, which is when the bucket must (again) be offered to the delay queue.
    """

    def __cinit__(self, *args, **kwargs):
        # Here, not in __init__, so that the sentinel is made once whatever calls __init__.
        cdef TimerTaskEntry root = TimerTaskEntry.__new__(TimerTaskEntry)
        root.expiration_ms = -1
        root._next = <PyObject*>root
        root._prev = <PyObject*>root
        self._root = root
        self._expiration = -1

    def __init__(self, TaskCounter task_counter not None):
        self._task_counter = task_counter

    def __dealloc__(self):
        # The bucket owns a reference to each entry still linked.  Cut every link first, moving
        # the bucket's references into a list, so that no code runs while links are cut; the
        # list goes at the end (which may run a task's __del__: it finds its task in no list).
        cdef TimerTaskEntry root = self._root
        cdef PyObject* p
        cdef PyObject* next_p
        cdef Py_ssize_t n = 0
        cdef list linked
        if root is None:
            return
        p = root._next
        while p != <PyObject*>root:
            n += 1
            p = (<TimerTaskEntry>p)._next
        try:
            linked = [None] * n
        except MemoryError:
            linked = None  # then cut the links and keep the references: a leak, not a crash
        p = root._next
        root._next = <PyObject*>root
        root._prev = <PyObject*>root
        n = 0
        while p != <PyObject*>root:
            next_p = (<TimerTaskEntry>p)._next
            (<TimerTaskEntry>p)._list = NULL
            (<TimerTaskEntry>p)._next = NULL
            (<TimerTaskEntry>p)._prev = NULL
            if linked is not None:
                linked[n] = <object>p  # the list's reference...
                Py_XDECREF(p)  # ...so giving back the bucket's frees nothing yet
                n += 1
            p = next_p
        del linked

    cpdef bint set_expiration(self, long long expiration_ms) noexcept:
        cdef long long old = self._expiration
        self._expiration = expiration_ms
        return old != expiration_ms

    cpdef long long get_expiration(self) noexcept:
        return self._expiration

    def foreach(self, f):
        """Call ``f`` on each task not cancelled (on a snapshot, so ``f`` may change the list)."""
        cdef list tasks = []
        cdef PyObject* root = <PyObject*>self._root
        cdef PyObject* p = self._root._next
        while p != root:
            if not (<TimerTask>p)._cancelled:  # only tasks are linked (add takes a TimerTask)
                tasks.append(<object>p)
            p = (<TimerTaskEntry>p)._next
        for task in tasks:
            f(task)

    def __len__(self):
        cdef Py_ssize_t n = 0
        cdef PyObject* root = <PyObject*>self._root
        cdef PyObject* p = self._root._next
        while p != root:
            n += 1
            p = (<TimerTaskEntry>p)._next
        return n

    cpdef void add(self, TimerTask entry) except *:
        if entry is None:
            raise TypeError("a TimerTask is needed, not None")
        unlink(entry)  # out of any other list first
        entry._cancelled = False  # linked in a bucket: waiting to run
        cdef TimerTaskEntry root = self._root
        cdef PyObject* tail = root._prev
        Py_INCREF(entry)  # the bucket's reference, given back by remove
        entry._next = <PyObject*>root
        entry._prev = tail
        entry._list = <PyObject*>self
        (<TimerTaskEntry>tail)._next = <PyObject*>entry
        root._prev = <PyObject*>entry
        self._task_counter.value += 1

    cpdef void remove(self, TimerTaskEntry entry) except *:
        if entry is None:
            raise TypeError("a TimerTaskEntry is needed, not None")
        if entry._list == <PyObject*>self:
            # Writes to the neighbours, no reads from them: see TimerTaskEntry.
            (<TimerTaskEntry>entry._next)._prev = entry._prev
            (<TimerTaskEntry>entry._prev)._next = entry._next
            entry._next = NULL
            entry._prev = NULL
            entry._list = NULL
            self._task_counter.value -= 1
            # The bucket's reference; never the last one: whoever passed ``entry`` holds one.
            Py_XDECREF(<PyObject*>entry)

    def flush(self, f):
        """Take every entry out and hand it to ``f`` (the timer re-adds it); reset expiration."""
        cdef TimerTaskEntry root = self._root
        cdef TimerTaskEntry head
        while root._next != <PyObject*>root:
            head = <TimerTaskEntry>root._next  # a reference of our own while f runs
            self.remove(head)
            f(head)
        self._expiration = -1

    def __lt__(self, TimerTaskList other):  # heap order when two expirations are equal
        return id(self) < id(other)


@cython.final
cdef class TimingWheel:
    """TimingWheel(tick_ms, wheel_size, start_ms, task_counter, queue)

    One level of the hierarchy: ``wheel_size`` buckets of ``tick_ms`` each.  A task whose
    expiration is within ``[current_time + tick_ms, current_time + interval)`` goes into bucket
    ``(expiration // tick_ms) % wheel_size``; a later one to the overflow wheel (made on first
    need, with ``tick_ms = interval``); an earlier one is already expired and ``add`` returns False
    so that the timer runs it.
    """

    def __init__(self, long long tick_ms, long long wheel_size, long long start_ms,
                 TaskCounter task_counter, DelayQueue queue not None):
        if tick_ms < 1 or wheel_size < 1:
            raise ValueError(f"tick_ms and wheel_size must be >= 1, got {tick_ms}, {wheel_size}")
        self.tick_ms = tick_ms
        self.wheel_size = wheel_size
        self.interval = tick_ms * wheel_size
        self.current_time = start_ms - start_ms % tick_ms  # rounded down to a tick
        self._task_counter = task_counter
        self._queue = queue
        self.buckets = [TimerTaskList(task_counter) for _ in range(wheel_size)]
        self.overflow_wheel = None

    cpdef bint add(self, TimerTask entry) except -1:
        if entry is None:
            raise TypeError("a TimerTask is needed, not None")
        cdef long long expiration = entry.expiration_ms
        cdef long long virtual_id
        cdef TimerTaskList bucket
        if entry._cancelled:
            return False
        if expiration < self.current_time + self.tick_ms:
            return False  # already expired: the caller runs it
        if expiration < self.current_time + self.interval:
            virtual_id = expiration // self.tick_ms
            bucket = <TimerTaskList>self.buckets[virtual_id % self.wheel_size]
            bucket.add(entry)
            # Only the first task of a new time slot changes the bucket's expiration; only then
            # does the bucket (again) enter the delay queue.
            if bucket.set_expiration(virtual_id * self.tick_ms):
                self._queue.offer(bucket)
            return True
        if self.overflow_wheel is None:
            self.overflow_wheel = TimingWheel(
                self.interval, self.wheel_size, self.current_time, self._task_counter, self._queue
            )
        return self.overflow_wheel.add(entry)

    cpdef void advance_clock(self, long long time_ms) noexcept:
        if time_ms >= self.current_time + self.tick_ms:
            self.current_time = time_ms - time_ms % self.tick_ms
            if self.overflow_wheel is not None:
                self.overflow_wheel.advance_clock(self.current_time)


_log = logging.getLogger("kafkacore.broker.server_common.timer")


def hi_res_clock_ms():
    """Kafka's ``Time.SYSTEM.hiResClockMs()``: a monotonic clock in whole milliseconds."""
    return _time.monotonic_ns() // 1_000_000


@cython.final
cdef class DelayQueue:
    """DelayQueue(time_ms)

    Java's ``DelayQueue`` of buckets: a heap keyed by expiration; ``poll`` gives expired ones.
    It holds buckets, not tasks, so it never holds more than the wheels have buckets.

    ``offer``, and a ``poll`` that finds a bucket expired (or does not wait), are one heap
    operation each: no Python code runs between looking at the head and taking it, so under the
    GIL they need no lock of their own.  Only a ``poll`` that waits uses the condition; ``offer``
    wakes it when one is waiting and the new bucket is the first due.
    """

    def __init__(self, time_ms):
        self._time_ms = time_ms
        self._heap = []
        # Lock order: leaf. Guards _heap, _closed, waiting.
        self._available = threading.Condition(threading.Lock())
        self._closed = False
        self.waiting = 0

    cpdef offer(self, TimerTaskList bucket):
        if bucket is None:  # typed arguments admit None: refuse it before reading its fields
            raise TypeError("a TimerTaskList is needed, not None")
        heappush(self._heap, (bucket._expiration, bucket))
        # A waiting poll counts itself before it looks at the heap: it saw this bucket, or it is
        # counted here and is woken (the condition's lock is free only once it waits).
        if self.waiting and (<tuple>self._heap[0])[1] is bucket:
            with self._available:
                self._available.notify_all()

    cdef TimerTaskList _poll_expired(self):
        if not self._heap:
            return None
        now = self._time_ms()
        if self._heap and (<tuple>self._heap[0])[0] <= now:
            return <TimerTaskList>(<tuple>heappop(self._heap))[1]
        return None

    cpdef TimerTaskList poll(self, timeout_ms=0):
        """The first expired bucket, waiting up to ``timeout_ms`` (real time) for one; else None."""
        cdef TimerTaskList bucket = self._poll_expired()
        if bucket is not None or not timeout_ms > 0 or self._closed:
            return bucket
        deadline = _time.monotonic() + timeout_ms / 1000.0
        with self._available:
            self.waiting += 1
            try:
                while True:
                    bucket = self._poll_expired()
                    if bucket is not None:
                        return bucket
                    remaining = deadline - _time.monotonic()
                    if remaining <= 0 or self._closed:
                        return None
                    if self._heap:
                        delay_ms = (<tuple>self._heap[0])[0] - self._time_ms()
                        remaining = min(remaining, max(delay_ms, 0) / 1000.0)
                    self._available.wait(remaining)
            finally:
                self.waiting -= 1

    def close(self):
        """Wake every waiting ``poll`` so that it returns None (used on shutdown)."""
        with self._available:
            self._closed = True
            self._available.notify_all()

    def __len__(self):
        return len(self._heap)


@cython.final
cdef class SystemTimer:
    """SystemTimer(executor_name="timer", tick_ms=1, wheel_size=20, start_ms=None, \
time_ms=hi_res_clock_ms, executor=None)

    Kafka's ``SystemTimer``: tasks in timing wheels, buckets in a delay queue.

    ``advance_clock(timeout_ms)`` waits up to ``timeout_ms`` for the first bucket to expire, then
    flushes every expired bucket: each task is added again, so it either falls into a finer wheel
    or, its deadline reached, runs.  Tasks run on ``executor`` (anything with ``submit``) when one
    is given, else in the thread that called ``add``/``advance_clock``, after the timer's lock is
    released (a task's code never runs under the timer's lock).

    ``time_ms`` is the clock (milliseconds); tests pass their own to drive time by hand.
    """

    cdef readonly str executor_name
    cdef readonly DelayQueue delay_queue
    cdef readonly TimingWheel timing_wheel
    cdef object _time_ms
    cdef object _executor
    # Kafka's read-write lock, as one plain lock: add and advance_clock do not interleave.
    # Not reentrant, and no task runs under it.
    cdef PyThread_type_lock _lock
    cdef TaskCounter _task_counter
    # Tasks found expired under the lock, run after it is released.
    cdef list _expired

    def __cinit__(self, *args, **kwargs):
        # Lock order: leaf. Guards the wheels; tasks run outside it.
        self._lock = PyThread_allocate_lock()
        if self._lock == NULL:
            raise MemoryError()

    def __dealloc__(self):
        if self._lock != NULL:
            PyThread_free_lock(self._lock)

    cdef void _lock_timer(self) noexcept:
        # Uncontended: take it at once.  Else wait without the GIL, which the holder may need.
        if not PyThread_acquire_lock(self._lock, NOWAIT_LOCK):
            with nogil:
                PyThread_acquire_lock(self._lock, WAIT_LOCK)

    def __init__(self, executor_name="timer", tick_ms=1, wheel_size=20, start_ms=None,
                 time_ms=hi_res_clock_ms, executor=None):
        self.executor_name = executor_name
        self._time_ms = time_ms
        self._executor = executor
        self._task_counter = TaskCounter()
        self.delay_queue = DelayQueue(time_ms)
        self.timing_wheel = TimingWheel(
            tick_ms,
            wheel_size,
            time_ms() if start_ms is None else start_ms,
            self._task_counter,
            self.delay_queue,
        )
        self._expired = []

    cpdef add(self, TimerTask timer_task):
        if timer_task is None:
            raise TypeError("a TimerTask is needed, not None")
        # Kafka makes a new TimerTaskEntry(timer_task, expiration) and drops the task's old one;
        # the task is its own entry: take it out of its old bucket, set its new expiration.
        cdef long long expiration = timer_task.delay_ms + self._time_ms()
        cdef list expired
        self._lock_timer()
        try:
            unlink(timer_task)
            timer_task.expiration_ms = expiration
            timer_task._cancelled = False
            self._add_timer_task_entry(timer_task)
            expired = self._take_expired()
        finally:
            PyThread_release_lock(self._lock)
        if expired:
            self._run(expired)

    cdef int _add_timer_task_entry(self, TimerTask entry) except -1:
        if not self.timing_wheel.add(entry):
            # Already expired, or cancelled: run it unless it was cancelled.  It is in no bucket.
            if not entry._cancelled:
                self._expired.append(entry)
        return 0

    cdef list _take_expired(self):
        cdef list expired = self._expired
        if expired:
            self._expired = []
            return expired
        return None

    cdef _run(self, list tasks):
        if self._executor is not None:
            for task in tasks:
                self._executor.submit(task.run)
        else:
            for task in tasks:
                try:
                    task.run()
                except Exception:
                    # One failing task must not keep the others from running, nor stop the
                    # thread that advances the clock (Kafka's executor logs it the same way).
                    _log.exception("timer task %r failed", task)

    def advance_clock(self, timeout_ms):
        """Flush the expired buckets (waiting up to ``timeout_ms`` for the first); True if any."""
        cdef TimerTaskList bucket = self.delay_queue.poll(timeout_ms)
        cdef TimerTask head
        cdef list expired
        if bucket is None:
            return False
        self._lock_timer()
        try:
            while bucket is not None:
                self.timing_wheel.advance_clock(bucket._expiration)
                # TimerTaskList.flush with the re-add inlined: take each entry out and add it
                # again, so it falls to a finer wheel or, expired, is run.
                # Only tasks are linked (TimerTaskList.add takes a TimerTask): the cast is safe.
                while bucket._root._next != <PyObject*>bucket._root:
                    head = <TimerTask>bucket._root._next
                    bucket.remove(head)
                    self._add_timer_task_entry(head)
                bucket._expiration = -1
                bucket = self.delay_queue.poll(0)
            expired = self._take_expired()
        finally:
            PyThread_release_lock(self._lock)
        if expired:
            self._run(expired)
        return True

    def size(self):
        """The number of tasks waiting (cancelled ones leave at once)."""
        return self._task_counter.value

    def shutdown(self):
        """Wake a waiting ``advance_clock``, drop the tasks still waiting (they will not run), and
        shut the executor down if there is one."""
        cdef TimingWheel wheel = self.timing_wheel
        cdef TimerTaskList bucket
        cdef TimerTask head
        # Dropped after the lock is released: freeing a task may run its code (``__del__``).
        cdef list dropped = []
        self.delay_queue.close()
        self._lock_timer()
        try:
            while wheel is not None:
                for bucket in wheel.buckets:
                    while bucket._root._next != <PyObject*>bucket._root:
                        head = <TimerTask>bucket._root._next
                        bucket.remove(head)
                        head._cancelled = True  # it will not run
                        dropped.append(head)
                wheel = wheel.overflow_wheel
        finally:
            PyThread_release_lock(self._lock)
        del dropped
        if self._executor is not None:
            self._executor.shutdown(wait=False)
