# cython: language_level=3
"""BufferPool: the producer's bounded pool of batch memory (Java ``BufferPool``).

Every batch the accumulator opens needs ``batch.size`` bytes; the pool hands them out and takes
them back, and never lets more than ``buffer.memory`` bytes be out at once.  Buffers of exactly
``poolable_size`` bytes are kept on a free list and reused, so a busy producer does not keep making
and dropping 16 KiB objects.  A thread that asks for more than is free waits, in a first-come,
first-served queue, for at most ``max_time_to_block_ms``.

The pool is the one place in the producer where a send() can block, so its waits are written in C
on pthread condition variables, with the GIL released (see buffer_pool.pxd for the lock rules).
"""

from collections import namedtuple

from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_CheckExact, PyByteArray_GET_SIZE
from cpython.number cimport PyIndex_Check, PyNumber_Index
from cpython.object cimport PyObject
from libc.stdlib cimport free, realloc
from libc.string cimport memset
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec

from kafkacore.errors import BufferExhaustedError, IllegalStateError, RecordTooLargeError


cdef extern from "Python.h":
    # Reference counting on raw pointers (the free list stores PyObject*, not object).
    void _incref "Py_INCREF" (PyObject* o)
    void _decref "Py_DECREF" (PyObject* o)
    # Runs Python signal handlers (KeyboardInterrupt); -1 with an exception set if one raised.
    # Declared here without ``except`` so that we can clean up before propagating.
    int _check_signals "PyErr_CheckSignals" ()
    object PyByteArray_FromStringAndSize(const char* s, Py_ssize_t n)


cdef enum:
    # A waiter wakes at least this often (ns) to run signal handlers, so Ctrl-C interrupts a
    # blocked allocate() within ~0.1 s even when max_time_to_block_ms is a minute.
    WAIT_SLICE_NS = 100000000
    # How _wait ended.
    SERVED = 1
    TIMED_OUT = 2
    CLOSED = 3


# Sizes are long long; refusing anything above 2**62 keeps every sum of sizes free of overflow.
cdef long long MAX_SIZE = 1LL << 62
# max_time_to_block_ms above this (about 31 years) is treated as this, so deadlines fit in ns.
cdef double MAX_BLOCK_MS = 1e12


BufferPoolStatistics = namedtuple(
    "BufferPoolStatistics",
    [
        "waiters",
        "free_buffers",
        "unallocated_memory",
        "available_memory",
        "allocated_memory",
        "reserved_memory",
        "total_memory",
        "poolable_size",
        "closed",
    ],
    module=__name__,   # namedtuple cannot find it from a compiled module's (frameless) init
)
BufferPoolStatistics.__doc__ = """A snapshot of a BufferPool, taken under its lock (trio style).

``waiters``: threads blocked in allocate(); ``free_buffers``: pooled buffers ready for reuse;
``unallocated_memory``: bytes never turned into a buffer (Java nonPooledAvailableMemory);
``available_memory``: unallocated plus free buffers; ``allocated_memory``: bytes handed out and not
yet given back; ``reserved_memory``: bytes already set aside for the first waiter;
``total_memory``, ``poolable_size``: the settings; ``closed``: close() was called.
Always ``available_memory + allocated_memory + reserved_memory == total_memory``.
"""


cdef inline long long _monotonic_ns() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return <long long>ts.tv_sec * 1000000000LL + ts.tv_nsec


cdef inline object _steal(PyObject* p):
    """Turn an owned reference into an object, without leaking the reference we owned."""
    cdef object o = <object>p   # Cython takes a new reference here
    _decref(p)
    return o


cdef long long _as_size(object value, str what) except -1:
    """A byte count: an int (not bool) in 1 .. 2**62, or a clear TypeError/ValueError."""
    if isinstance(value, bool) or not PyIndex_Check(value):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    value = PyNumber_Index(value)
    if value <= 0:
        raise ValueError(f"{what} must be a positive number of bytes, got {value}")
    if value > MAX_SIZE:
        raise ValueError(f"{what} is too large: {value} > 2**62")
    return value


cdef double _as_block_ms(object value) except -1.0:
    """max_time_to_block_ms: a finite number >= 0 (int or float)."""
    cdef double ms
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"max_time_to_block_ms must be a number, not {type(value).__name__}")
    ms = value
    if not (ms >= 0.0) or ms == float("inf"):
        raise ValueError(f"max_time_to_block_ms must be finite and >= 0, got {value!r}")
    return ms if ms < MAX_BLOCK_MS else MAX_BLOCK_MS


cdef class BufferPool:
    """BufferPool(total_memory, poolable_size)

    A pool of at most ``total_memory`` bytes (``buffer.memory``) that keeps buffers of exactly
    ``poolable_size`` bytes (``batch.size``) on a free list for reuse.

    Thread-safe.  Waiting threads are served first come, first served, and wait with the GIL
    released.
    """

    def __cinit__(self, total_memory, poolable_size):
        self.total_memory = _as_size(total_memory, "total_memory")
        self.poolable_size = _as_size(poolable_size, "poolable_size")
        self._non_pooled = self.total_memory
        if pthread_mutex_init(&self._mutex, NULL) != 0:
            raise MemoryError("pthread_mutex_init failed")
        if pthread_condattr_init(&self._condattr) != 0:
            pthread_mutex_destroy(&self._mutex)
            raise MemoryError("pthread_condattr_init failed")
        # Waits are bounded by a monotonic clock: a wall-clock jump must not stretch them.
        pthread_condattr_setclock(&self._condattr, CLOCK_MONOTONIC)
        self._initialized = True

    def __dealloc__(self):
        cdef Py_ssize_t i
        # No waiter can be queued here: each waiting allocate() holds a reference to the pool.
        if self._free != NULL:
            for i in range(self._free_count):
                _decref(self._free[i])
            free(self._free)
            self._free = NULL
        if self._initialized:
            pthread_condattr_destroy(&self._condattr)
            pthread_mutex_destroy(&self._mutex)

    # ---------------------------------------------------------------- allocate

    def allocate(self, size, max_time_to_block_ms):
        """Allocate a bytearray of exactly ``size`` bytes, waiting up to ``max_time_to_block_ms``.

        A request for exactly ``poolable_size`` bytes reuses a buffer from the free list when there
        is one.  **A reused buffer is not zeroed** (Java does not clear pooled buffers either: the
        batch writes before it reads); a newly made one is.

        Raises :class:`~kafkacore.errors.RecordTooLargeError` at once if ``size`` exceeds
        ``total_memory``, :class:`~kafkacore.errors.BufferExhaustedError` if no memory came free in
        time, :class:`~kafkacore.errors.IllegalStateError` if the pool is or gets closed.
        """
        cdef long long n = _as_size(size, "size")
        cdef double ms = _as_block_ms(max_time_to_block_ms)
        cdef long long deadline
        cdef PyObject* buf
        cdef Waiter w
        cdef int outcome

        if n > self.total_memory:
            raise RecordTooLargeError(
                f"Attempt to allocate {n} bytes, but there is a hard limit of "
                f"{self.total_memory} on memory allocations (buffer.memory)"
            )
        # The deadline starts now, so time spent on the lock counts against the bound too.
        deadline = _monotonic_ns() + <long long>(ms * 1e6)

        pthread_mutex_lock(&self._mutex)
        if self._closed:
            pthread_mutex_unlock(&self._mutex)
            raise IllegalStateError(f"BufferPool is closed: cannot allocate {n} bytes")

        # Nobody is waiting (if somebody were, all free memory would be set aside for them and
        # we must queue behind them: no barging).
        if self._head == NULL:
            # Case 1: exactly poolable_size, and a pooled buffer is free.
            if n == self.poolable_size and self._free_count > 0:
                self._free_count -= 1
                buf = self._free[self._free_count]
                self._free[self._free_count] = NULL
                self._allocated += n
                pthread_mutex_unlock(&self._mutex)
                return _steal(buf)
            # Cases 2 to 4: enough memory between non-pooled and the free list; free_up turns
            # free buffers back into plain bytes until the non-pooled part covers the request.
            if self._non_pooled + self._free_count * self.poolable_size >= n:
                self.free_up(n)
                self._non_pooled -= n
                self._allocated += n
                pthread_mutex_unlock(&self._mutex)
                return self._new_buffer(n)

        # Not enough.  A caller that will not wait fails here, before touching the books (else
        # free_up would have broken pooled buffers up for a request that fails anyway).
        if _monotonic_ns() >= deadline:
            pthread_mutex_unlock(&self._mutex)
            raise self._exhausted(n, max_time_to_block_ms)
        # Join the queue, take what there is (if we are first), and wait for the rest.
        w.size = n
        w.accumulated = 0
        w.buffer = NULL
        w.done = False
        w.prev = NULL
        w.next = NULL
        w.queued = False
        if pthread_cond_init(&w.cond, &self._condattr) != 0:
            pthread_mutex_unlock(&self._mutex)
            raise MemoryError("pthread_cond_init failed")
        self._enqueue(&w)
        self._serve()
        outcome = self._wait(&w, deadline)   # releases the mutex; -1 propagates a signal's error

        if outcome == SERVED:
            if w.buffer != NULL:
                return _steal(w.buffer)
            return self._new_buffer(n)
        if outcome == CLOSED:
            raise IllegalStateError(f"BufferPool was closed while waiting to allocate {n} bytes")
        raise self._exhausted(n, max_time_to_block_ms)

    cdef object _exhausted(self, long long n, object max_time_to_block_ms):
        return BufferExhaustedError(
            f"Failed to allocate {n} bytes within the configured max blocking time "
            f"{max_time_to_block_ms} ms (buffer.memory is {self.total_memory} bytes; "
            f"{self.available_memory()} available now)"
        )

    cdef int _wait(self, Waiter* w, long long deadline_ns) except -1:
        cdef long long now, wake
        cdef timespec ts
        cdef int outcome, signalled
        while True:
            # A waiter that was served keeps its memory even if the deadline passed meanwhile.
            if w.done:
                outcome = SERVED
                break
            if self._closed:
                outcome = CLOSED
                break
            now = _monotonic_ns()
            if now >= deadline_ns:
                outcome = TIMED_OUT
                break
            wake = deadline_ns if deadline_ns - now <= WAIT_SLICE_NS else now + WAIT_SLICE_NS
            ts.tv_sec = wake // 1000000000
            ts.tv_nsec = wake % 1000000000
            with nogil:
                # Atomically releases the mutex while asleep; returns holding it again.  Drop it
                # before taking the GIL back (rule 2 in buffer_pool.pxd).
                pthread_cond_timedwait(&w.cond, &self._mutex, &ts)
                pthread_mutex_unlock(&self._mutex)
            # GIL held, mutex not: run signal handlers (Ctrl-C) between slices.
            signalled = _check_signals()
            pthread_mutex_lock(&self._mutex)
            if signalled != 0:
                # A handler raised: give everything back, then let its exception propagate.
                self._leave(w)
                pthread_mutex_unlock(&self._mutex)
                pthread_cond_destroy(&w.cond)
                return -1
        if outcome != SERVED:
            self._leave(w)
        pthread_mutex_unlock(&self._mutex)
        # Nobody can signal w.cond any more: it is off the queue, and signals happen under the
        # mutex we just released.
        pthread_cond_destroy(&w.cond)
        return outcome

    cdef object _new_buffer(self, long long size):
        cdef object buf
        try:
            buf = PyByteArray_FromStringAndSize(NULL, <Py_ssize_t>size)
        except BaseException:
            # Java safeAllocateByteBuffer: the bytes were counted as ours; give them back.
            pthread_mutex_lock(&self._mutex)
            self._allocated -= size
            self._non_pooled += size
            self._serve()
            pthread_mutex_unlock(&self._mutex)
            raise
        memset(PyByteArray_AS_STRING(buf), 0, <size_t>size)
        return buf

    # -------------------------------------------------------------- deallocate

    def deallocate(self, buffer, size=None):
        """Give back ``buffer``, which was allocated with ``size`` bytes (default ``len(buffer)``).

        It goes on the free list only if ``size == poolable_size`` and the buffer is still a
        bytearray of exactly that length.  Otherwise only its byte count is returned: this is how a
        batch whose stream grew into a bigger, new buffer gives its pooled memory back
        (``deallocate(grown_buffer, initial_capacity)``).

        Raises ValueError if that would return more bytes than are allocated (a buffer given back
        twice, or with the wrong size), which would push the pool above ``total_memory``.
        """
        cdef long long n
        cdef bint poolable
        cdef Py_ssize_t i
        cdef long long allocated
        if buffer is None:
            raise TypeError("deallocate() needs the buffer that allocate() returned, not None")
        n = _as_size(len(buffer) if size is None else size, "size")
        poolable = (
            n == self.poolable_size
            and PyByteArray_CheckExact(buffer)
            and PyByteArray_GET_SIZE(buffer) == n
        )
        pthread_mutex_lock(&self._mutex)
        if n > self._allocated:
            allocated = self._allocated
            pthread_mutex_unlock(&self._mutex)
            raise ValueError(
                f"deallocate of {n} bytes, but only {allocated} bytes are allocated from this "
                f"pool: a buffer given back twice, or with another size than it was allocated with"
            )
        if poolable:
            # A pooled buffer on the free list twice would later be handed to two batches at
            # once.  The scan is O(free list), at most total_memory / poolable_size pointers.
            for i in range(self._free_count):
                if self._free[i] == <PyObject*>buffer:
                    pthread_mutex_unlock(&self._mutex)
                    raise ValueError("this buffer is already back in the pool (given back twice)")
        self._allocated -= n
        if poolable:
            _incref(<PyObject*>buffer)
            self._push_free(<PyObject*>buffer)
        else:
            self._non_pooled += n
        self._serve()
        pthread_mutex_unlock(&self._mutex)

    # --------------------------------------------------- under the mutex, C only

    cdef void free_up(self, long long size) noexcept:
        cdef PyObject* b
        while self._free_count > 0 and self._non_pooled < size:
            self._free_count -= 1
            b = self._free[self._free_count]
            self._free[self._free_count] = NULL
            self._non_pooled += self.poolable_size
            # An exact bytearray: its dealloc runs no Python code, so this is safe under the mutex.
            _decref(b)

    cdef void _push_free(self, PyObject* buffer) noexcept:
        cdef PyObject** grown
        cdef Py_ssize_t capacity
        if self._free_count == self._free_capacity:
            capacity = self._free_capacity * 2 if self._free_capacity else 16
            grown = <PyObject**>realloc(self._free, <size_t>capacity * sizeof(PyObject*))
            if grown == NULL:
                # No room to remember it: drop the buffer but keep its bytes.  Nothing is lost
                # except the reuse.
                self._non_pooled += self.poolable_size
                _decref(buffer)
                return
            self._free = grown
            self._free_capacity = capacity
        self._free[self._free_count] = buffer
        self._free_count += 1

    cdef void _serve(self) noexcept:
        cdef Waiter* w
        cdef long long need, got
        if self._closed:
            return   # every queued waiter is about to leave with an error
        while self._head != NULL:
            w = self._head
            if w.accumulated == 0 and w.size == self.poolable_size and self._free_count > 0:
                # Hand over a pooled buffer whole.
                self._free_count -= 1
                w.buffer = self._free[self._free_count]
                self._free[self._free_count] = NULL
                w.accumulated = w.size
            else:
                # Take what we can; the rest comes as more memory is given back.
                need = w.size - w.accumulated
                self.free_up(need)
                got = need if self._non_pooled >= need else self._non_pooled
                self._non_pooled -= got
                w.accumulated += got
                if w.accumulated < w.size:
                    return   # all free memory is now set aside for the head
            self._unlink(w)
            w.done = True
            self._allocated += w.size
            pthread_cond_signal(&w.cond)

    cdef void _enqueue(self, Waiter* w) noexcept:
        w.prev = self._tail
        w.next = NULL
        if self._tail != NULL:
            self._tail.next = w
        else:
            self._head = w
        self._tail = w
        w.queued = True
        self._waiter_count += 1

    cdef void _unlink(self, Waiter* w) noexcept:
        if w.prev != NULL:
            w.prev.next = w.next
        else:
            self._head = w.next
        if w.next != NULL:
            w.next.prev = w.prev
        else:
            self._tail = w.prev
        w.prev = NULL
        w.next = NULL
        w.queued = False
        self._waiter_count -= 1

    cdef void _leave(self, Waiter* w) noexcept:
        if w.queued:
            self._unlink(w)
        if w.done:
            # Served, but the thread will not take it (a signal handler raised).
            self._allocated -= w.size
            w.done = False
        if w.buffer != NULL:
            self._push_free(w.buffer)
            w.buffer = NULL
        else:
            self._non_pooled += w.accumulated
        w.accumulated = 0
        # What we gave back may be exactly what the next waiter needs.
        self._serve()

    # ------------------------------------------------------------------ state

    def close(self):
        """Refuse further allocations and wake every waiter with IllegalStateError.

        Buffers that are out may still be given back with deallocate().
        """
        cdef Waiter* w
        pthread_mutex_lock(&self._mutex)
        self._closed = True
        w = self._head
        while w != NULL:
            pthread_cond_signal(&w.cond)
            w = w.next
        pthread_mutex_unlock(&self._mutex)

    @property
    def closed(self):
        """Whether close() was called."""
        return self._closed

    def available_memory(self):
        """Bytes that could be handed out now: unallocated plus the free list."""
        cdef long long v
        pthread_mutex_lock(&self._mutex)
        v = self._non_pooled + self._free_count * self.poolable_size
        pthread_mutex_unlock(&self._mutex)
        return v

    def unallocated_memory(self):
        """Bytes not in any buffer, handed out or pooled (Java ``nonPooledAvailableMemory``)."""
        cdef long long v
        pthread_mutex_lock(&self._mutex)
        v = self._non_pooled
        pthread_mutex_unlock(&self._mutex)
        return v

    def queued(self):
        """Threads blocked in allocate() right now."""
        cdef Py_ssize_t v
        pthread_mutex_lock(&self._mutex)
        v = self._waiter_count
        pthread_mutex_unlock(&self._mutex)
        return v

    def statistics(self):
        """A :class:`~kafkacore.core.buffer_pool.BufferPoolStatistics`, taken under the lock."""
        cdef Py_ssize_t waiters, free_buffers
        cdef long long non_pooled, allocated, reserved
        cdef bint closed
        pthread_mutex_lock(&self._mutex)
        waiters = self._waiter_count
        free_buffers = self._free_count
        non_pooled = self._non_pooled
        allocated = self._allocated
        reserved = self._head.accumulated if self._head != NULL else 0
        closed = self._closed
        pthread_mutex_unlock(&self._mutex)
        return BufferPoolStatistics(
            waiters=waiters,
            free_buffers=free_buffers,
            unallocated_memory=non_pooled,
            available_memory=non_pooled + free_buffers * self.poolable_size,
            allocated_memory=allocated,
            reserved_memory=reserved,
            total_memory=self.total_memory,
            poolable_size=self.poolable_size,
            closed=closed,
        )

    def __repr__(self):
        s = self.statistics()
        return (
            f"<BufferPool total={s.total_memory} poolable={s.poolable_size} "
            f"available={s.available_memory} allocated={s.allocated_memory} "
            f"free_buffers={s.free_buffers} waiters={s.waiters}{' closed' if s.closed else ''}>"
        )
