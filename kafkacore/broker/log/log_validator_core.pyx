# cython: language_level=3
"""``LogValidator``, compiled: ``analyze`` checks a Produce request's batches for one partition
and ``assign_offsets`` gives them their offsets.

Both run once per partition of every Produce request, and on a small request they were the
broker's largest Python cost (about 270 bytecodes and two ``BatchHeader`` objects per batch).
Here each reads the 61-byte headers in C (big-endian, every bound checked), calls the compiled
record checker (``check_batch``) and the CRC-32C in C, and builds each ``BatchHeader`` with one
allocation.  ``BatchHeader``, the constants, the slower checks and the design account stay in
``log_validator.py``, which is where callers import these two from.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_CheckBuffer, PyObject_GetBuffer
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE, PyTuple_SET_ITEM
from libc.stdint cimport (
    INT16_MAX,
    INT16_MIN,
    INT32_MAX,
    INT64_MAX,
    int16_t,
    int32_t,
    int64_t,
    uint32_t,
    uint64_t,
)

from kafkacore.core.bytestream cimport put_int16, put_int32, put_int64
from kafkacore.core.crc cimport crc_of
from kafkacore.core.record_batch cimport check_batch
from kafkacore.core.record_format cimport *  # noqa: F403 - the format's constants

import struct

from kafkacore.core.compression import DEFAULT_MAX_DECOMPRESSED_BYTES
from kafkacore.errors import (
    CorruptMessageError,
    CorruptRecordError,
    InvalidRecordError,
    MessageTooLargeError,
)


cdef extern from *:
    """
    /* A tuple subclass's instance with n empty slots (what tuple.__new__(cls, ...) allocates). */
    static PyObject* kc_alloc_tuple_of(PyObject* cls, Py_ssize_t n) {
        return ((PyTypeObject*)cls)->tp_alloc((PyTypeObject*)cls, n);
    }
    """
    object kc_alloc_tuple_of(object cls, Py_ssize_t n)


# Set at the end of this module, from log_validator.py (which imports this module at its end).
cdef object BatchHeader = None
cdef object check_compacted = None
cdef Py_ssize_t DEFAULT_BUDGET = DEFAULT_MAX_DECOMPRESSED_BYTES

cdef enum:
    HEADER_FIELDS = 14  # BatchHeader's fields
    # BatchHeader field indexes.
    H_POSITION = 0
    H_SIZE = 1
    H_BASE_OFFSET = 2
    H_LEADER_EPOCH = 3
    H_CRC = 5
    H_ATTRIBUTES = 6
    H_LAST_OFFSET_DELTA = 7
    H_MAX_TIMESTAMP = 9


cdef inline void set_item(object t, Py_ssize_t i, object value):
    """Fill slot ``i`` of the new tuple ``t`` (a BatchHeader: not a tuple to Cython's type
    checks, which take ``tuple`` as exactly tuple)."""
    Py_INCREF(value)  # PyTuple_SET_ITEM takes the reference
    PyTuple_SET_ITEM(<tuple>t, i, value)


cdef object new_header(Py_ssize_t position, int64_t size, const unsigned char* h,
                       object max_timestamp):
    """The BatchHeader of the batch whose header is at ``h``, with ``max_timestamp``."""
    cdef object t = kc_alloc_tuple_of(BatchHeader, HEADER_FIELDS)
    set_item(t, 0, position)
    set_item(t, 1, size)
    set_item(t, 2, get_int64(h + BASE_OFFSET_OFFSET))
    set_item(t, 3, get_int32(h + PARTITION_LEADER_EPOCH_OFFSET))
    set_item(t, 4, <signed char>h[MAGIC_OFFSET])
    set_item(t, 5, <uint32_t>get_int32(h + CRC_OFFSET))
    set_item(t, 6, get_int16(h + ATTRIBUTES_OFFSET))
    set_item(t, 7, get_int32(h + LAST_OFFSET_DELTA_OFFSET))
    set_item(t, 8, get_int64(h + BASE_TIMESTAMP_OFFSET))
    set_item(t, 9, max_timestamp)
    set_item(t, 10, get_int64(h + PRODUCER_ID_OFFSET))
    set_item(t, 11, get_int16(h + PRODUCER_EPOCH_OFFSET))
    set_item(t, 12, get_int32(h + BASE_SEQUENCE_OFFSET))
    set_item(t, 13, get_int32(h + RECORDS_COUNT_OFFSET))
    return t


cdef object invalid_batch(const unsigned char* h, Py_ssize_t pos, int64_t last_delta,
                          bint allow_control):
    """The InvalidRecordError for the checked batch at ``h`` (byte ``pos``), or None."""
    cdef int64_t record_count = get_int32(h + RECORDS_COUNT_OFFSET)
    cdef int64_t last_offset_delta = get_int32(h + LAST_OFFSET_DELTA_OFFSET)
    cdef int attributes = get_int16(h + ATTRIBUTES_OFFSET)
    if record_count < 1:
        return InvalidRecordError(f"batch at byte {pos} has no records")
    if last_offset_delta != record_count - 1:
        return InvalidRecordError(f"batch at byte {pos}: lastOffsetDelta {last_offset_delta}"
                                  f" disagrees with its {record_count} records")
    if attributes & CONTROL_FLAG_MASK and not allow_control:
        return InvalidRecordError("clients may not send control batches")
    if attributes & TRANSACTIONAL_FLAG_MASK and get_int64(h + PRODUCER_ID_OFFSET) <= -1:
        return InvalidRecordError("a transactional batch without a producer id")
    if last_delta != last_offset_delta:
        return InvalidRecordError(f"batch at byte {pos}: its last record's offset delta is not"
                                  f" lastOffsetDelta ({last_offset_delta})")
    return None


cdef int64_t size_limit(object max_message_bytes) except? -2:
    """``max.message.bytes`` clamped to int64 (a batch has at most 2**31 + 11 bytes)."""
    cdef int overflow = 0
    cdef long long value = PyLong_AsLongLongAndOverflow(max_message_bytes, &overflow)
    if overflow > 0:
        return INT64_MAX
    if overflow < 0:
        return -1
    return value


cdef list analyze_buffer(object records, const unsigned char* p, Py_ssize_t n,
                         object max_message_bytes, bint allow_control, bint compacted):
    cdef Py_ssize_t pos = 0, count = 0, _batch, budget = DEFAULT_BUDGET
    cdef int64_t size, limit = size_limit(max_message_bytes)
    cdef int64_t last_delta, max_ts_delta
    cdef signed char magic
    cdef bint irregular = False  # a batch with fewer records than offsets (compacted)
    cdef list out
    cdef object error = None
    if n == 0:
        raise InvalidRecordError("the request carries no record batch for this partition")
    # Framing first, every batch: its magic, its length against what is left, its size.
    while pos < n:
        if n - pos < RECORD_BATCH_OVERHEAD:
            if n - pos >= MAGIC_OFFSET + 1 and p[pos + MAGIC_OFFSET] < 2:
                raise InvalidRecordError(
                    f"magic {<int>p[pos + MAGIC_OFFSET]} batch: only magic 2 is accepted")
            raise CorruptMessageError(f"truncated record batch at byte {pos}")
        size = LOG_OVERHEAD + <int64_t>get_int32(p + pos + LENGTH_OFFSET)
        magic = <signed char>p[pos + MAGIC_OFFSET]
        if magic < 2:
            # Kafka: Produce v3+ may carry only magic 2 batches (InvalidRecordException).
            raise InvalidRecordError(
                f"magic {<int>magic} batch at byte {pos}: only magic 2 is accepted")
        if size < RECORD_BATCH_OVERHEAD or size > n - pos:
            raise CorruptMessageError(
                f"record batch at byte {pos} says it has {size} bytes, {n - pos} are left")
        if size > limit:
            raise MessageTooLargeError(f"the batch at byte {pos} has {size} bytes, above"
                                       f" max.message.bytes ({max_message_bytes})")
        if (<int64_t>get_int32(p + pos + RECORDS_COUNT_OFFSET)
                != <int64_t>get_int32(p + pos + LAST_OFFSET_DELTA_OFFSET) + 1):
            irregular = True
        count += 1
        pos += size
    if compacted and irregular:
        out = []
        pos = 0
        for _batch in range(count):
            size = LOG_OVERHEAD + <int64_t>get_int32(p + pos + LENGTH_OFFSET)
            out.append(check_compacted(records, new_header(
                pos, size, p + pos, get_int64(p + pos + MAX_TIMESTAMP_OFFSET))))
            pos += size
        return out
    # Then every byte of every batch (CRC, records, codec), then each header's fields: a
    # corrupt batch anywhere is reported before a header's invalid field.
    out = []
    pos = 0
    for _batch in range(count):
        size = LOG_OVERHEAD + <int64_t>get_int32(p + pos + LENGTH_OFFSET)
        try:
            check_batch(p + pos, size, pos, &budget, &last_delta, &max_ts_delta)
        except CorruptRecordError as exc:
            raise CorruptMessageError(str(exc)) from None
        if error is None:
            error = invalid_batch(p + pos, pos, last_delta, allow_control)
            if error is None:
                # The records' largest timestamp (Kafka's LogValidator ``maxTimestamp``), what
                # the header will say once assign_offsets has written it; int64 wraps as
                # Java's long does.
                out.append(new_header(pos, size, p + pos, <int64_t>(
                    <uint64_t>get_int64(p + pos + BASE_TIMESTAMP_OFFSET)
                    + <uint64_t>max_ts_delta)))
        pos += size
    if error is not None:
        raise error
    return out


def analyze(records, max_message_bytes, *, allow_control=False, compacted=False):
    """Check a Produce request's records for one partition; return their batch headers.

    Raises ``kafkacore.errors`` classes, each with Kafka's error code: ``InvalidRecordError``
    for no batch at all, magic < 2, an empty batch, a record count that disagrees with
    lastOffsetDelta, a control batch from a client (``allow_control``: the transaction
    coordinator's markers); ``CorruptMessageError`` for anything the reader rejects (framing,
    CRC, varints, codec); ``MessageTooLargeError`` for a batch above ``max.message.bytes``.
    ``compacted``: batches copied from a leader's log, which its log cleaner may have left with
    fewer records than offsets (or none): see ``log_validator._check_compacted``.  Each header's
    maxTimestamp is the one it will have: its records' largest timestamp.
    """
    cdef Py_buffer view
    if not PyObject_CheckBuffer(records):
        raise TypeError(f"records must be a bytes-like object, not {type(records).__name__}")
    PyObject_GetBuffer(records, &view, PyBUF_SIMPLE)
    try:
        return analyze_buffer(records, <const unsigned char*>view.buf, view.len,
                              max_message_bytes, allow_control, compacted)
    finally:
        PyBuffer_Release(&view)


cdef int64_t as_int64(object value, const char* fmt, int64_t low, int64_t high) except? -1:
    """``value`` as struct.pack's format ``fmt`` takes it, with struct.error's messages."""
    cdef int overflow = 0
    cdef long long v
    if not isinstance(value, int):
        raise struct.error("required argument is not an integer")
    v = PyLong_AsLongLongAndOverflow(value, &overflow)
    if overflow or v < low or v > high:
        if fmt[0] == b"q":
            raise struct.error("int too large to convert")
        raise struct.error(f"'{fmt.decode()}' format requires {low} <= number <= {high}")
    return v


cdef list assign_buffer(unsigned char* p, Py_ssize_t n, list headers, object first_offset,
                        object leader_epoch, object log_append_time_ms):
    cdef int64_t offset = as_int64(first_offset, b"q", -INT64_MAX - 1, INT64_MAX)
    cdef int64_t position, size, attributes, stored_attributes, max_timestamp, delta
    cdef int64_t append_time = 0
    cdef int32_t epoch = <int32_t>as_int64(leader_epoch, b"i", -INT32_MAX - 1, INT32_MAX)
    cdef bint offset_overflow = False
    cdef Py_ssize_t i
    cdef tuple h
    cdef object t
    cdef object crc, max_timestamp_obj
    cdef unsigned char* b
    cdef list out = []
    if log_append_time_ms is not None:
        append_time = as_int64(log_append_time_ms, b"q", -INT64_MAX - 1, INT64_MAX)
    for header in headers:
        if not isinstance(header, BatchHeader) or PyTuple_GET_SIZE(header) != HEADER_FIELDS:
            raise TypeError(f"assign_offsets takes analyze's BatchHeaders, not"
                            f" {type(header).__name__}")
        h = <tuple>header
        if offset_overflow:
            raise struct.error("int too large to convert")
        position = h[H_POSITION]
        size = h[H_SIZE]
        if (position < 0 or size < RECORD_BATCH_OVERHEAD or size - LOG_OVERHEAD > INT32_MAX
                or size > n - position):
            raise struct.error(f"batch at byte {position} ({size} bytes) does not fit in the"
                               f" buffer's {n} bytes")
        b = p + position
        # baseOffset, length (unchanged) and partitionLeaderEpoch, outside the CRC.
        put_int64(b + BASE_OFFSET_OFFSET, offset)
        put_int32(b + LENGTH_OFFSET, <int32_t>(size - LOG_OVERHEAD))
        put_int32(b + PARTITION_LEADER_EPOCH_OFFSET, epoch)
        crc = h[H_CRC]
        stored_attributes = h[H_ATTRIBUTES]  # as stored: analyze read it from these bytes
        attributes = stored_attributes
        max_timestamp_obj = h[H_MAX_TIMESTAMP]
        if log_append_time_ms is not None:
            attributes |= TIMESTAMP_TYPE_MASK
            max_timestamp_obj = log_append_time_ms
            max_timestamp = append_time
        else:
            max_timestamp = as_int64(max_timestamp_obj, b"q", -INT64_MAX - 1, INT64_MAX)
        if (attributes != stored_attributes
                or max_timestamp != get_int64(b + MAX_TIMESTAMP_OFFSET)):
            if attributes < INT16_MIN or attributes > INT16_MAX:
                raise struct.error(f"'h' format requires {INT16_MIN} <= number <= {INT16_MAX}")
            put_int16(b + ATTRIBUTES_OFFSET, <int16_t>attributes)
            put_int64(b + MAX_TIMESTAMP_OFFSET, max_timestamp)
            crc = crc_of(b + ATTRIBUTES_OFFSET, size - ATTRIBUTES_OFFSET, 0)
            put_int32(b + CRC_OFFSET, <int32_t>(<uint32_t>crc))
        t = kc_alloc_tuple_of(BatchHeader, HEADER_FIELDS)
        for i in range(HEADER_FIELDS):
            if i == H_BASE_OFFSET:
                set_item(t, i, offset)
            elif i == H_LEADER_EPOCH:
                set_item(t, i, leader_epoch)
            elif i == H_CRC:
                set_item(t, i, crc)
            elif i == H_ATTRIBUTES and attributes != stored_attributes:
                set_item(t, i, attributes)
            elif i == H_MAX_TIMESTAMP:
                set_item(t, i, max_timestamp_obj)
            else:  # as analyze gave it
                set_item(t, i, <object>PyTuple_GET_ITEM(h, i))
        out.append(t)
        delta = <int64_t>h[H_LAST_OFFSET_DELTA] + 1
        if ((delta > 0 and offset > INT64_MAX - delta)
                or (delta < 0 and offset < -INT64_MAX - 1 - delta)):
            offset_overflow = True  # raised if another batch needs an offset, as struct would
        else:
            offset += delta
    return out


def assign_offsets(buf, headers, first_offset, leader_epoch, log_append_time_ms):
    """Give the batches consecutive offsets from ``first_offset`` (rewriting baseOffset and
    partitionLeaderEpoch in place, outside the CRC).  Set maxTimestamp: to the append time and
    the timestamp-type bit on LogAppendTime topics, else to the records' largest timestamp
    (``analyze``'s header) where the producer wrote another; then recompute the CRC.  Returns
    the updated headers."""
    cdef Py_buffer view
    cdef list batches = headers if type(headers) is list else list(headers)
    if not batches:
        return []
    if not PyObject_CheckBuffer(buf):
        raise TypeError(f"argument must be read-write bytes-like object, not {type(buf).__name__}")
    PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
    try:
        if view.readonly:
            raise TypeError("argument must be read-write bytes-like object, not"
                            f" {type(buf).__name__}")
        return assign_buffer(<unsigned char*>view.buf, view.len, batches, first_offset,
                             leader_epoch, log_append_time_ms)
    finally:
        PyBuffer_Release(&view)


from kafkacore.broker.log import log_validator as _validator  # noqa: E402 - see BatchHeader above

BatchHeader = _validator.BatchHeader
check_compacted = _validator._check_compacted
if not (issubclass(BatchHeader, tuple) and len(BatchHeader._fields) == HEADER_FIELDS
        and BatchHeader.__basicsize__ == tuple.__basicsize__):
    raise ImportError("log_validator.BatchHeader must be a NamedTuple of 14 fields, no more")
