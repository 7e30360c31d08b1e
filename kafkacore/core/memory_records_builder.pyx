# cython: language_level=3
"""``MemoryRecordsBuilder`` writes one record batch (magic v2), Java's
``org.apache.kafka.common.record.MemoryRecordsBuilder``.

It reserves the 61-byte batch header, appends records uncompressed through a
:class:`~kafkacore.core.ByteBufferOutputStream`, and at ``close()`` compresses the records
section (if a codec is set), fills in the header and computes the CRC-32C.  The format is in
``record_format.pxd``; reading batches back is ``record_batch.pyx``.
"""

from cpython.buffer cimport (
    PyBUF_SIMPLE,
    PyBuffer_Release,
    PyObject_CheckBuffer,
    PyObject_GetBuffer,
)
from cpython.bytes cimport (
    PyBytes_AS_STRING,
    PyBytes_CheckExact,
    PyBytes_GET_SIZE,
)
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from libc.stdint cimport INT32_MAX
from libc.string cimport memcpy

from kafkacore.core.bytestream cimport (
    ByteBufferOutputStream,
    put_int16,
    put_int32,
    put_int64,
    put_varint,
    put_varlong,
    varint_size,
    varlong_size,
)
from kafkacore.core.compression cimport check_level, codec_of, compress
from kafkacore.core.crc cimport crc_of
from kafkacore.core.record_format cimport *  # noqa: F403 - the format's constants
from kafkacore.core.record_sizes cimport bytes_field_size, length_of, normalize_headers_sized

from kafkacore.core.compression import CODEC_NAMES
from kafkacore.errors import IllegalStateError


cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object unicode, Py_ssize_t* size) except NULL


# Java: MemoryRecordsBuilder.COMPRESSION_RATE_ESTIMATION_FACTOR (float 1.05f); we multiply in
# float precision like Java, so the "is the batch full" decision matches the Java client.
cdef float COMPRESSION_RATE_ESTIMATION_FACTOR = 1.05


cdef inline int _write_record(MemoryRecordsBuilder self, int64_t timestamp_ms,
                              const unsigned char* kp, Py_ssize_t klen,
                              const unsigned char* vp, Py_ssize_t vlen,
                              tuple hs, Py_ssize_t hcount, Py_ssize_t hsize) except -1:
    """Write one record (key/value as pointer + length, -1 for null; headers normalized and
    sized) and count it (Java ``appendDefaultRecord`` + ``recordWritten``); returns its offset
    delta."""
    cdef int32_t offset_delta = self._num_records
    cdef int64_t timestamp_delta
    cdef Py_ssize_t body, total, n
    cdef unsigned char* p
    if klen > INT32_MAX or vlen > INT32_MAX or hcount > INT32_MAX:
        raise ValueError("key, value or headers larger than 2 GiB")
    if offset_delta == 0:
        self._base_timestamp = timestamp_ms
    timestamp_delta = timestamp_ms - self._base_timestamp
    body = (1 + varlong_size(timestamp_delta) + varint_size(offset_delta)
            + bytes_field_size(klen) + bytes_field_size(vlen)
            + varint_size(<int32_t>hcount) + hsize)
    if body > INT32_MAX - 5:
        raise ValueError(f"record of {body} bytes is larger than 2 GiB")
    total = varint_size(<int32_t>body) + body
    if total > INT32_MAX - (self._stream._position - self._batch_start):
        raise ValueError("record batch would exceed 2 GiB")

    # One reservation for the whole record, then plain stores: no Python calls.
    p = self._stream.reserve_c(total)
    n = put_varint(p, <int32_t>body)
    p[n] = 0  # record attributes, unused
    n += 1
    n += put_varlong(p + n, timestamp_delta)
    n += put_varint(p + n, offset_delta)
    if klen < 0:
        n += put_varint(p + n, -1)
    else:
        n += put_varint(p + n, <int32_t>klen)
        if klen:
            memcpy(p + n, kp, <size_t>klen)
            n += klen
    if vlen < 0:
        n += put_varint(p + n, -1)
    else:
        n += put_varint(p + n, <int32_t>vlen)
        if vlen:
            memcpy(p + n, vp, <size_t>vlen)
            n += vlen
    n += put_varint(p + n, <int32_t>hcount)
    if hcount:
        n += _put_headers(p + n, hs)
    self._stream.advance_c(n)

    # Java recordWritten()
    self._num_records += 1
    self._uncompressed_records_size += total
    if timestamp_ms > self._max_timestamp:
        self._max_timestamp = timestamp_ms
    return offset_delta


# -- the builder ----------------------------------------------------------------------------

cdef class MemoryRecordsBuilder:
    """Writes one record batch (magic v2) into a growable buffer: Java's ``MemoryRecordsBuilder``.

    ``MemoryRecordsBuilder(buffer_or_capacity, compression="none", base_offset=0,
    write_limit=None, producer_id=-1, producer_epoch=-1, base_sequence=-1,
    is_transactional=False, compression_level=None, partition_leader_epoch=-1)``

    ``buffer_or_capacity``: an ``int`` (a bytearray of that size is allocated), a writable buffer
    (e.g. the bytearray BufferPool.allocate returned; written from its start, without a copy), or
    a :class:`~kafkacore.core.ByteBufferOutputStream` (written from its position).

    ``write_limit`` (default: the buffer's capacity) is the soft size of the batch: once the
    estimated size reaches it, :meth:`is_full` is true and :meth:`has_room_for` refuses records.
    The first record is always accepted, and the stream grows (1.1x) to hold it if it is bigger.

    For compressed batches the estimate uses the uncompressed size times
    ``estimated_compression_ratio`` (default 1.0: no shrink assumed, the conservative choice)
    times 1.05, exactly like Java; the ratio can be set per batch with
    :meth:`set_estimated_compression_ratio` (Java's CompressionRatioEstimator keeps one per topic).
    """

    def __cinit__(self, buffer_or_capacity, compression="none", int64_t base_offset=0,
                  write_limit=None, int64_t producer_id=-1, int producer_epoch=-1,
                  int base_sequence=-1, bint is_transactional=False, compression_level=None,
                  int partition_leader_epoch=-1):
        if isinstance(buffer_or_capacity, ByteBufferOutputStream):
            self._stream = buffer_or_capacity
        else:
            self._stream = ByteBufferOutputStream(buffer_or_capacity)
        self._compression_type = codec_of(compression)
        self._compression_level = check_level(self._compression_type, compression_level)
        self._base_offset = base_offset
        self._partition_leader_epoch = partition_leader_epoch
        if write_limit is None:
            self._write_limit = self._stream._limit
        else:
            if isinstance(write_limit, bool) or not isinstance(write_limit, int):
                raise TypeError(f"write_limit must be an int or None, got "
                                f"{type(write_limit).__name__}")
            if write_limit < 0:
                raise ValueError(f"write_limit must be >= 0, got {write_limit}")
            self._write_limit = write_limit
        self._check_producer_state(producer_id, producer_epoch, base_sequence, is_transactional)
        self._producer_id = producer_id
        self._producer_epoch = <int16_t>producer_epoch
        self._base_sequence = base_sequence
        self._is_transactional = is_transactional
        self._appends_closed = False
        self._closed = False
        self._aborted = False
        self._num_records = 0
        self._base_timestamp = NO_TIMESTAMP
        self._max_timestamp = NO_TIMESTAMP
        self._uncompressed_records_size = 0
        self._compressed_records_size = 0
        self._estimated_compression_ratio = 1.0
        # Java: bufferStream.position(initialPosition + batchHeaderSizeInBytes) -- skip the header,
        # growing if the buffer is smaller than 61 bytes.
        self._batch_start = self._stream._position
        self._stream.ensure_remaining_c(RECORD_BATCH_OVERHEAD)
        self._stream._position += RECORD_BATCH_OVERHEAD

    cdef int _check_producer_state(self, int64_t producer_id, int producer_epoch,
                                   int base_sequence, bint is_transactional) except -1:
        if not (-1 <= producer_epoch <= 0x7FFF):
            raise ValueError(f"producer_epoch {producer_epoch} out of range -1..32767")
        if is_transactional and producer_id == -1:
            raise ValueError("a transactional batch needs a producer_id (got -1)")
        return 0

    # -- appending ----------------------------------------------------------------------------

    cpdef int append(self, int64_t timestamp_ms, object key, object value,
                     object headers=None) except -1:
        """Append a record; returns its offset delta (0 for the first record of the batch).

        ``key`` and ``value``: bytes-like or None.  ``headers``: a sequence of
        ``(str, bytes | None)`` pairs, or None.  ``timestamp_ms``: milliseconds since the epoch
        (or -1, no timestamp).  Raises IllegalStateError once the builder is closed for appends.
        """
        if self._appends_closed:
            raise IllegalStateError("Tried to append a record, but MemoryRecordsBuilder is closed"
                                    " for record appends")
        if timestamp_ms < 0 and timestamp_ms != NO_TIMESTAMP:
            raise ValueError(f"Invalid negative timestamp {timestamp_ms}")
        if self._num_records == INT32_MAX:
            raise IllegalStateError("record batch already holds 2**31 - 1 records")
        # The common case, bytes (or None) and no headers: straight to the writer, with no buffer
        # exports to set up and release.
        if (headers is None and (key is None or PyBytes_CheckExact(key))
                and (value is None or PyBytes_CheckExact(value))):
            return _write_record(
                self, timestamp_ms,
                NULL if key is None else <const unsigned char*>PyBytes_AS_STRING(key),
                -1 if key is None else PyBytes_GET_SIZE(key),
                NULL if value is None else <const unsigned char*>PyBytes_AS_STRING(value),
                -1 if value is None else PyBytes_GET_SIZE(value),
                None, 0, 0)
        return self._append_record(timestamp_ms, key, value, headers)

    cdef int _append_record(self, int64_t timestamp_ms, object key, object value,
                            object headers) except -1:
        cdef Py_buffer kview, vview
        cdef bint kheld = False, vheld = False
        cdef const unsigned char* kp = NULL
        cdef const unsigned char* vp = NULL
        cdef Py_ssize_t klen = -1, vlen = -1, hcount = 0, hsize = 0
        cdef tuple hs = None

        # Bytes take the fast path (a pointer, no buffer export); other bytes-likes are exported
        # for the duration of the append.
        if key is None:
            pass
        elif PyBytes_CheckExact(key):
            kp = <const unsigned char*>PyBytes_AS_STRING(key)
            klen = PyBytes_GET_SIZE(key)
        elif PyObject_CheckBuffer(key):
            try:
                PyObject_GetBuffer(key, &kview, PyBUF_SIMPLE)
            except BufferError as exc:
                raise TypeError(f"key must be a contiguous bytes-like object: {exc}") from None
            kheld = True
            kp = <const unsigned char*>kview.buf
            klen = kview.len
        else:
            raise TypeError(f"key must be bytes-like or None, got {type(key).__name__}")
        try:
            if value is None:
                pass
            elif PyBytes_CheckExact(value):
                vp = <const unsigned char*>PyBytes_AS_STRING(value)
                vlen = PyBytes_GET_SIZE(value)
            elif PyObject_CheckBuffer(value):
                try:
                    PyObject_GetBuffer(value, &vview, PyBUF_SIMPLE)
                except BufferError as exc:
                    raise TypeError(f"value must be a contiguous bytes-like object: {exc}"
                                    ) from None
                vheld = True
                vp = <const unsigned char*>vview.buf
                vlen = vview.len
            else:
                raise TypeError(f"value must be bytes-like or None, got {type(value).__name__}")
            if headers is not None:
                hs = normalize_headers_sized(headers, &hsize)
                hcount = PyTuple_GET_SIZE(hs)
            return _write_record(self, timestamp_ms, kp, klen, vp, vlen, hs, hcount, hsize)
        finally:
            if kheld:
                PyBuffer_Release(&kview)
            if vheld:
                PyBuffer_Release(&vview)

    cdef int append_raw(self, int64_t timestamp_ms, const unsigned char* kp, Py_ssize_t klen,
                        const unsigned char* vp, Py_ssize_t vlen, object headers) except -2:
        """The columnar path's append: key and value as pointer + length (-1: null).

        Returns the offset delta, or -1 without writing anything when the record does not fit or
        the builder is closed for appends (an empty open batch always takes it).  The caller keeps
        the key's and value's memory alive.
        """
        cdef Py_ssize_t hcount = 0, hsize = 0
        cdef tuple hs = None
        if self._appends_closed:
            # Another thread found it full and is starting the next batch: not an error, the
            # caller goes to the new batch (as try_append does when has_room_for says no).
            return -1
        if timestamp_ms < 0 and timestamp_ms != NO_TIMESTAMP:
            raise ValueError(f"Invalid negative timestamp {timestamp_ms}")
        if self._num_records == INT32_MAX:
            return -1
        if headers is not None:
            hs = normalize_headers_sized(headers, &hsize)
            hcount = PyTuple_GET_SIZE(hs)
        # (No is_full() here: closed returned above, and a full batch has no room to fit.)
        if self._num_records > 0 and not self._fits(timestamp_ms, klen, vlen, hcount, hsize):
            return -1
        return _write_record(self, timestamp_ms, kp, klen, vp, vlen, hs, hcount, hsize)

    cpdef bint has_room_for(self, int64_t timestamp_ms, object key, object value,
                            object headers=None) except -1:
        """Whether a record fits under ``write_limit`` (Java ``hasRoomFor``).

        False once full or closed; True for an empty batch (the first record always fits, the
        stream grows for it).  Otherwise: estimated bytes written + this record's size must not
        exceed ``write_limit``.  For compressed batches the record counts uncompressed.
        """
        cdef Py_ssize_t hcount = 0, hsize = 0
        cdef tuple hs
        # Sizes first: they also check the argument types, so bad input fails here too.
        cdef Py_ssize_t klen = length_of(key, "key")
        cdef Py_ssize_t vlen = length_of(value, "value")
        if headers is not None:
            hs = normalize_headers_sized(headers, &hsize)
            hcount = PyTuple_GET_SIZE(hs)
        if self.is_full():
            return False
        if self._num_records == 0:
            return True
        return self._fits(timestamp_ms, klen, vlen, hcount, hsize)

    cdef bint _fits(self, int64_t timestamp_ms, Py_ssize_t klen, Py_ssize_t vlen,
                    Py_ssize_t hcount, Py_ssize_t hsize) noexcept:
        """Whether one more record of these sizes stays within ``write_limit`` (the size part of
        Java ``hasRoomFor``, for a batch that already holds a record)."""
        cdef Py_ssize_t size = (
            1 + varlong_size(timestamp_ms - self._base_timestamp)
            + varint_size(self._num_records) + bytes_field_size(klen)
            + bytes_field_size(vlen) + varint_size(<int32_t>hcount) + hsize)
        if size > INT32_MAX - 5:
            return False
        size += varint_size(<int32_t>size)
        return self._write_limit >= self._estimated_bytes_written() + size

    cdef Py_ssize_t _estimated_bytes_written(self) noexcept:
        # Java estimatedBytesWritten(): header + records, the records scaled by the estimated
        # ratio and the 1.05 safety factor when compressed (float math, as in Java).
        if self._compression_type == CODEC_NONE:
            return RECORD_BATCH_OVERHEAD + self._uncompressed_records_size
        return RECORD_BATCH_OVERHEAD + <Py_ssize_t>(
            <float>self._uncompressed_records_size * <float>self._estimated_compression_ratio
            * COMPRESSION_RATE_ESTIMATION_FACTOR)

    cpdef bint is_full(self) except -1:
        """True once closed for appends, or (with at least one record) when the estimated size
        reached ``write_limit`` (Java ``isFull``)."""
        return self._appends_closed or (
            self._num_records > 0 and self._write_limit <= self._estimated_bytes_written())

    cpdef Py_ssize_t estimated_size_in_bytes(self) except -1:
        """The batch's size: exact once closed, else the estimate :meth:`is_full` uses."""
        if self._closed:
            return 0 if self._num_records == 0 else self._stream._position - self._batch_start
        return self._estimated_bytes_written()

    cpdef set_estimated_compression_ratio(self, double ratio):
        """Set the compressed/uncompressed ratio the size estimate assumes (Java
        ``setEstimatedCompressionRatio``; the accumulator keeps one per topic)."""
        if not (ratio > 0.0):
            raise ValueError(f"estimated compression ratio must be > 0, got {ratio}")
        self._estimated_compression_ratio = ratio

    # -- producer state -----------------------------------------------------------------------

    cpdef set_producer_state(self, int64_t producer_id, int producer_epoch, int base_sequence,
                             bint is_transactional):
        """Set the idempotence fields the header will carry (the Sender does this when it
        drains the batch).  IllegalStateError once closed."""
        if self._closed:
            raise IllegalStateError("Trying to set producer state of an already closed batch."
                                    " This indicates a bug on the client.")
        self._check_producer_state(producer_id, producer_epoch, base_sequence, is_transactional)
        self._producer_id = producer_id
        self._producer_epoch = <int16_t>producer_epoch
        self._base_sequence = base_sequence
        self._is_transactional = is_transactional

    cpdef reopen_and_rewrite_producer_state(self, int64_t producer_id, int producer_epoch,
                                            int base_sequence, bint is_transactional):
        """Change the idempotence fields of a (possibly already closed) batch and rewrite its
        header and CRC in place (Java ``reopenAndRewriteProducerState``, used when a batch is
        retried under a new producer epoch).  Views from an earlier :meth:`build` would see the
        new header, so while one is alive this raises BufferError and changes nothing: release them
        first (no request may hold the batch's bytes when they change)."""
        if self._aborted:
            raise IllegalStateError("Should not reopen a batch which is already aborted.")
        self._check_producer_state(producer_id, producer_epoch, base_sequence, is_transactional)
        if self._closed and self._num_records > 0 and self._stream._exports:
            self._stream._refuse_exported()
        self._producer_id = producer_id
        self._producer_epoch = <int16_t>producer_epoch
        self._base_sequence = base_sequence
        self._is_transactional = is_transactional
        if self._closed and self._num_records > 0:
            self._write_header()

    # -- closing ------------------------------------------------------------------------------

    cpdef close_for_record_appends(self):
        """No more appends (Java ``closeForRecordAppends``); the header is written by close()."""
        self._appends_closed = True

    cpdef abort(self):
        """Give up the batch: no appends, and build() raises (Java ``abort``)."""
        self._appends_closed = True
        self._aborted = True

    cpdef close(self):
        """Finish the batch: compress the records section (if a codec is set), write the header
        and the CRC-32C.  Idempotent.  An empty builder closes to an empty batch (zero bytes)."""
        cdef Py_ssize_t records_start, records_end
        if self._aborted:
            raise IllegalStateError("Cannot close MemoryRecordsBuilder as it has already been"
                                    " aborted")
        if self._closed:
            return
        if self._num_records and self._stream._exports:
            # A view of the stream is alive: it must not see the header (or the compressed
            # records) appear under it.  Nothing has changed yet; release the view and retry.
            self._stream._refuse_exported()
        self._appends_closed = True
        if self._num_records == 0:
            self._closed = True
            return
        if self._compression_type != CODEC_NONE:
            records_start = self._batch_start + RECORD_BATCH_OVERHEAD
            records_end = self._stream._position
            # A view of the underlying object (not of the stream, whose exports block writes);
            # it keeps that object alive even if writing the result grows the stream.
            section = memoryview(self._stream._buffer)[records_start:records_end]
            try:
                compressed = compress(self._compression_type, self._compression_level, section)
            finally:
                section.release()
            self._stream._position = records_start
            try:
                self._stream.write_object(compressed)
            except BaseException:
                # Growth failed (MemoryError) before a byte was copied: the records are intact.
                self._stream._position = records_end
                raise
            self._compressed_records_size = self._stream._position - records_start
        else:
            self._compressed_records_size = self._uncompressed_records_size
        self._write_header()
        self._closed = True

    cdef int _write_header(self) except -1:
        # Held so the memory stays alive while the CRC runs without the GIL, whatever else the
        # (single-owner) stream is asked to do meanwhile.
        cdef object _owner = self._stream._buffer
        cdef unsigned char* p = self._stream._data + self._batch_start
        cdef Py_ssize_t size = self._stream._position - self._batch_start
        cdef int attributes = self._compression_type
        if self._is_transactional:
            attributes |= TRANSACTIONAL_FLAG_MASK
        put_int64(p + BASE_OFFSET_OFFSET, self._base_offset)
        put_int32(p + LENGTH_OFFSET, <int32_t>(size - LOG_OVERHEAD))
        put_int32(p + PARTITION_LEADER_EPOCH_OFFSET, self._partition_leader_epoch)
        p[MAGIC_OFFSET] = MAGIC_V2
        put_int16(p + ATTRIBUTES_OFFSET, <int16_t>attributes)
        put_int32(p + LAST_OFFSET_DELTA_OFFSET, self._num_records - 1)
        put_int64(p + BASE_TIMESTAMP_OFFSET, self._base_timestamp)
        put_int64(p + MAX_TIMESTAMP_OFFSET, self._max_timestamp)
        put_int64(p + PRODUCER_ID_OFFSET, self._producer_id)
        put_int16(p + PRODUCER_EPOCH_OFFSET, self._producer_epoch)
        put_int32(p + BASE_SEQUENCE_OFFSET, self._base_sequence)
        put_int32(p + RECORDS_COUNT_OFFSET, self._num_records)
        # The CRC covers attributes to the end, so it is computed last.
        put_int32(p + CRC_OFFSET, <int32_t>crc_of(p + ATTRIBUTES_OFFSET,
                                                  size - ATTRIBUTES_OFFSET, 0))
        return 0

    cpdef object build(self):
        """The finished batch as a read-only, zero-copy ``memoryview`` (closes first if needed).

        While the view is alive the underlying stream refuses writes.  An empty builder gives an
        empty view.  IllegalStateError after abort().
        """
        if self._aborted:
            raise IllegalStateError("Attempting to build an aborted record batch")
        self.close()
        if self._num_records == 0:
            return memoryview(b"")
        view = self._stream.getbuffer()
        if self._batch_start:
            return view[self._batch_start:]
        return view

    # -- introspection ------------------------------------------------------------------------

    @property
    def num_records(self):
        """Records appended so far."""
        return self._num_records

    @property
    def is_closed(self):
        """True once close() (or build()) wrote the header."""
        return self._closed

    @property
    def is_aborted(self):
        """True after abort()."""
        return self._aborted

    @property
    def buffer(self):
        """The object the batch lives in (the one given, or the stream's bytearray after it grew).

        The batch hands this back to the BufferPool with :attr:`initial_capacity` as the size.
        """
        return self._stream._buffer

    @property
    def initial_capacity(self):
        """Capacity of the buffer the builder started with."""
        return self._stream._initial_capacity

    @property
    def stream(self):
        """The ByteBufferOutputStream the batch is written through."""
        return self._stream

    @property
    def write_limit(self):
        """The soft size limit of the batch."""
        return self._write_limit

    @property
    def uncompressed_bytes_written(self):
        """Header plus records as written before compression (Java ``uncompressedBytesWritten``)."""
        return RECORD_BATCH_OVERHEAD + self._uncompressed_records_size

    @property
    def compression(self):
        """The codec name (none, gzip, snappy, lz4 or zstd)."""
        return CODEC_NAMES[self._compression_type]

    @property
    def compression_level(self):
        """The codec level in use (None for none and snappy)."""
        return self._compression_level

    @property
    def compression_ratio(self):
        """Compressed / uncompressed size of the records section once closed (1.0 before, and
        for uncompressed batches); Java feeds this to the per-topic ratio estimator."""
        if not self._closed or self._uncompressed_records_size == 0:
            return 1.0
        return <float>self._compressed_records_size / <float>self._uncompressed_records_size

    @property
    def estimated_compression_ratio(self):
        """The ratio assumed by the size estimate (see set_estimated_compression_ratio)."""
        return self._estimated_compression_ratio

    @property
    def base_offset(self):
        return self._base_offset

    @property
    def base_timestamp(self):
        """Timestamp of the first record (-1 while empty)."""
        return self._base_timestamp

    @property
    def max_timestamp(self):
        """Largest timestamp appended (-1 while empty)."""
        return self._max_timestamp

    @property
    def producer_id(self):
        return self._producer_id

    @property
    def producer_epoch(self):
        return self._producer_epoch

    @property
    def base_sequence(self):
        return self._base_sequence

    @property
    def is_transactional(self):
        return self._is_transactional

    def __repr__(self):
        return (f"<MemoryRecordsBuilder records={self._num_records}"
                f" compression={CODEC_NAMES[self._compression_type]}"
                f" estimated_size={self._estimated_bytes_written()} write_limit={self._write_limit}"
                f" closed={self._closed}>")


cdef Py_ssize_t _put_headers(unsigned char* p, tuple headers) except -1:
    """Write headers (normalized and sized by the caller) at ``p``; returns the bytes written."""
    cdef Py_ssize_t n = 0, i, length
    cdef const char* key_utf8
    for i in range(PyTuple_GET_SIZE(headers)):
        item = <object>PyTuple_GET_ITEM(headers, i)
        key_utf8 = PyUnicode_AsUTF8AndSize(<object>PyTuple_GET_ITEM(item, 0), &length)  # cached
        n += put_varint(p + n, <int32_t>length)
        memcpy(p + n, key_utf8, <size_t>length)
        n += length
        value = <object>PyTuple_GET_ITEM(item, 1)
        if value is None:
            n += put_varint(p + n, -1)
        else:
            length = PyBytes_GET_SIZE(value)
            n += put_varint(p + n, <int32_t>length)
            memcpy(p + n, PyBytes_AS_STRING(value), <size_t>length)
            n += length
    return n
