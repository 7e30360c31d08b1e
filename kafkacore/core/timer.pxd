# cython: language_level=3
"""Declarations of the timer's per-task parts (Kafka's ``TimerTask``, ``TimerTaskEntry``,
``TimerTaskList``, ``TimingWheel``).

Concurrency: every method here runs with the GIL held and calls no Python code while it relinks
entries, so each link or unlink is atomic with respect to other threads (the GIL is the lock that
Kafka's ``synchronized`` blocks are).  The one exception is ``TimerTaskList.flush``, which calls
its function between unlinks; it re-reads the list after each call.  ``SystemTimer`` (Python)
serialises ``add`` against ``advance_clock`` with its own lock, as Kafka's read-write lock does.
"""

cimport cython


cdef class TimerTask:
    cdef public long long delay_ms
    # The entry holding this task in a bucket; None when cancelled (or never added).
    cdef TimerTaskEntry _entry

    cpdef void cancel(self) noexcept
    cdef void set_entry(self, TimerTaskEntry entry) noexcept


@cython.final
cdef class TimerTaskEntry:
    cdef readonly TimerTask timer_task
    cdef readonly long long expiration_ms
    # The bucket this entry is linked in, or None.
    cdef readonly TimerTaskList list
    cdef TimerTaskEntry next
    cdef TimerTaskEntry prev

    cpdef bint cancelled(self)
    cpdef void remove(self) noexcept


@cython.final
cdef class TaskCounter:
    cdef public long long value


@cython.final
cdef class TimerTaskList:
    cdef TaskCounter _task_counter
    cdef TimerTaskEntry _root
    cdef long long _expiration

    cpdef bint set_expiration(self, long long expiration_ms) noexcept
    cpdef long long get_expiration(self) noexcept
    cpdef void add(self, TimerTaskEntry entry) except *
    cpdef void remove(self, TimerTaskEntry entry) except *


@cython.final
cdef class TimingWheel:
    cdef readonly long long tick_ms
    cdef readonly long long wheel_size
    cdef readonly long long interval
    cdef readonly long long current_time
    cdef readonly list buckets
    cdef readonly TimingWheel overflow_wheel
    cdef TaskCounter _task_counter
    # Anything with offer(bucket): the SystemTimer's delay queue.
    cdef object _queue

    cpdef bint add(self, TimerTaskEntry entry) except -1
    cpdef void advance_clock(self, long long time_ms) noexcept
