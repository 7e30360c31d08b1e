# cython: language_level=3
"""Declarations of Kafka's murmur2 hash, for any module that wants to ``cimport`` it.

The hash is a pure function of its input: it keeps no state, so there are no fields here and no
lock to name.
"""

from libc.stdint cimport int32_t


# Kafka's constants (org.apache.kafka.common.utils.Utils.murmur2).  They are part of the wire
# contract: change one and keyed records land in other partitions than the Java client puts them.
cdef enum:
    # The initial hash, xored with the length: 0x9747b28c, written as the signed int it is in
    # Java, because a C enum constant must fit an int.  (<uint32_t> turns it back.)
    MURMUR2_SEED = -1756908916
    MURMUR2_M = 0x5bd1e995      # the multiplier, "mixing constant generated offline"
    MURMUR2_R = 24              # the shift of each 4-byte block's mix


cdef int32_t murmur2_raw(const unsigned char *data, Py_ssize_t length) noexcept nogil

# Where the Java client puts a record with this key: toPositive(murmur2(key)) % num_partitions.
cpdef int partition_for_key(object key_bytes, int num_partitions) except -1
