# cython: language_level=3
"""Declarations of ByteBufferOutputStream, cimported by memory_records_builder.pyx (and anyone
writing bytes fast).

The inline methods below are the per-field fast paths: memory_records_builder.pyx writes a whole
record through them with no Python call.  They are defined here, in the .pxd, so that Cython
inlines them into the cimporting module.

Concurrency: a stream belongs to one MemoryRecordsBuilder, which belongs to one ProducerBatch; the
accumulator's per-deque lock (held by whoever appends) guards every field.  The stream itself takes
no lock.
"""

from cpython.buffer cimport Py_buffer
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy


# Largest encodings of Kafka's zigzag varints: 5 bytes for 32-bit values, 10 for 64-bit ones.
cdef enum:
    MAX_VARINT_SIZE = 5
    MAX_VARLONG_SIZE = 10


cdef inline int varint_size(int32_t value) noexcept nogil:
    """Bytes that ``value`` takes as a zigzag varint (1..5)."""
    cdef uint32_t v = (<uint32_t>value << 1) ^ <uint32_t>(value >> 31)
    cdef int n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


cdef inline int varlong_size(int64_t value) noexcept nogil:
    """Bytes that ``value`` takes as a zigzag varlong (1..10)."""
    cdef uint64_t v = (<uint64_t>value << 1) ^ <uint64_t>(value >> 63)
    cdef int n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


cdef inline Py_ssize_t put_varint(unsigned char* p, int32_t value) noexcept nogil:
    """Write ``value`` zigzag-encoded at ``p`` (room for 5 bytes is the caller's job)."""
    cdef uint32_t v = (<uint32_t>value << 1) ^ <uint32_t>(value >> 31)
    cdef Py_ssize_t n = 0
    while v >= 0x80:
        p[n] = <unsigned char>((v & 0x7F) | 0x80)
        v >>= 7
        n += 1
    p[n] = <unsigned char>v
    return n + 1


cdef inline Py_ssize_t put_varlong(unsigned char* p, int64_t value) noexcept nogil:
    """Write ``value`` zigzag-encoded at ``p`` (room for 10 bytes is the caller's job)."""
    cdef uint64_t v = (<uint64_t>value << 1) ^ <uint64_t>(value >> 63)
    cdef Py_ssize_t n = 0
    while v >= 0x80:
        p[n] = <unsigned char>((v & 0x7F) | 0x80)
        v >>= 7
        n += 1
    p[n] = <unsigned char>v
    return n + 1


cdef inline void put_int16(unsigned char* p, int16_t value) noexcept nogil:
    """Big-endian (network order) 16-bit store."""
    cdef uint16_t v = <uint16_t>value
    p[0] = <unsigned char>(v >> 8)
    p[1] = <unsigned char>v


cdef inline void put_int32(unsigned char* p, int32_t value) noexcept nogil:
    """Big-endian (network order) 32-bit store."""
    cdef uint32_t v = <uint32_t>value
    p[0] = <unsigned char>(v >> 24)
    p[1] = <unsigned char>(v >> 16)
    p[2] = <unsigned char>(v >> 8)
    p[3] = <unsigned char>v


cdef inline void put_int64(unsigned char* p, int64_t value) noexcept nogil:
    """Big-endian (network order) 64-bit store."""
    put_int32(p, <int32_t>(<uint64_t>value >> 32))
    put_int32(p + 4, <int32_t>(<uint64_t>value & 0xFFFFFFFFu))


cdef class ByteBufferOutputStream:
    cdef:
        # The object whose memory we write into: a bytearray we allocated (int capacity, or after
        # growth), or the writable buffer we were given (e.g. a pooled bytearray).  After growth
        # this is the NEW bytearray; the original is no longer referenced by the stream.
        object _buffer
        # Our own export of _buffer (PyObject_GetBuffer, PyBUF_WRITABLE).  Holding it pins the
        # memory: a bytearray cannot be resized while exported, so _data never dangles.
        Py_buffer _pybuf
        # Whether _pybuf holds an export that __dealloc__ / growth must release.
        bint _has_pybuf
        # _pybuf.buf: start of the writable memory.
        unsigned char* _data
        # Bytes written so far; the next write goes to _data[_position].  0 <= _position <= _limit.
        Py_ssize_t _position
        # Capacity of the current buffer (len of _buffer).
        Py_ssize_t _limit
        # Capacity we started with (Java: initialCapacity); the batch returns the buffer to the
        # pool with this size, so the pool's accounting is right even after growth.
        Py_ssize_t _initial_capacity
        # Views of the stream handed out by getbuffer() that are still alive.  While > 0 every
        # write, growth and position change raises BufferError (py-pgproto WriteBuffer rule), so
        # no view ever sees memory change under it or freed.
        Py_ssize_t _exports

    # Grow so that n more bytes fit: Java's expandBuffer, new size max(limit * 1.1, position + n).
    cdef int _expand(self, Py_ssize_t n) except -1
    # Raise BufferError: a view from getbuffer() is alive.
    cdef int _refuse_exported(self) except -1
    # Any bytes-like object (buffer protocol); bytes take a fast path without PyObject_GetBuffer.
    cdef int write_object(self, object data) except -1

    cdef inline int ensure_remaining_c(self, Py_ssize_t n) except -1:
        """Make room for ``n`` more bytes (n >= 0), growing by Java's rule if needed."""
        if self._exports:
            return self._refuse_exported()
        if n > self._limit - self._position:
            return self._expand(n)
        return 0

    cdef inline unsigned char* reserve_c(self, Py_ssize_t n) except NULL:
        """Room for ``n`` bytes; returns where they go.  The caller writes, then advance_c(n)."""
        self.ensure_remaining_c(n)
        return self._data + self._position

    cdef inline void advance_c(self, Py_ssize_t n) noexcept:
        """Commit ``n`` bytes written into memory returned by reserve_c (n <= what was reserved)."""
        self._position += n

    cdef inline int write_raw(self, const unsigned char* p, Py_ssize_t n) except -1:
        """Copy ``n`` bytes from ``p``."""
        self.ensure_remaining_c(n)
        if n > 0:
            memcpy(self._data + self._position, p, <size_t>n)
            self._position += n
        return 0

    cdef inline int write_int8_c(self, int8_t v) except -1:
        self.ensure_remaining_c(1)
        self._data[self._position] = <unsigned char>v
        self._position += 1
        return 0

    cdef inline int write_int16_c(self, int16_t v) except -1:
        self.ensure_remaining_c(2)
        put_int16(self._data + self._position, v)
        self._position += 2
        return 0

    cdef inline int write_int32_c(self, int32_t v) except -1:
        self.ensure_remaining_c(4)
        put_int32(self._data + self._position, v)
        self._position += 4
        return 0

    cdef inline int write_uint32_c(self, uint32_t v) except -1:
        self.ensure_remaining_c(4)
        put_int32(self._data + self._position, <int32_t>v)
        self._position += 4
        return 0

    cdef inline int write_int64_c(self, int64_t v) except -1:
        self.ensure_remaining_c(8)
        put_int64(self._data + self._position, v)
        self._position += 8
        return 0

    cdef inline int write_varint_c(self, int32_t v) except -1:
        # Exact size first: reserving 5 could grow a stream that had room (Java writes bytewise).
        self.ensure_remaining_c(varint_size(v))
        self._position += put_varint(self._data + self._position, v)
        return 0

    cdef inline int write_varlong_c(self, int64_t v) except -1:
        self.ensure_remaining_c(varlong_size(v))
        self._position += put_varlong(self._data + self._position, v)
        return 0
