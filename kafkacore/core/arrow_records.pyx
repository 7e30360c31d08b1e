# cython: language_level=3
"""Fetched record batches straight into Arrow columns: the read path's mirror of the columnar
send path.

``decode_records`` walks the record batches of one partition of a FetchResponse and appends
every wanted record's fields to C buffers (offsets and data for the binary and string columns,
validity bitmaps for null keys, values and header values, plain arrays for the numbers); at the
end each buffer is handed to Arrow without a copy (``pyarrow.foreign_buffer`` keeps the owner
alive) and wrapped with ``pyarrow.Array.from_buffers``.  No Python object is made per record.

Everything in the input is untrusted: every length is checked against what is left of its
record, batch and buffer; every batch's CRC-32C is checked; header keys must be UTF-8 (Arrow's
string type promises it); a compressed batch may inflate only within ``max_decompressed_bytes``
for the whole call.  Anything invalid raises :class:`~kafkacore.errors.CorruptRecordError`.

Transactions (``read_committed``) follow the Java consumer's ``CompletedFetch``: the
FetchResponse's aborted transactions, sorted by first offset, are consumed up to each
transactional batch's last offset into a set of aborted producer ids; a batch of an aborted
producer is skipped, an ABORT control batch removes its producer from the set, and control
batches are never returned.  The format itself is in ``record_format.pxd``.
"""

from cpython.buffer cimport (
    PyBUF_READ,
    PyBUF_SIMPLE,
    PyBuffer_Release,
    PyObject_CheckBuffer,
    PyObject_GetBuffer,
)
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.memoryview cimport PyMemoryView_FromMemory
from libc.stdint cimport INT32_MAX, INT64_MAX, SIZE_MAX, uint8_t, uint16_t, uintptr_t
from libc.stdlib cimport free, realloc
from libc.string cimport memcpy, memset

from kafkacore.core.compression cimport decompress
from kafkacore.core.crc cimport crc_of
from kafkacore.core.record_batch cimport try_varint
from kafkacore.core.record_format cimport *  # noqa: F403 - the format's constants

import pyarrow as pa

from kafkacore.core.compression import DEFAULT_MAX_DECOMPRESSED_BYTES
from kafkacore.errors import CorruptRecordError

# Control records' key type (Java's ControlRecordType): the marker a transaction ends with.
cdef enum:
    CONTROL_ABORT = 0
    CONTROL_COMMIT = 1

# What the nogil record loop reports (the caller turns it into a CorruptRecordError).
cdef enum:
    OK = 0
    E_NOMEM = 1
    E_RECORD_LENGTH = 2
    E_VARINT = 3
    E_KEY = 4
    E_VALUE = 5
    E_HEADER_COUNT = 6
    E_HEADER_KEY = 7
    E_HEADER_UTF8 = 8
    E_HEADER_VALUE = 9
    E_RECORD_FIELDS = 10
    E_TRAILING = 11
    E_TOO_LARGE = 12

cdef tuple _MESSAGES = (
    "",
    "out of memory",
    "a record's length does not fit in its batch",
    "a varint is truncated or too long",
    "a key's length does not fit in its record",
    "a value's length does not fit in its record",
    "a negative header count",
    "a header key's length does not fit in its record",
    "a header key is not UTF-8",
    "a header value's length does not fit in its record",
    "a record's fields do not add up to its length",
    "bytes are left after the batch's records",
    "more than 2 GiB of keys, values or headers in one fetch",
)

cdef str _TIMESTAMP_UNIT = "us"


# -- growable C buffers, handed to Arrow without a copy ----------------------------------------

cdef struct Buf:
    char* data
    Py_ssize_t size
    Py_ssize_t cap


cdef inline int buf_reserve(Buf* b, Py_ssize_t extra) noexcept nogil:
    """Room for ``extra`` more bytes; -1 when out of memory (or absurdly large)."""
    cdef Py_ssize_t need, cap
    cdef char* p
    if extra > <Py_ssize_t>(SIZE_MAX >> 2) - b.size:
        return -1
    need = b.size + extra
    if need <= b.cap:
        return 0
    cap = b.cap * 2 if b.cap else 64
    if cap < need:
        cap = need
    p = <char*>realloc(b.data, <size_t>cap)
    if p == NULL:
        return -1
    b.data = p
    b.cap = cap
    return 0


cdef inline int buf_append(Buf* b, const void* src, Py_ssize_t n) noexcept nogil:
    if buf_reserve(b, n) < 0:
        return -1
    if n:
        memcpy(b.data + b.size, src, <size_t>n)
    b.size += n
    return 0


cdef inline int buf_int32(Buf* b, int32_t v) noexcept nogil:
    if buf_reserve(b, 4) < 0:
        return -1
    (<int32_t*>(b.data + b.size))[0] = v
    b.size += 4
    return 0


cdef inline int buf_int64(Buf* b, int64_t v) noexcept nogil:
    if buf_reserve(b, 8) < 0:
        return -1
    (<int64_t*>(b.data + b.size))[0] = v
    b.size += 8
    return 0


cdef inline int bitmap_set(Buf* b, Py_ssize_t i, bint valid) noexcept nogil:
    """Bit ``i`` of a validity bitmap that grows a zeroed byte at a time."""
    if (i & 7) == 0:
        if buf_reserve(b, 1) < 0:
            return -1
        b.data[b.size] = 0
        b.size += 1
    if valid:
        b.data[i >> 3] = <char>(<uint8_t>b.data[i >> 3] | (1 << (i & 7)))
    return 0


cdef class _Owner:
    """Owns one malloc'ed buffer that Arrow reads (its ``base``): freed when Arrow lets go."""
    cdef char* data

    def __dealloc__(self):
        free(self.data)


cdef object _to_arrow(Buf* b):
    """The buffer as a ``pyarrow.Buffer`` that now owns its memory (``b`` is emptied)."""
    cdef _Owner owner = _Owner.__new__(_Owner)
    if b.data == NULL and buf_reserve(b, 8) < 0:  # Arrow wants a real address, even for 0 bytes
        raise MemoryError()
    owner.data = b.data
    size = b.size
    b.data = NULL
    b.size = b.cap = 0
    return pa.foreign_buffer(<uintptr_t>owner.data, size, base=owner)


# -- varints and UTF-8, without the GIL --------------------------------------------------------


cdef bint _utf8_ok(const unsigned char* s, Py_ssize_t n) noexcept nogil:
    """Well-formed UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF)."""
    cdef Py_ssize_t i = 0
    cdef unsigned char c, c1
    while i < n:
        c = s[i]
        if c < 0x80:
            i += 1
            continue
        if c < 0xC2 or c > 0xF4:
            return False
        if c < 0xE0:
            if n - i < 2 or (s[i + 1] & 0xC0) != 0x80:
                return False
            i += 2
            continue
        if n - i < (3 if c < 0xF0 else 4):
            return False
        c1 = s[i + 1]
        if (c1 & 0xC0) != 0x80 or (s[i + 2] & 0xC0) != 0x80:
            return False
        if c < 0xF0:
            if (c == 0xE0 and c1 < 0xA0) or (c == 0xED and c1 > 0x9F):
                return False
            i += 3
            continue
        if (s[i + 3] & 0xC0) != 0x80:
            return False
        if (c == 0xF0 and c1 < 0x90) or (c == 0xF4 and c1 > 0x8F):
            return False
        i += 4
    return True


# -- the columns being built -------------------------------------------------------------------

cdef struct Columns:
    Buf key_offsets, key_data, key_valid
    Buf value_offsets, value_data, value_valid
    Buf offsets, timestamps, timestamp_types
    Buf header_offsets, hkey_offsets, hkey_data, hvalue_offsets, hvalue_data, hvalue_valid
    Py_ssize_t rows, key_nulls, value_nulls, headers, hvalue_nulls
    bint include_headers


cdef struct Batch:
    int64_t base_offset
    int64_t base_timestamp
    int64_t max_timestamp
    int32_t record_count
    bint log_append_time


cdef struct Stop:
    int64_t start            # the first offset wanted
    int64_t end              # the first offset not wanted
    Py_ssize_t max_rows      # stop after this many rows in all
    int64_t stopped_at       # set: the offset of the first record left out (-1: none)
    Py_ssize_t bad_record    # set: the index of the record an error is about


cdef inline void _free_buf(Buf* b) noexcept nogil:
    free(b.data)
    b.data = NULL
    b.size = b.cap = 0


cdef void _free_columns(Columns* c) noexcept nogil:
    _free_buf(&c.key_offsets)
    _free_buf(&c.key_data)
    _free_buf(&c.key_valid)
    _free_buf(&c.value_offsets)
    _free_buf(&c.value_data)
    _free_buf(&c.value_valid)
    _free_buf(&c.offsets)
    _free_buf(&c.timestamps)
    _free_buf(&c.timestamp_types)
    _free_buf(&c.header_offsets)
    _free_buf(&c.hkey_offsets)
    _free_buf(&c.hkey_data)
    _free_buf(&c.hvalue_offsets)
    _free_buf(&c.hvalue_data)
    _free_buf(&c.hvalue_valid)


cdef inline int _add_bytes(Buf* offsets, Buf* data, Buf* valid, Py_ssize_t row,
                           const unsigned char* src, int64_t length,
                           Py_ssize_t* nulls) noexcept nogil:
    """One binary/string value (``length`` -1: null): its bytes, its end offset, its bit."""
    if length >= 0:
        if length > INT32_MAX - data.size:
            return E_TOO_LARGE
        if buf_append(data, src, <Py_ssize_t>length) < 0:
            return E_NOMEM
    else:
        nulls[0] += 1
    if buf_int32(offsets, <int32_t>data.size) < 0 or bitmap_set(valid, row, length >= 0) < 0:
        return E_NOMEM
    return OK


# The decode loop: every record of one (uncompressed) records section, without the GIL.
# docs/consumer.rst shows it (between the markers).
# -- decode loop start --
cdef int _decode_section(Columns* c, const Batch* batch, const unsigned char* p, Py_ssize_t n,
                         Stop* stop) noexcept nogil:
    """Append the wanted records of p[0:n] to ``c``; OK, or an error code (stop.bad_record
    says which record).  Sets stop.stopped_at at the first record at or past stop.end, or
    when stop.max_rows rows are taken."""
    cdef Py_ssize_t pos = 0, rend, key_at, value_at, i
    cdef int64_t length, ts_delta, offset_delta, key_len, value_len, header_count
    cdef int64_t offset, timestamp, klen, vlen, h
    cdef int err
    for i in range(batch.record_count):
        stop.bad_record = i
        if not try_varint(p, n, &pos, 5, &length):
            return E_VARINT
        if length < 1 or length > n - pos:
            return E_RECORD_LENGTH
        rend = pos + <Py_ssize_t>length
        pos += 1  # the record's attributes: no bit in use
        if (not try_varint(p, rend, &pos, 10, &ts_delta)
                or not try_varint(p, rend, &pos, 5, &offset_delta)):
            return E_VARINT
        if not try_varint(p, rend, &pos, 5, &key_len):
            return E_VARINT
        if key_len < -1 or key_len > rend - pos:
            return E_KEY
        key_at = pos
        if key_len > 0:
            pos += <Py_ssize_t>key_len
        if not try_varint(p, rend, &pos, 5, &value_len):
            return E_VARINT
        if value_len < -1 or value_len > rend - pos:
            return E_VALUE
        value_at = pos
        if value_len > 0:
            pos += <Py_ssize_t>value_len
        if not try_varint(p, rend, &pos, 5, &header_count):
            return E_VARINT
        if header_count < 0:
            return E_HEADER_COUNT
        # Unsigned adds: wrap-around rather than C's undefined behaviour on hostile deltas.
        offset = <int64_t>(<uint64_t>batch.base_offset + <uint64_t>offset_delta)
        if offset < stop.start:  # before the range (the fetch starts at the batch's base)
            pos = rend
            continue
        if offset >= stop.end or c.rows >= stop.max_rows:
            stop.stopped_at = offset
            return OK
        if batch.log_append_time:
            timestamp = batch.max_timestamp
        else:
            timestamp = <int64_t>(<uint64_t>batch.base_timestamp + <uint64_t>ts_delta)
        err = _add_bytes(&c.key_offsets, &c.key_data, &c.key_valid, c.rows, p + key_at,
                         key_len, &c.key_nulls)
        if err == OK:
            err = _add_bytes(&c.value_offsets, &c.value_data, &c.value_valid, c.rows,
                             p + value_at, value_len, &c.value_nulls)
        if err != OK:
            return err
        # Spark's TimestampType: microseconds (unsigned multiply: no overflow trap).
        if (buf_int64(&c.offsets, offset) < 0
                or buf_int64(&c.timestamps, <int64_t>(<uint64_t>timestamp * 1000)) < 0
                or buf_int32(&c.timestamp_types, 1 if batch.log_append_time else 0) < 0):
            return E_NOMEM
        if c.include_headers:
            h = 0
            while h < header_count:
                if not try_varint(p, rend, &pos, 5, &klen):
                    return E_VARINT
                if klen < 0 or klen > rend - pos:
                    return E_HEADER_KEY
                if not _utf8_ok(p + pos, <Py_ssize_t>klen):
                    return E_HEADER_UTF8
                if klen > INT32_MAX - c.hkey_data.size:
                    return E_TOO_LARGE
                if (buf_append(&c.hkey_data, p + pos, <Py_ssize_t>klen) < 0
                        or buf_int32(&c.hkey_offsets, <int32_t>c.hkey_data.size) < 0):
                    return E_NOMEM
                pos += <Py_ssize_t>klen
                if not try_varint(p, rend, &pos, 5, &vlen):
                    return E_VARINT
                if vlen < -1 or vlen > rend - pos:
                    return E_HEADER_VALUE
                err = _add_bytes(&c.hvalue_offsets, &c.hvalue_data, &c.hvalue_valid, c.headers,
                                 p + pos, vlen, &c.hvalue_nulls)
                if err != OK:
                    return err
                if vlen > 0:
                    pos += <Py_ssize_t>vlen
                c.headers += 1
                h += 1
            if pos != rend:
                return E_RECORD_FIELDS
            if buf_int32(&c.header_offsets, <int32_t>c.headers) < 0:
                return E_NOMEM
        pos = rend  # without headers, they are skipped unread: the record's length frames them
        c.rows += 1
    if pos != n:
        return E_TRAILING
    return OK
# -- decode loop end --


cdef int _control_type(const unsigned char* p, Py_ssize_t n) except -2:
    """The type of the first control record in p[0:n] (ABORT 0, COMMIT 1), from its key:
    version int16, type int16.  -1 for a control batch without records."""
    cdef Py_ssize_t pos = 0
    cdef int64_t length, skip, key_len
    if n == 0:
        return -1
    if not try_varint(p, n, &pos, 5, &length) or length < 1 or length > n - pos:
        raise CorruptRecordError("control record: bad length")
    n = pos + <Py_ssize_t>length
    pos += 1
    if (not try_varint(p, n, &pos, 10, &skip) or not try_varint(p, n, &pos, 5, &skip)
            or not try_varint(p, n, &pos, 5, &key_len)):
        raise CorruptRecordError("control record: bad varint")
    if key_len < 4 or key_len > n - pos:
        raise CorruptRecordError(f"control record key of {key_len} bytes does not fit")
    return get_int16(p + pos + 2)


cdef class DecodedRecords:
    """What :func:`decode_records` made: the columns, how many rows, and where to go on."""

    cdef readonly object key, value, offset, timestamp, timestamp_type, headers
    cdef readonly Py_ssize_t num_rows
    #: The offset the next fetch should start at.
    cdef readonly int64_t next_offset
    #: True when a record at or past ``end`` (or the ``max_rows`` limit) was reached.
    cdef readonly bint reached_end
    #: Batches skipped as aborted and control batches seen (for tests and metrics).
    cdef readonly Py_ssize_t aborted_batches, control_batches

    def __repr__(self):
        return (f"DecodedRecords(num_rows={self.num_rows}, next_offset={self.next_offset},"
                f" reached_end={self.reached_end})")


cdef object _binary(object type_, Py_ssize_t n, Buf* offsets, Buf* data, Buf* valid,
                    Py_ssize_t nulls):
    bitmap = _to_arrow(valid) if nulls else None
    if not nulls:
        _free_buf(valid)
    return pa.Array.from_buffers(type_, n, [bitmap, _to_arrow(offsets), _to_arrow(data)],
                                 null_count=nulls)


cdef _HEADER_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
cdef _TIMESTAMP_TYPE = pa.timestamp(_TIMESTAMP_UNIT, tz="UTC")


cdef void _raise_code(int err, int64_t base_offset, Py_ssize_t record) except *:
    raise CorruptRecordError(f"record batch at offset {base_offset}, record {record}:"
                             f" {_MESSAGES[err]}")


def decode_records(data, int64_t start, int64_t end=INT64_MAX, aborted_transactions=None, *,
                   bint read_committed=False, bint include_headers=False, max_rows=None,
                   max_decompressed_bytes=DEFAULT_MAX_DECOMPRESSED_BYTES):
    """Decode the record batches of one partition of a FetchResponse (``data``, bytes-like)
    into Arrow columns: every data record with ``start <= offset < end``, at most ``max_rows``.

    ``aborted_transactions`` is the partition's ``aborted_transactions`` from the response
    (dicts with ``producer_id`` and ``first_offset``, or ``(producer_id, first_offset)``
    pairs); with ``read_committed`` the records of aborted transactions are dropped.  Control
    batches are never returned.  A truncated batch at the end of ``data`` (a broker may cut
    its answer at the size limit) ends the input; one at the start is corrupt.

    Returns a :class:`DecodedRecords`; anything invalid raises
    :class:`~kafkacore.errors.CorruptRecordError`.
    """
    cdef Py_buffer view
    cdef const unsigned char* p
    cdef const unsigned char* section
    cdef Py_ssize_t n, pos = 0, size, section_len, budget
    cdef int32_t length
    cdef int attributes, codec, err
    cdef int64_t last_offset, producer_id, next_offset = start
    cdef Columns c
    cdef Batch batch
    cdef Stop stop
    cdef DecodedRecords out = DecodedRecords.__new__(DecodedRecords)
    cdef bint transactional, control
    cdef Py_ssize_t aborted_at = 0, aborted_count
    cdef uint32_t stored, computed

    if type(max_decompressed_bytes) is not int or max_decompressed_bytes < 0:
        raise ValueError("max_decompressed_bytes must be a non-negative int, not"
                         f" {max_decompressed_bytes!r}")
    if max_rows is not None and (type(max_rows) is not int or max_rows < 0):
        raise ValueError(f"max_rows must be a non-negative int or None, not {max_rows!r}")
    if start < 0 or end < start:
        raise ValueError(f"need 0 <= start <= end, got start={start}, end={end}")
    if not PyObject_CheckBuffer(data):
        raise TypeError(f"record batches must be a bytes-like object, got {type(data).__name__}")
    budget = min(max_decompressed_bytes, <Py_ssize_t>(SIZE_MAX >> 1))
    # Aborted transactions in first-offset order (Java keeps them in a priority queue).
    aborted = []
    if read_committed and aborted_transactions:
        for txn in aborted_transactions:
            if isinstance(txn, dict):
                aborted.append((int(txn["first_offset"]), int(txn["producer_id"])))
            else:
                aborted.append((int(txn[1]), int(txn[0])))
        aborted.sort()
    aborted_count = len(aborted)
    aborted_pids = set()

    memset(&c, 0, sizeof(c))
    c.include_headers = include_headers
    stop.start = start
    stop.end = end
    stop.max_rows = max_rows if max_rows is not None else <Py_ssize_t>(SIZE_MAX >> 1)
    stop.stopped_at = -1
    # Offsets arrays begin with 0.
    if (buf_int32(&c.key_offsets, 0) < 0 or buf_int32(&c.value_offsets, 0) < 0
            or buf_int32(&c.header_offsets, 0) < 0 or buf_int32(&c.hkey_offsets, 0) < 0
            or buf_int32(&c.hvalue_offsets, 0) < 0):
        _free_columns(&c)
        raise MemoryError()
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        p = <const unsigned char*>view.buf
        n = view.len
        while pos < n and stop.stopped_at < 0:
            if n - pos < RECORD_BATCH_OVERHEAD:
                if pos == 0:
                    raise CorruptRecordError(f"truncated record batch: {n} bytes, a batch"
                                             f" header takes {RECORD_BATCH_OVERHEAD}")
                break  # a partial batch at the end of a fetch: the next fetch gets it whole
            length = get_int32(p + pos + LENGTH_OFFSET)
            if length < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD:
                raise CorruptRecordError(f"record batch at byte {pos} has length {length}, less"
                                         " than its own header")
            if length > n - pos - LOG_OVERHEAD:
                if pos == 0:
                    raise CorruptRecordError(f"truncated record batch: it says {length} bytes"
                                             f" follow, {n - LOG_OVERHEAD} do")
                break
            size = LOG_OVERHEAD + length
            batch.base_offset = get_int64(p + pos + BASE_OFFSET_OFFSET)
            if <signed char>p[pos + MAGIC_OFFSET] != MAGIC_V2:
                raise CorruptRecordError(f"record batch at byte {pos} has magic"
                                         f" {<signed char>p[pos + MAGIC_OFFSET]}; only magic 2"
                                         " is supported")
            last_offset = <int64_t>(<uint64_t>batch.base_offset
                                    + <uint64_t>get_int32(p + pos + LAST_OFFSET_DELTA_OFFSET))
            if batch.base_offset >= end:
                stop.stopped_at = batch.base_offset
                next_offset = max(next_offset, batch.base_offset)
                break
            if last_offset < start or last_offset < batch.base_offset:
                pos += size  # wholly before the range (or nonsense): not even read
                continue
            stored = <uint32_t>get_int32(p + pos + CRC_OFFSET)
            computed = crc_of(p + pos + ATTRIBUTES_OFFSET, size - ATTRIBUTES_OFFSET, 0)
            if computed != stored:
                raise CorruptRecordError(f"record batch at offset {batch.base_offset}: CRC"
                                         f" mismatch (stored 0x{stored:08x}, computed"
                                         f" 0x{computed:08x})")
            attributes = <uint16_t>get_int16(p + pos + ATTRIBUTES_OFFSET)
            codec = attributes & COMPRESSION_CODEC_MASK
            if codec > CODEC_ZSTD:
                raise CorruptRecordError(f"record batch at offset {batch.base_offset} has"
                                         f" unknown codec {codec}")
            batch.record_count = get_int32(p + pos + RECORDS_COUNT_OFFSET)
            if batch.record_count < 0:
                raise CorruptRecordError(f"record batch at offset {batch.base_offset} has a"
                                         f" negative record count {batch.record_count}")
            batch.base_timestamp = get_int64(p + pos + BASE_TIMESTAMP_OFFSET)
            batch.max_timestamp = get_int64(p + pos + MAX_TIMESTAMP_OFFSET)
            batch.log_append_time = (attributes & TIMESTAMP_TYPE_MASK) != 0
            producer_id = get_int64(p + pos + PRODUCER_ID_OFFSET)
            transactional = (attributes & TRANSACTIONAL_FLAG_MASK) != 0
            control = (attributes & CONTROL_FLAG_MASK) != 0

            # The records section, decompressed if need be.
            plain = None
            section = p + pos + RECORDS_OFFSET
            section_len = size - RECORDS_OFFSET
            if codec != CODEC_NONE:
                mv = PyMemoryView_FromMemory(<char*>section, section_len, PyBUF_READ)
                try:
                    plain = decompress(codec, mv, budget)
                finally:
                    mv.release()
                budget -= PyBytes_GET_SIZE(plain)
                section = <const unsigned char*>PyBytes_AS_STRING(plain)
                section_len = PyBytes_GET_SIZE(plain)

            # CompletedFetch.nextFetchedRecord: transactions, then control batches.
            if read_committed and producer_id >= 0:
                while aborted_at < aborted_count and aborted[aborted_at][0] <= last_offset:
                    aborted_pids.add(aborted[aborted_at][1])
                    aborted_at += 1
                if control and _control_type(section, section_len) == CONTROL_ABORT:
                    aborted_pids.discard(producer_id)
                elif transactional and producer_id in aborted_pids:
                    out.aborted_batches += 1
                    next_offset = max(next_offset, last_offset + 1)
                    pos += size
                    continue
            if control:
                out.control_batches += 1
                next_offset = max(next_offset, last_offset + 1)
                pos += size
                continue

            with nogil:
                err = _decode_section(&c, &batch, section, section_len, &stop)
            if err != OK:
                _raise_code(err, batch.base_offset, stop.bad_record)
            if stop.stopped_at >= 0:
                next_offset = max(next_offset, stop.stopped_at)
            else:
                next_offset = max(next_offset, last_offset + 1)
            pos += size
    except BaseException:
        _free_columns(&c)
        raise
    finally:
        PyBuffer_Release(&view)

    try:
        out.num_rows = c.rows
        out.next_offset = next_offset
        out.reached_end = stop.stopped_at >= 0
        out.key = _binary(pa.binary(), c.rows, &c.key_offsets, &c.key_data, &c.key_valid,
                          c.key_nulls)
        out.value = _binary(pa.binary(), c.rows, &c.value_offsets, &c.value_data,
                            &c.value_valid, c.value_nulls)
        out.offset = pa.Array.from_buffers(pa.int64(), c.rows, [None, _to_arrow(&c.offsets)])
        out.timestamp = pa.Array.from_buffers(_TIMESTAMP_TYPE, c.rows,
                                              [None, _to_arrow(&c.timestamps)])
        out.timestamp_type = pa.Array.from_buffers(pa.int32(), c.rows,
                                                   [None, _to_arrow(&c.timestamp_types)])
        if include_headers:
            hkeys = pa.Array.from_buffers(pa.string(), c.headers,
                                          [None, _to_arrow(&c.hkey_offsets),
                                           _to_arrow(&c.hkey_data)])
            hvalues = _binary(pa.binary(), c.headers, &c.hvalue_offsets, &c.hvalue_data,
                              &c.hvalue_valid, c.hvalue_nulls)
            entries = pa.StructArray.from_arrays([hkeys, hvalues], names=["key", "value"])
            out.headers = pa.Array.from_buffers(_HEADER_TYPE, c.rows,
                                                [None, _to_arrow(&c.header_offsets)],
                                                children=[entries])
    finally:
        _free_columns(&c)
    return out


def batch_ends(data):
    """The offset after the last complete batch in ``data`` (-1 if there is none), from the
    batch headers alone: where the next fetch can start before this one is decoded."""
    cdef Py_buffer view
    cdef const unsigned char* p
    cdef Py_ssize_t n, pos = 0
    cdef int32_t length
    cdef int64_t last = -1
    if not PyObject_CheckBuffer(data):
        raise TypeError(f"record batches must be a bytes-like object, got {type(data).__name__}")
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        p = <const unsigned char*>view.buf
        n = view.len
        while n - pos >= RECORD_BATCH_OVERHEAD:
            length = get_int32(p + pos + LENGTH_OFFSET)
            if length < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD or length > n - pos - LOG_OVERHEAD:
                break
            last = <int64_t>(<uint64_t>get_int64(p + pos + BASE_OFFSET_OFFSET)
                             + <uint64_t>get_int32(p + pos + LAST_OFFSET_DELTA_OFFSET) + 1)
            pos += LOG_OVERHEAD + length
    finally:
        PyBuffer_Release(&view)
    return last


def constant_columns(str topic, int32_t partition, Py_ssize_t n):
    """The ``topic`` (string) and ``partition`` (int32) columns of ``n`` rows of one partition:
    the same value ``n`` times, built in C (no Python object per row)."""
    cdef bytes name = topic.encode("utf-8")
    cdef Py_ssize_t length = len(name), i
    cdef const char* src = name
    cdef Buf offsets, data, partitions
    if n < 0:
        raise ValueError(f"n must be >= 0, not {n}")
    if length and n > (INT32_MAX - 1) // length:
        raise ValueError(f"{n} rows of topic {topic!r} take more than 2 GiB")
    memset(&offsets, 0, sizeof(Buf))
    memset(&data, 0, sizeof(Buf))
    memset(&partitions, 0, sizeof(Buf))
    try:
        if (buf_reserve(&offsets, (n + 1) * 4) < 0 or buf_reserve(&data, n * length) < 0
                or buf_reserve(&partitions, n * 4) < 0):
            raise MemoryError()
        with nogil:
            for i in range(n + 1):
                (<int32_t*>offsets.data)[i] = <int32_t>(i * length)
            for i in range(n):
                memcpy(data.data + i * length, src, <size_t>length)
                (<int32_t*>partitions.data)[i] = partition
            offsets.size = (n + 1) * 4
            data.size = n * length
            partitions.size = n * 4
        topics = pa.Array.from_buffers(pa.string(), n, [None, _to_arrow(&offsets),
                                                        _to_arrow(&data)])
        return topics, pa.Array.from_buffers(pa.int32(), n, [None, _to_arrow(&partitions)])
    finally:
        _free_buf(&offsets)
        _free_buf(&data)
        _free_buf(&partitions)
