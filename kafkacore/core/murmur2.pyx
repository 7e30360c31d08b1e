# cython: language_level=3
"""Kafka's murmur2 hash: where a keyed record goes.

The Java client sends a record with a key to partition
``toPositive(murmur2(keyBytes)) % numPartitions`` (``BuiltInPartitioner.partitionForKey``).  Every
Kafka client that wants the same key to reach the same partition as the Java client does exactly
this arithmetic, so this file is a contract, not a choice: the tests compare it with kafka-python's
independent implementation on thousands of keys.

Java computes in signed 32-bit ``int`` with wrap-around and unsigned shifts (``>>>``).  C's unsigned
32-bit arithmetic wraps the same way and its ``>>`` on unsigned values is Java's ``>>>``, so we work
in ``uint32_t`` and reinterpret the result as a signed ``int32_t`` at the end, as Java returns it.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport int32_t, uint32_t


cdef int32_t murmur2_raw(const unsigned char *data, Py_ssize_t length) noexcept nogil:
    cdef uint32_t m = MURMUR2_M
    # Java's length is an int; the seed is xored with its 32-bit value.
    cdef uint32_t h = (<uint32_t>MURMUR2_SEED) ^ <uint32_t>length
    cdef uint32_t k
    cdef Py_ssize_t i = 0
    cdef Py_ssize_t end4 = length & ~(<Py_ssize_t>3)
    cdef Py_ssize_t tail = length & 3
    while i < end4:
        # Little-endian 4-byte block, assembled byte by byte so alignment never matters.
        k = (<uint32_t>data[i]
             | (<uint32_t>data[i + 1] << 8)
             | (<uint32_t>data[i + 2] << 16)
             | (<uint32_t>data[i + 3] << 24))
        k *= m
        k ^= k >> MURMUR2_R
        k *= m
        h *= m
        h ^= k
        i += 4
    # The last 1-3 bytes; Java's switch falls through from case 3 to case 1.
    if tail == 3:
        h ^= <uint32_t>data[end4 + 2] << 16
    if tail >= 2:
        h ^= <uint32_t>data[end4 + 1] << 8
    if tail >= 1:
        h ^= <uint32_t>data[end4]
        h *= m
    h ^= h >> 13
    h *= m
    h ^= h >> 15
    return <int32_t>h


cdef enum:
    # Keys at least this long are hashed without the GIL.  Keys are usually tens of bytes, where
    # releasing and retaking the GIL would cost more than the hash; a 64 KiB key takes ~30 us.
    NOGIL_THRESHOLD = 65536


cdef inline int32_t _murmur2_span(const unsigned char *data, Py_ssize_t length) noexcept:
    cdef int32_t h
    if length < NOGIL_THRESHOLD:
        return murmur2_raw(data, length)
    with nogil:
        h = murmur2_raw(data, length)
    return h


cdef inline int32_t _murmur2_object(object data) except? -1:
    """murmur2 of a bytes-like object: bytes directly, anything else through the buffer protocol."""
    cdef Py_buffer view
    cdef int32_t h
    if type(data) is bytes:
        # The common case (serializers return bytes): no buffer export, no copy.  `data` keeps
        # the bytes alive while the GIL is released (bytes are immutable).
        return _murmur2_span(<const unsigned char *>PyBytes_AS_STRING(data),
                             PyBytes_GET_SIZE(data))
    if isinstance(data, str):
        raise TypeError("murmur2 hashes bytes, not str: encode the key first (e.g. key.encode())")
    if data is None:
        raise TypeError("murmur2 of None: a record without a key has no hash (use the sticky path)")
    # PyBUF_SIMPLE asks for contiguous bytes; a non-contiguous view raises BufferError here.  The
    # exported view pins the memory (a bytearray cannot resize) until we release it.  Another
    # thread may still write into a mutable buffer meanwhile: then the hash is of some mix of old
    # and new bytes, as it would be for any reader; nothing is read out of bounds.
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        h = _murmur2_span(<const unsigned char *>view.buf, view.len)
    finally:
        PyBuffer_Release(&view)
    return h


def murmur2(data) -> int:
    """Kafka's ``Utils.murmur2`` of ``data`` (bytes-like), as a signed 32-bit int like Java's."""
    return _murmur2_object(data)


def to_positive(n) -> int:
    """Kafka's ``Utils.toPositive``: ``n & 0x7fffffff`` (drops the sign bit, it is not ``abs``)."""
    return n & 0x7fffffff


cpdef int partition_for_key(object key_bytes, int num_partitions) except -1:
    """The partition the Java client picks for a record with this serialized key.

    ``toPositive(murmur2(key_bytes)) % num_partitions`` (``BuiltInPartitioner.partitionForKey``).
    """
    cdef int32_t h
    if num_partitions < 1:
        raise ValueError(f"num_partitions must be >= 1, got {num_partitions}")
    h = _murmur2_object(key_bytes)
    return (<uint32_t>h & 0x7fffffffu) % <uint32_t>num_partitions
