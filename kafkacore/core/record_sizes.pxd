# cython: language_level=3
"""Record sizes for the compiled modules (record_sizes.pyx)."""

from libc.stdint cimport int32_t

from kafkacore.core.bytestream cimport varint_size


cdef inline Py_ssize_t bytes_field_size(Py_ssize_t length) noexcept:
    """Wire size of a nullable bytes field: its varint length (-1 for null) plus its bytes."""
    if length < 0:
        return 1  # varint(-1) is one byte
    return varint_size(<int32_t>length) + length


# Byte length of a bytes-like ``obj``, -1 for None; TypeError naming ``what`` otherwise.
cdef Py_ssize_t length_of(object obj, str what) except -2
# Headers as an immutable tuple of (str, bytes | None) pairs; their wire size in ``size[0]``.
cdef tuple normalize_headers_sized(object headers, Py_ssize_t* size)
# Upper bound of the size of a batch holding just this record (Java
# AbstractRecords.estimateSizeInBytesUpperBound); the producer checks it at send().
cpdef Py_ssize_t estimate_size_upper_bound(object key, object value, object headers=*) except -1
# The same from sizes (-1 for null), with the headers' encoded size (1 for no headers).
cdef Py_ssize_t estimate_size_upper_bound_raw(Py_ssize_t klen, Py_ssize_t vlen,
                                              Py_ssize_t headers_size) noexcept
