# cython: language_level=3
"""CRC-32C (Castagnoli), the checksum of a record batch (Kafka's ``Crc32C``).

The C in crc32c.c picks, once, the CPU's SSE4.2 ``crc32`` instruction or a slice-by-8 table;
:func:`crc32c` is the Python face, ``crc_of`` the C one the builder, the reader and the broker's
checks call.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_CheckBuffer, PyObject_GetBuffer
from libc.stdint cimport uint32_t

from kafkacore.core.record_format cimport CRC_NOGIL_THRESHOLD


cdef extern from "crc32c.h" nogil:
    uint32_t kc_crc32c(uint32_t crc, const void* buf, size_t len)
    uint32_t kc_crc32c_sw(uint32_t crc, const void* buf, size_t len)
    uint32_t kc_crc32c_hw(uint32_t crc, const void* buf, size_t len)
    int kc_crc32c_hw_available()


cdef uint32_t crc_of(const unsigned char* p, Py_ssize_t n, uint32_t value) noexcept:
    """CRC-32C of p[0:n] continuing from ``value``; without the GIL for large inputs."""
    cdef uint32_t crc
    if n >= CRC_NOGIL_THRESHOLD:
        with nogil:
            crc = kc_crc32c(value, p, <size_t>n)
        return crc
    return kc_crc32c(value, p, <size_t>n)


def crc32c(data, value=0):
    """CRC-32C (Castagnoli) of a bytes-like object, continuing from ``value`` (like zlib.crc32).

    ``crc32c(b, crc32c(a)) == crc32c(a + b)``.  Uses the CPU's SSE4.2 ``crc32`` instruction when
    present, a slice-by-8 table otherwise; inputs of 64 KiB and more are checksummed without the
    GIL.
    """
    cdef Py_buffer view
    cdef uint32_t start
    if not isinstance(value, int):
        raise TypeError(f"crc32c(): value must be an int, got {type(value).__name__}")
    if not (0 <= value <= 0xFFFFFFFF):
        raise ValueError(f"crc32c(): value {value} is not a 32-bit unsigned int")
    start = <uint32_t>value
    if not PyObject_CheckBuffer(data):
        raise TypeError(f"crc32c() needs a bytes-like object, got {type(data).__name__}")
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        return crc_of(<const unsigned char*>view.buf, view.len, start)
    finally:
        PyBuffer_Release(&view)


def _crc32c_impl(data, implementation, value=0):
    """Test hook: CRC-32C with a chosen implementation, ``"sw"`` (tables) or ``"hw"`` (SSE4.2)."""
    cdef Py_buffer view
    cdef uint32_t crc
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        if implementation == "sw":
            crc = kc_crc32c_sw(<uint32_t>value, view.buf, <size_t>view.len)
        elif implementation == "hw":
            crc = kc_crc32c_hw(<uint32_t>value, view.buf, <size_t>view.len)
        else:
            raise ValueError(f"unknown implementation {implementation!r}")
        return crc
    finally:
        PyBuffer_Release(&view)


def crc32c_uses_hardware():
    """True when :func:`crc32c` uses the SSE4.2 instruction, False when it uses the tables."""
    return bool(kc_crc32c_hw_available())
