# cython: language_level=3
"""CRC-32C for the compiled modules (crc.pyx)."""

from libc.stdint cimport uint32_t


# CRC-32C of p[0:n] continuing from ``value``; without the GIL for large inputs.
cdef uint32_t crc_of(const unsigned char* p, Py_ssize_t n, uint32_t value) noexcept
