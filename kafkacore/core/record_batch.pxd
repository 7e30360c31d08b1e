# cython: language_level=3
"""Declarations of the reader's results (record_batch.pyx)."""

from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t


# Reader results: built once by iter_batches/iter_records and never changed after, so any thread
# may read them.
cdef class Record:
    cdef readonly int64_t offset            # base_offset + offset delta
    cdef readonly int64_t timestamp         # base_timestamp + delta, or max_timestamp (LogAppend)
    cdef readonly int timestamp_type        # 0 CreateTime, 1 LogAppendTime (from the batch)
    cdef readonly object key                # bytes or None
    cdef readonly object value              # bytes or None
    cdef readonly list headers              # [(str, bytes | None), ...]
    cdef readonly int attributes            # the record's own attribute byte (unused, 0)


cdef class RecordBatch:
    cdef readonly int64_t base_offset               # offset of the first record
    cdef readonly int32_t batch_length              # bytes after the batchLength field
    cdef readonly int32_t partition_leader_epoch    # set by the broker (-1 from a producer)
    cdef readonly int magic                         # always 2 here (others are refused)
    cdef readonly uint32_t crc                      # stored CRC-32C (checked on decode)
    cdef readonly int attributes                    # codec, timestamp type, txn, control bits
    cdef readonly int32_t last_offset_delta         # offset delta of the last record
    cdef readonly int64_t base_timestamp            # first record's timestamp
    cdef readonly int64_t max_timestamp             # largest timestamp (or the LogAppendTime)
    cdef readonly int64_t producer_id               # -1 without idempotence
    cdef readonly int producer_epoch                # -1 without idempotence
    cdef readonly int32_t base_sequence             # -1 without idempotence
    cdef readonly int32_t record_count              # records declared in the header
    cdef readonly list records                      # [Record, ...], decoded and checked


# check_batches' checks on one batch, for the broker's log validator (log_validator.pyx): see
# record_batch.pyx.
cdef int check_batch(const unsigned char* p, Py_ssize_t size, Py_ssize_t where,
                     Py_ssize_t* budget, int64_t* last_delta, int64_t* max_ts_delta) except -1


# A zigzag varint of at most ``max_bytes`` bytes (5: int32, 10: int64) at p[pos:end], without
# the GIL: False wherever the reader's _read_varint would raise (truncated, too long, out of
# range).  Shared by the log validator's walk and the Arrow decoder (arrow_records.pyx).
cdef inline bint try_varint(const unsigned char* p, Py_ssize_t end, Py_ssize_t* pos,
                            int max_bytes, int64_t* out) noexcept nogil:
    cdef uint64_t raw = 0, b = 0
    cdef int shift = 0, i = 0
    cdef Py_ssize_t q = pos[0]
    while True:
        if q >= end:
            return False
        b = p[q]
        q += 1
        raw |= (b & 0x7F) << shift
        i += 1
        if not (b & 0x80):
            break
        if i == max_bytes:
            return False
        shift += 7
    if max_bytes == 5 and (raw >> 32) != 0:
        return False
    if max_bytes == 10 and i == 10 and b > 1:
        return False
    pos[0] = q
    out[0] = <int64_t>((raw >> 1) ^ (<uint64_t>0 - (raw & 1)))
    return True
