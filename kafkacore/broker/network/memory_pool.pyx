# cython: language_level=3
"""The bytes of requests being read or handled, for all processors together
(``queued.max.request.bytes``; Kafka's ``SimpleMemoryPool``).

A processor that has read a request's size asks for that many bytes before it reads the body; when
the pool cannot give them, that connection is not read until another request's bytes come back,
so clients that half-send huge requests hold at most the pool, not the broker's whole memory.
See ``docs/broker/network.rst``.

Compiled because every request takes and gives back its bytes on a network thread.  Kafka keeps
the count in an ``AtomicLong``; here each method is one C step under the :term:`GIL` (it calls
no Python code and releases nothing), so processors on other threads see the count whole without
a lock.
"""

from libc.stdint cimport int64_t


cdef class MemoryPool:
    """``capacity`` bytes shared by the processors; -1: no bound."""

    cdef readonly int64_t capacity
    cdef int64_t _used

    def __init__(self, int64_t capacity):
        if capacity < -1:
            raise ValueError(f"queued.max.request.bytes={capacity}: -1 (no bound) or at least 0")
        self.capacity = capacity
        self._used = 0

    cpdef bint try_allocate(self, int64_t size) except -1:
        """Take ``size`` bytes; False when the pool has not got them.  An empty pool always
        gives: one request larger than the pool still fits (Kafka's ``tryAllocate``)."""
        if size < 0:
            raise ValueError(f"cannot allocate {size} bytes")
        # (capacity - used, not used + size: that could pass int64's end)
        if self.capacity >= 0 and self._used > 0 and size > self.capacity - self._used:
            return False
        self._used += size
        return True

    cpdef void release(self, int64_t size) except *:
        """Give back ``size`` bytes taken by :meth:`try_allocate`."""
        if size < 0:
            raise ValueError(f"cannot release {size} bytes")
        self._used = self._used - size if size < self._used else 0

    @property
    def used(self) -> int:
        """The bytes taken now."""
        return self._used
