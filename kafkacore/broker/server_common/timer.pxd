# cython: language_level=3
"""Declarations of the timer's per-task parts (Kafka's ``TimerTask``, ``TimerTaskEntry``,
``TimerTaskList``, ``TimingWheel``).

Concurrency: every method here runs with the GIL held and calls no Python code while it relinks
entries, so each link or unlink is atomic with respect to other threads (the GIL is the lock that
Kafka's ``synchronized`` blocks are).  The one exception is ``TimerTaskList.flush``, which calls
its function between unlinks; it re-reads the list after each call.  ``SystemTimer`` serialises
``add`` against ``advance_clock`` with its own lock, as Kafka's read-write lock does.

Every ``TimerTask`` is its own ``TimerTaskEntry`` (an intrusive link: see the class's docstring),
and only tasks are ever linked in a bucket (``TimerTaskList.add`` takes a ``TimerTask``), so code
walking a bucket may cast its entries to ``TimerTask``.
"""

cimport cython
from cpython.object cimport PyObject


cdef class TimerTaskEntry:
    # A task's link in a bucket (every TimerTask is its own entry; a bare one is a sentinel).
    cdef readonly long long expiration_ms
    # Borrowed pointers (the bucket owns a reference to each entry linked in it, see the class):
    # the TimerTaskList this entry is linked in, and its neighbours there; NULL when unlinked.
    cdef PyObject* _list
    cdef PyObject* _next
    cdef PyObject* _prev

    cpdef bint cancelled(self)
    cpdef void remove(self) noexcept


cdef class TimerTask(TimerTaskEntry):
    cdef public long long delay_ms
    # Set by cancel (and before the first add), cleared by SystemTimer.add.
    cdef bint _cancelled

    cpdef void cancel(self) noexcept


@cython.final
cdef class TaskCounter:
    cdef public long long value


@cython.final
@cython.no_gc
cdef class TimerTaskList:
    cdef TaskCounter _task_counter
    cdef TimerTaskEntry _root
    cdef long long _expiration

    cpdef bint set_expiration(self, long long expiration_ms) noexcept
    cpdef long long get_expiration(self) noexcept
    cpdef void add(self, TimerTask entry) except *
    cpdef void remove(self, TimerTaskEntry entry) except *


@cython.final
cdef class DelayQueue:
    cdef object _time_ms
    cdef list _heap
    # Used only by a poll that has to wait, and by offer and close to wake it.
    cdef object _available
    cdef bint _closed
    # Polls waiting on the condition.
    cdef readonly int waiting

    cpdef offer(self, TimerTaskList bucket)
    cpdef TimerTaskList poll(self, timeout_ms=*)
    cdef TimerTaskList _poll_expired(self)


@cython.final
cdef class TimingWheel:
    cdef readonly long long tick_ms
    cdef readonly long long wheel_size
    cdef readonly long long interval
    cdef readonly long long current_time
    cdef readonly list buckets
    cdef readonly TimingWheel overflow_wheel
    cdef TaskCounter _task_counter
    # The SystemTimer's delay queue.
    cdef DelayQueue _queue

    cpdef bint add(self, TimerTask entry) except -1
    cpdef void advance_clock(self, long long time_ms) noexcept
