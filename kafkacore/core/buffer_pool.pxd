# cython: language_level=3
"""Declarations of BufferPool, Java's ``BufferPool``: the producer's bounded batch memory.

Concurrency: one pthread mutex, ``_mutex``, guards every mutable field of the pool and every field
of every queued ``Waiter``.  Two rules keep it deadlock-free next to the GIL:

1. Nothing that runs while ``_mutex`` is held waits for the GIL.  The sections that hold it run
   only C (counters, pointer lists, ``Py_DECREF`` of exact ``bytearray`` objects, which run no
   Python code), so they can never give up the GIL half-way or need it back.
2. A thread only waits (``pthread_cond_timedwait``) with the GIL released, and when the wait
   returns it drops ``_mutex`` *before* taking the GIL back, then takes ``_mutex`` again.

So the only lock order is GIL -> ``_mutex``, and a thread holding ``_mutex`` never blocks.
"""

from cpython.object cimport PyObject
from posix.time cimport timespec
from posix.types cimport clockid_t


cdef extern from "<pthread.h>" nogil:
    # Opaque to Cython; the C compiler sees the real types.
    ctypedef struct pthread_mutex_t:
        pass
    ctypedef struct pthread_mutexattr_t:
        pass
    ctypedef struct pthread_cond_t:
        pass
    ctypedef struct pthread_condattr_t:
        pass
    int pthread_mutex_init(pthread_mutex_t* mutex, const pthread_mutexattr_t* attr)
    int pthread_mutex_destroy(pthread_mutex_t* mutex)
    int pthread_mutex_lock(pthread_mutex_t* mutex)
    int pthread_mutex_unlock(pthread_mutex_t* mutex)
    int pthread_condattr_init(pthread_condattr_t* attr)
    int pthread_condattr_destroy(pthread_condattr_t* attr)
    int pthread_condattr_setclock(pthread_condattr_t* attr, clockid_t clock_id)
    int pthread_cond_init(pthread_cond_t* cond, const pthread_condattr_t* attr)
    int pthread_cond_destroy(pthread_cond_t* cond)
    int pthread_cond_signal(pthread_cond_t* cond)
    int pthread_cond_timedwait(pthread_cond_t* cond, pthread_mutex_t* mutex,
                               const timespec* abstime)


# One thread blocked in allocate(): Java's per-waiter ``Condition moreMemory``.  It lives on the
# waiting thread's C stack; allocate() does not return before it has left the queue, so the queue
# never points at a dead frame.  Every field is guarded by the pool's _mutex.
cdef struct Waiter:
    # Signalled by whoever changes this waiter's state: served in full, or the pool closed.
    # Initialised with CLOCK_MONOTONIC, so wall-clock jumps do not stretch or cut the wait.
    pthread_cond_t cond
    # Bytes asked for.
    long long size
    # Bytes set aside for this waiter so far (Java's ``accumulated``).  Only the head of the queue
    # accumulates: memory is handed out strictly first come, first served.
    long long accumulated
    # A pooled buffer handed over whole (an owned reference), or NULL.  Set only when the waiter
    # asked for exactly poolable_size and had accumulated nothing, like Java's free.pollFirst().
    PyObject* buffer
    # Served in full (accumulated == size) and taken off the queue by the server; the bytes are
    # already counted in _allocated.  Wins over a timeout or close that is noticed later.
    bint done
    # Neighbours in the pool's waiter queue (NULL at the ends, and once off the queue).
    Waiter* prev
    Waiter* next
    # Whether the waiter is linked into the queue.
    bint queued


cdef class BufferPool:
    cdef:
        # Guards every field below that is not marked read-only, and all queued Waiters.
        pthread_mutex_t _mutex
        # Attributes for each Waiter's condition: CLOCK_MONOTONIC.  Read-only after __cinit__.
        pthread_condattr_t _condattr
        # Whether _mutex and _condattr were initialised (so __dealloc__ destroys only those).
        bint _initialized

        # buffer.memory: the hard limit on the bytes handed out at once.  Read-only.
        readonly long long total_memory
        # batch.size: buffers of exactly this size are kept on the free list.  Read-only.
        readonly long long poolable_size

        # Java nonPooledAvailableMemory: bytes that are neither handed out, nor on the free list,
        # nor set aside for a waiter.  [_mutex]
        long long _non_pooled
        # Bytes handed out by allocate() and not yet given back to deallocate().  [_mutex]
        # Invariant: _non_pooled + _free_count * poolable_size + _allocated
        #            + (head waiter's accumulated) == total_memory
        long long _allocated

        # The free list (Java ``Deque<ByteBuffer> free``): a stack of owned references to exact
        # bytearrays of poolable_size bytes; the most recently returned (warmest) is on top.
        # [_mutex]
        PyObject** _free
        # Buffers on the free list.  [_mutex]
        Py_ssize_t _free_count
        # Slots malloc'd for _free; grows by doubling.  [_mutex]
        Py_ssize_t _free_capacity

        # The waiter queue (Java ``Deque<Condition> waiters``), oldest first.  [_mutex]
        Waiter* _head
        Waiter* _tail
        # Waiters in the queue.  [_mutex]
        Py_ssize_t _waiter_count

        # close() was called: allocate() refuses, waiters wake with IllegalStateError.  [_mutex]
        bint _closed

    # The methods below are called with _mutex held (and the GIL) and run no Python code.

    # Java freeUp: move buffers from the free list to _non_pooled until _non_pooled >= size or
    # the free list is empty.  The dropped bytearrays are released.
    cdef void free_up(self, long long size) noexcept
    # Push an owned reference to a poolable bytearray on the free list (or, if the list cannot
    # grow, release it and count its bytes as non-pooled).
    cdef void _push_free(self, PyObject* buffer) noexcept
    # Hand available memory to the head of the queue, serving waiters in order while it lasts.
    cdef void _serve(self) noexcept
    # Link at the tail / unlink from anywhere.
    cdef void _enqueue(self, Waiter* w) noexcept
    cdef void _unlink(self, Waiter* w) noexcept
    # A waiter that gives up (timeout, close, signal): leave the queue, give back what it holds.
    cdef void _leave(self, Waiter* w) noexcept

    # Block until w is served, the deadline passes, the pool closes or a signal handler raises.
    # Called with _mutex held; returns with it released.  -1 means a Python exception is set.
    cdef int _wait(self, Waiter* w, long long deadline_ns) except -1
    # A fresh zeroed bytearray of ``size`` bytes for memory already counted as allocated; if
    # that fails, the bytes go back to the pool before the error propagates.
    cdef object _new_buffer(self, long long size)
    # The BufferExhaustedError for a request of ``size`` bytes that could not be met in time.
    # Called without _mutex (it reads available_memory()).
    cdef object _exhausted(self, long long size, object max_time_to_block_ms)
