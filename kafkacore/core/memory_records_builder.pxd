# cython: language_level=3
"""Declarations of MemoryRecordsBuilder (memory_records_builder.pyx).

batch.pyx cimports MemoryRecordsBuilder and calls its cpdef methods; their signatures are stable.

Concurrency: a builder belongs to one ProducerBatch.  Appends happen under the accumulator's
per-partition deque lock; close/set_producer_state/build happen on the Sender thread after the
batch left the deque (drain), so no two threads touch a builder at once.  The builder takes no
lock itself.
"""

from libc.stdint cimport int16_t, int32_t, int64_t

from kafkacore.core.bytestream cimport ByteBufferOutputStream


cdef class MemoryRecordsBuilder:
    cdef:
        # Where the batch is written: 61-byte header (filled in at close) then the records.
        ByteBufferOutputStream _stream
        # Codec: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd (the attribute bits of the header).
        int _compression_type
        # Codec level (int), or None for the codec's default.
        object _compression_level
        # Stream position where the batch starts (0 unless the buffer was wrapped mid-way).
        Py_ssize_t _batch_start
        # Offset of the first record; the broker overwrites it, the producer writes 0.
        int64_t _base_offset
        # Written as is; -1 (Java's NO_PARTITION_LEADER_EPOCH) from a producer, the broker sets it.
        int32_t _partition_leader_epoch
        # Soft size limit (Java writeLimit, default the buffer's capacity): once the estimated
        # size reaches it, is_full() is true.  An empty batch still takes one record.
        Py_ssize_t _write_limit
        # Idempotence/transactions, written into the header at close (-1: not idempotent).
        int64_t _producer_id         # from InitProducerId
        int16_t _producer_epoch      # bumped by the broker on fencing / epoch bump
        int32_t _base_sequence       # sequence number of the first record of the batch
        bint _is_transactional       # attribute bit 4
        # Java appendStream == CLOSED_STREAM: no more appends (full, drained, or aborted).
        bint _appends_closed
        # Java builtRecords != null: header and CRC written, build() returns the bytes.
        bint _closed
        # abort() was called: build() raises.
        bint _aborted
        # Records appended; the next record's offset delta.
        int32_t _num_records
        # Timestamp of the first record (the batch's baseTimestamp); valid when _num_records > 0.
        int64_t _base_timestamp
        # Largest timestamp appended (the batch's maxTimestamp).
        int64_t _max_timestamp
        # Bytes of records written, uncompressed (Java uncompressedRecordsSizeInBytes).
        Py_ssize_t _uncompressed_records_size
        # Size of the records section after compression (set at close).
        Py_ssize_t _compressed_records_size
        # Estimated compressed/uncompressed ratio used by has_room_for/estimated_size_in_bytes
        # for compressed batches; 1.0 (no shrink, conservative) unless the batch sets it.
        double _estimated_compression_ratio

    cpdef int append(self, int64_t timestamp_ms, object key, object value,
                     object headers=*) except -1
    cpdef bint has_room_for(self, int64_t timestamp_ms, object key, object value,
                            object headers=*) except -1
    cpdef bint is_full(self) except -1
    cpdef Py_ssize_t estimated_size_in_bytes(self) except -1
    cpdef close_for_record_appends(self)
    cpdef close(self)
    cpdef abort(self)
    cpdef object build(self)
    cpdef set_producer_state(self, int64_t producer_id, int producer_epoch, int base_sequence,
                             bint is_transactional)
    cpdef reopen_and_rewrite_producer_state(self, int64_t producer_id, int producer_epoch,
                                            int base_sequence, bint is_transactional)
    cpdef set_estimated_compression_ratio(self, double ratio)

    # C-level append for the columnar path (pointers + lengths, -1 for null); -1 when it does
    # not fit (has_room_for and append in one step).
    cdef int append_raw(self, int64_t timestamp_ms, const unsigned char* kp, Py_ssize_t klen,
                        const unsigned char* vp, Py_ssize_t vlen, object headers) except -2
    # C-level: write one record (no checks on the builder state; append() does those).
    cdef int _append_record(self, int64_t timestamp_ms, object key, object value,
                            object headers) except -1
    # C-level: ValueError for an impossible producer state (epoch range, transactional without id).
    cdef int _check_producer_state(self, int64_t producer_id, int producer_epoch,
                                   int base_sequence, bint is_transactional) except -1
    # C-level: whether one more record of these sizes fits under write_limit (non-empty batch).
    cdef bint _fits(self, int64_t timestamp_ms, Py_ssize_t klen, Py_ssize_t vlen,
                    Py_ssize_t hcount, Py_ssize_t hsize) noexcept
    # C-level: the size estimate of Java estimatedBytesWritten().
    cdef Py_ssize_t _estimated_bytes_written(self) noexcept
    # C-level: fill in the 61-byte header and the CRC for the current producer state.
    cdef int _write_header(self) except -1
