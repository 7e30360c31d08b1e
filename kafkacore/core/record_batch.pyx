# cython: language_level=3
"""Reading record batches back (Kafka's ``DefaultRecordBatch`` and ``DefaultRecord``):
``iter_batches`` and ``iter_records`` decode and check every byte into ``RecordBatch`` and
``Record`` objects; ``check_batches`` makes the same checks without building them, for the
broker's ``LogValidator``.  The format is in ``record_format.pxd``.
"""

from cpython.buffer cimport (
    PyBUF_READ,
    PyBUF_SIMPLE,
    PyBuffer_Release,
    PyObject_CheckBuffer,
    PyObject_GetBuffer,
)
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.memoryview cimport PyMemoryView_FromMemory
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport INT64_MIN, SIZE_MAX, uint16_t, uint64_t

from kafkacore.core.compression cimport decompress
from kafkacore.core.crc cimport crc_of
from kafkacore.core.record_format cimport *  # noqa: F403 - the format's constants

from kafkacore.core.compression import CODEC_NAMES, DEFAULT_MAX_DECOMPRESSED_BYTES
from kafkacore.errors import CorruptRecordError


# -- the reader -----------------------------------------------------------------------------

cdef class Record:
    """One record read back from a batch: offset, timestamp, key, value, headers."""

    def __repr__(self):
        return (f"Record(offset={self.offset}, timestamp={self.timestamp}, key={self.key!r:.40},"
                f" value={self.value!r:.40}, headers={self.headers!r:.80})")


cdef class RecordBatch:
    """One record batch read back: the header fields and the decoded records."""

    @property
    def compression(self):
        """Codec name from the attributes (none, gzip, snappy, lz4 or zstd)."""
        return CODEC_NAMES[self.attributes & COMPRESSION_CODEC_MASK]

    @property
    def timestamp_type(self):
        """0 for CreateTime, 1 for LogAppendTime."""
        return 1 if self.attributes & TIMESTAMP_TYPE_MASK else 0

    @property
    def is_transactional(self):
        return bool(self.attributes & TRANSACTIONAL_FLAG_MASK)

    @property
    def is_control(self):
        return bool(self.attributes & CONTROL_FLAG_MASK)

    @property
    def last_offset(self):
        return self.base_offset + self.last_offset_delta

    @property
    def size_in_bytes(self):
        """Bytes the batch takes on the wire (header included)."""
        return LOG_OVERHEAD + self.batch_length

    def __repr__(self):
        return (f"RecordBatch(base_offset={self.base_offset}, record_count={self.record_count},"
                f" compression={self.compression}, producer_id={self.producer_id},"
                f" base_sequence={self.base_sequence})")


cdef inline int64_t _read_varint(const unsigned char* p, Py_ssize_t end, Py_ssize_t* pos,
                                 int max_bytes, str what) except? -0x7FFFFFFFFFFFFFFF:
    """Read a zigzag varint of at most ``max_bytes`` (5: int32, 10: int64) from p[pos[0]:end]."""
    cdef uint64_t raw = 0, b
    cdef int shift = 0, i = 0
    cdef Py_ssize_t q = pos[0]
    while True:
        if q >= end:
            raise CorruptRecordError(f"truncated varint ({what}) at byte {q}")
        b = p[q]
        q += 1
        raw |= (b & 0x7F) << shift
        i += 1
        if not (b & 0x80):
            break
        if i == max_bytes:
            raise CorruptRecordError(f"varint ({what}) longer than {max_bytes} bytes at byte {q}")
        shift += 7
    if max_bytes == 5 and raw > 0xFFFFFFFF:
        raise CorruptRecordError(f"varint ({what}) does not fit in 32 bits")
    if max_bytes == 10 and i == 10 and b > 1:
        raise CorruptRecordError(f"varlong ({what}) does not fit in 64 bits")
    pos[0] = q
    # zigzag: (raw >> 1) ^ -(raw & 1)
    return <int64_t>((raw >> 1) ^ (<uint64_t>0 - (raw & 1)))


cdef object _read_bytes(const unsigned char* p, Py_ssize_t end, Py_ssize_t* pos, str what):
    """A nullable bytes field: varint length (-1 null) then the bytes, within p[pos:end]."""
    cdef int64_t length = _read_varint(p, end, pos, 5, what + " length")
    if length == -1:
        return None
    if length < -1:
        raise CorruptRecordError(f"negative {what} length {length}")
    if length > end - pos[0]:
        raise CorruptRecordError(f"{what} of {length} bytes overruns its record"
                                 f" ({end - pos[0]} bytes left)")
    out = PyBytes_FromStringAndSize(<const char*>p + pos[0], <Py_ssize_t>length)
    pos[0] += <Py_ssize_t>length
    return out


cdef list _decode_records(RecordBatch batch, const unsigned char* p, Py_ssize_t n):
    """The ``record_count`` records in p[0:n] (an uncompressed records section)."""
    cdef list records = []
    cdef Py_ssize_t pos = 0, rend
    cdef int64_t length, timestamp_delta, offset_delta, header_count, klen, j
    cdef int32_t i
    cdef bint log_append_time = batch.attributes & TIMESTAMP_TYPE_MASK
    cdef Record record
    cdef list headers
    for i in range(batch.record_count):
        length = _read_varint(p, n, &pos, 5, "record length")
        if length < 1 or length > n - pos:
            raise CorruptRecordError(f"record {i} says it has {length} bytes, "
                                     f"{n - pos} are left in the batch")
        rend = pos + <Py_ssize_t>length
        record = Record.__new__(Record)
        record.attributes = p[pos]
        pos += 1
        timestamp_delta = _read_varint(p, rend, &pos, 10, "timestamp delta")
        offset_delta = _read_varint(p, rend, &pos, 5, "offset delta")
        record.key = _read_bytes(p, rend, &pos, "key")
        record.value = _read_bytes(p, rend, &pos, "value")
        header_count = _read_varint(p, rend, &pos, 5, "header count")
        if header_count < 0:
            raise CorruptRecordError(f"record {i} has a negative header count {header_count}")
        headers = []
        j = 0
        while j < header_count:
            klen = _read_varint(p, rend, &pos, 5, "header key length")
            if klen < 0 or klen > rend - pos:
                raise CorruptRecordError(f"header key of {klen} bytes in record {i} does not fit")
            try:
                hkey = PyUnicode_DecodeUTF8(<const char*>p + pos, <Py_ssize_t>klen, NULL)
            except UnicodeDecodeError as exc:
                raise CorruptRecordError(f"header key in record {i} is not UTF-8: {exc}") from None
            pos += <Py_ssize_t>klen
            headers.append((hkey, _read_bytes(p, rend, &pos, "header value")))
            j += 1
        if pos != rend:
            raise CorruptRecordError(f"record {i} says it has {length} bytes but its fields take"
                                     f" {length - (rend - pos)}")
        record.headers = headers
        record.timestamp_type = 1 if log_append_time else 0
        # Unsigned adds: wrap-around instead of C undefined behaviour on hostile input.
        record.offset = <int64_t>(<uint64_t>batch.base_offset + <uint64_t>offset_delta)
        if log_append_time:
            record.timestamp = batch.max_timestamp
        else:
            record.timestamp = <int64_t>(<uint64_t>batch.base_timestamp
                                         + <uint64_t>timestamp_delta)
        records.append(record)
    if pos != n:
        raise CorruptRecordError(f"{n - pos} bytes left after the batch's {batch.record_count}"
                                 " records")
    return records


cdef RecordBatch _decode_batch(const unsigned char* p, Py_ssize_t size, Py_ssize_t where,
                               Py_ssize_t* budget):
    """The batch in p[0:size] (size = 12 + its Length field, already checked against the data).
    A compressed batch may inflate to at most ``budget[0]`` bytes, which it then uses up."""
    cdef RecordBatch batch = RecordBatch.__new__(RecordBatch)
    cdef uint32_t computed
    cdef int codec
    batch.base_offset = get_int64(p + BASE_OFFSET_OFFSET)
    batch.batch_length = get_int32(p + LENGTH_OFFSET)
    batch.partition_leader_epoch = get_int32(p + PARTITION_LEADER_EPOCH_OFFSET)
    batch.magic = <signed char>p[MAGIC_OFFSET]
    if batch.magic != MAGIC_V2:
        raise CorruptRecordError(f"record batch at byte {where} has magic {batch.magic};"
                                 " only magic 2 is supported")
    batch.crc = <uint32_t>get_int32(p + CRC_OFFSET)
    computed = crc_of(p + ATTRIBUTES_OFFSET, size - ATTRIBUTES_OFFSET, 0)
    if computed != batch.crc:
        raise CorruptRecordError(f"record batch at byte {where}: CRC mismatch (stored"
                                 f" 0x{batch.crc:08x}, computed 0x{computed:08x})")
    batch.attributes = <uint16_t>get_int16(p + ATTRIBUTES_OFFSET)
    batch.last_offset_delta = get_int32(p + LAST_OFFSET_DELTA_OFFSET)
    batch.base_timestamp = get_int64(p + BASE_TIMESTAMP_OFFSET)
    batch.max_timestamp = get_int64(p + MAX_TIMESTAMP_OFFSET)
    batch.producer_id = get_int64(p + PRODUCER_ID_OFFSET)
    batch.producer_epoch = get_int16(p + PRODUCER_EPOCH_OFFSET)
    batch.base_sequence = get_int32(p + BASE_SEQUENCE_OFFSET)
    batch.record_count = get_int32(p + RECORDS_COUNT_OFFSET)
    if batch.record_count < 0:
        raise CorruptRecordError(f"record batch at byte {where} has a negative record count"
                                 f" {batch.record_count}")
    codec = batch.attributes & COMPRESSION_CODEC_MASK
    if codec > CODEC_ZSTD:
        raise CorruptRecordError(f"record batch at byte {where} has unknown codec {codec}")
    if codec == CODEC_NONE:
        batch.records = _decode_records(batch, p + RECORDS_OFFSET, size - RECORDS_OFFSET)
    else:
        section = PyMemoryView_FromMemory(<char*>p + RECORDS_OFFSET, size - RECORDS_OFFSET,
                                          PyBUF_READ)
        try:
            plain = decompress(codec, section, budget[0])
        finally:
            section.release()
        budget[0] -= PyBytes_GET_SIZE(plain)
        batch.records = _decode_records(batch, <const unsigned char*>PyBytes_AS_STRING(plain),
                                        PyBytes_GET_SIZE(plain))
    return batch


cdef list _read_batches(object data, object max_decompressed_bytes, bint decode):
    """Walk the concatenated batches in ``data``: the framing that iter_batches and
    check_batches share.  Per batch, _decode_batch's RecordBatch (``decode``) or _check_batch's
    (last offset delta, largest timestamp delta); both spend one ``max_decompressed_bytes``
    budget for the whole input."""
    cdef Py_buffer view
    cdef const unsigned char* p
    cdef Py_ssize_t n, pos = 0
    cdef int32_t length
    cdef list out = []
    cdef Py_ssize_t budget
    if type(max_decompressed_bytes) is not int or max_decompressed_bytes < 0:
        raise ValueError("max_decompressed_bytes must be a non-negative int, not"
                         f" {max_decompressed_bytes!r}")
    budget = min(max_decompressed_bytes, <Py_ssize_t>(SIZE_MAX >> 1))
    if not PyObject_CheckBuffer(data):
        raise TypeError(f"record batches must be a bytes-like object, got {type(data).__name__}")
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        p = <const unsigned char*>view.buf
        n = view.len
        while pos < n:
            if n - pos < RECORD_BATCH_OVERHEAD:
                raise CorruptRecordError(f"truncated record batch at byte {pos}: {n - pos} bytes"
                                         f" left, a batch header takes {RECORD_BATCH_OVERHEAD}")
            length = get_int32(p + pos + LENGTH_OFFSET)
            if length < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD:
                raise CorruptRecordError(f"record batch at byte {pos} has length {length}, less"
                                         " than its own header")
            if length > n - pos - LOG_OVERHEAD:
                raise CorruptRecordError(f"truncated record batch at byte {pos}: it says"
                                         f" {length} bytes follow, {n - pos - LOG_OVERHEAD} do")
            if decode:
                out.append(_decode_batch(p + pos, LOG_OVERHEAD + length, pos, &budget))
            else:
                out.append(_check_batch(p + pos, LOG_OVERHEAD + length, pos, &budget))
            pos += LOG_OVERHEAD + length
    finally:
        PyBuffer_Release(&view)
    return out


def iter_batches(data, max_decompressed_bytes=DEFAULT_MAX_DECOMPRESSED_BYTES):
    """Decode one or more concatenated record batches (magic v2, any codec) from a bytes-like
    object; returns an iterator of ``RecordBatch``.

    The whole input is decoded and checked (bounds, CRC-32C, varints, UTF-8 header keys) before
    the first batch is returned; anything invalid raises
    :class:`~kafkacore.errors.CorruptRecordError`.  So does input whose compressed batches
    would inflate, together, past ``max_decompressed_bytes`` (64 MiB by default): the check
    happens while decompressing, so no more than that is ever allocated.
    """
    return iter(_read_batches(data, max_decompressed_bytes, True))


def iter_records(data, max_decompressed_bytes=DEFAULT_MAX_DECOMPRESSED_BYTES):
    """Decode one or more concatenated record batches; returns an iterator of ``Record`` (every
    record of every batch, in order: ``offset``, ``timestamp``, ``timestamp_type``, ``key``,
    ``value``, ``headers``).  Errors and ``max_decompressed_bytes`` as ``iter_batches``:
    anything invalid or inflating past the limit raises
    :class:`~kafkacore.errors.CorruptRecordError`."""
    cdef list out = []
    cdef RecordBatch batch
    for batch in _read_batches(data, max_decompressed_bytes, True):
        out.extend(batch.records)
    return iter(out)


# -- checking without decoding (the broker's LogValidator) -------------------------------------
# A broker must check every byte of what it stores, but it never needs the records as Python
# objects: walking them in C with the same rules as _decode_records costs a few nanoseconds a
# record, where building a Record with its key and value bytes costs a few hundred.

# try_varint, the walk's varint reader, is declared inline in record_batch.pxd, where the Arrow
# decoder (arrow_records.pyx) finds it too.

cdef inline bint _try_skip_bytes(const unsigned char* p, Py_ssize_t end,
                                 Py_ssize_t* pos) noexcept nogil:
    cdef int64_t length
    if not try_varint(p, end, pos, 5, &length):
        return False
    if length == -1:
        return True
    if length < -1 or length > end - pos[0]:
        return False
    pos[0] += <Py_ssize_t>length
    return True


cdef bint _try_check_records(const unsigned char* p, Py_ssize_t n, int32_t record_count,
                             int64_t* last_delta, int64_t* max_ts_delta) noexcept nogil:
    """The fast path of _check_records, without the GIL: True when every record is sound and
    none has headers (a header key's UTF-8 is checked by Python's decoder, with the GIL); False
    sends the batch down the slow path, which finds the same faults and names them."""
    cdef Py_ssize_t pos = 0, rend
    cdef int64_t length, value, header_count
    cdef int32_t _i
    last_delta[0] = -1
    for _i in range(record_count):
        if not try_varint(p, n, &pos, 5, &length) or length < 1 or length > n - pos:
            return False
        rend = pos + <Py_ssize_t>length
        if p[pos] != 0:  # attributes: every bit unused
            return False
        pos += 1
        if not try_varint(p, rend, &pos, 10, &value):  # timestamp delta
            return False
        if value > max_ts_delta[0]:
            max_ts_delta[0] = value
        if not try_varint(p, rend, &pos, 5, last_delta) or last_delta[0] != _i:  # offset delta
            return False
        if not _try_skip_bytes(p, rend, &pos) or not _try_skip_bytes(p, rend, &pos):
            return False  # key, value
        if not try_varint(p, rend, &pos, 5, &header_count) or header_count != 0:
            return False
        if pos != rend:
            return False
    return pos == n


cdef int64_t _skip_bytes(const unsigned char* p, Py_ssize_t end, Py_ssize_t* pos,
                         str what, str what_length) except -2:
    """_read_bytes without the bytes: the same checks, nothing allocated."""
    cdef int64_t length = _read_varint(p, end, pos, 5, what_length)
    if length == -1:
        return -1
    if length < -1:
        raise CorruptRecordError(f"negative {what} length {length}")
    if length > end - pos[0]:
        raise CorruptRecordError(f"{what} of {length} bytes overruns its record"
                                 f" ({end - pos[0]} bytes left)")
    pos[0] += <Py_ssize_t>length
    return length


cdef int64_t _check_records(const unsigned char* p, Py_ssize_t n, int32_t record_count,
                            int64_t* max_ts_delta) except? -2:
    """Walk the ``record_count`` records in p[0:n] as _decode_records reads them, raising the
    same CorruptRecordError for the same faults; return the last record's offset delta (-1
    without records) and set ``max_ts_delta[0]`` to the largest timestamp delta (left as it
    was without records).  Sound records without headers take the fast path (no
    GIL for a large batch); anything else is walked again here, step by step, to name the
    fault."""
    cdef Py_ssize_t pos = 0, rend
    cdef int64_t length, offset_delta = -1, header_count, klen, j, ts_delta
    cdef int64_t start = max_ts_delta[0]
    cdef int32_t i
    cdef bint ok
    if n >= CRC_NOGIL_THRESHOLD:
        with nogil:
            ok = _try_check_records(p, n, record_count, &offset_delta, max_ts_delta)
    else:
        ok = _try_check_records(p, n, record_count, &offset_delta, max_ts_delta)
    if ok:
        return offset_delta
    offset_delta = -1
    max_ts_delta[0] = start
    for i in range(record_count):
        length = _read_varint(p, n, &pos, 5, "record length")
        if length < 1 or length > n - pos:
            raise CorruptRecordError(f"record {i} says it has {length} bytes, "
                                     f"{n - pos} are left in the batch")
        rend = pos + <Py_ssize_t>length
        if p[pos] != 0:
            # A record's attributes byte has no bits in use: a producer writes 0.  Refused so
            # that every reader can read what we store (kafka-python reads it as a varint).
            raise CorruptRecordError(f"record {i} has attributes 0x{p[pos]:02x}; every bit of"
                                     " a record's attributes is unused and must be 0")
        pos += 1
        ts_delta = _read_varint(p, rend, &pos, 10, "timestamp delta")
        if ts_delta > max_ts_delta[0]:
            max_ts_delta[0] = ts_delta
        offset_delta = _read_varint(p, rend, &pos, 5, "offset delta")
        if offset_delta != i:
            # A producer numbers a batch's records 0, 1, 2, ...; the broker assigns offsets by
            # the batch's base offset alone, so any other numbering would give readers
            # repeated or missing offsets (Kafka rebuilds such a batch; we refuse it).
            raise CorruptRecordError(f"record {i} has offset delta {offset_delta}; the records"
                                     " of a batch are numbered 0, 1, 2, ...")
        _skip_bytes(p, rend, &pos, "key", "key length")
        _skip_bytes(p, rend, &pos, "value", "value length")
        header_count = _read_varint(p, rend, &pos, 5, "header count")
        if header_count < 0:
            raise CorruptRecordError(f"record {i} has a negative header count {header_count}")
        j = 0
        while j < header_count:
            klen = _read_varint(p, rend, &pos, 5, "header key length")
            if klen < 0 or klen > rend - pos:
                raise CorruptRecordError(f"header key of {klen} bytes in record {i} does not fit")
            try:
                PyUnicode_DecodeUTF8(<const char*>p + pos, <Py_ssize_t>klen, NULL)
            except UnicodeDecodeError as exc:
                raise CorruptRecordError(f"header key in record {i} is not UTF-8: {exc}") from None
            pos += <Py_ssize_t>klen
            _skip_bytes(p, rend, &pos, "header value", "header value length")
            j += 1
        if pos != rend:
            raise CorruptRecordError(f"record {i} says it has {length} bytes but its fields take"
                                     f" {length - (rend - pos)}")
    if pos != n:
        raise CorruptRecordError(f"{n - pos} bytes left after the batch's {record_count}"
                                 " records")
    return offset_delta


cdef int check_batch(const unsigned char* p, Py_ssize_t size, Py_ssize_t where,
                     Py_ssize_t* budget, int64_t* last_delta, int64_t* max_ts_delta) except -1:
    """_decode_batch's checks on the batch in p[0:size]: magic, CRC, record count, codec, then
    every record (decompressed within ``budget[0]`` bytes).  Sets ``last_delta[0]`` to the last
    record's offset delta and ``max_ts_delta[0]`` to the largest record timestamp delta
    (-1 and INT64_MIN for a batch without records).  The C entry of the broker's log
    validator; the caller checked the framing (61 <= size, p[0:size] readable)."""
    cdef uint32_t stored, computed
    cdef signed char magic = <signed char>p[MAGIC_OFFSET]
    cdef int32_t record_count
    cdef int codec
    max_ts_delta[0] = INT64_MIN  # at or below every delta
    if magic != MAGIC_V2:
        raise CorruptRecordError(f"record batch at byte {where} has magic {magic};"
                                 " only magic 2 is supported")
    stored = <uint32_t>get_int32(p + CRC_OFFSET)
    computed = crc_of(p + ATTRIBUTES_OFFSET, size - ATTRIBUTES_OFFSET, 0)
    if computed != stored:
        raise CorruptRecordError(f"record batch at byte {where}: CRC mismatch (stored"
                                 f" 0x{stored:08x}, computed 0x{computed:08x})")
    record_count = get_int32(p + RECORDS_COUNT_OFFSET)
    if record_count < 0:
        raise CorruptRecordError(f"record batch at byte {where} has a negative record count"
                                 f" {record_count}")
    codec = <uint16_t>get_int16(p + ATTRIBUTES_OFFSET) & COMPRESSION_CODEC_MASK
    if codec > CODEC_ZSTD:
        raise CorruptRecordError(f"record batch at byte {where} has unknown codec {codec}")
    if codec == CODEC_NONE:
        last_delta[0] = _check_records(p + RECORDS_OFFSET, size - RECORDS_OFFSET, record_count,
                                       max_ts_delta)
    else:
        section = PyMemoryView_FromMemory(<char*>p + RECORDS_OFFSET, size - RECORDS_OFFSET,
                                          PyBUF_READ)
        try:
            plain = decompress(codec, section, budget[0])
        finally:
            section.release()
        budget[0] -= PyBytes_GET_SIZE(plain)
        last_delta[0] = _check_records(<const unsigned char*>PyBytes_AS_STRING(plain),
                                       PyBytes_GET_SIZE(plain), record_count, max_ts_delta)
    return 0


cdef tuple _check_batch(const unsigned char* p, Py_ssize_t size, Py_ssize_t where,
                        Py_ssize_t* budget):
    """check_batch's results as check_batches gives them: (the last record's offset delta,
    the largest record timestamp delta), or (-1, None) for a batch without records."""
    cdef int64_t last_delta, max_ts_delta
    check_batch(p, size, where, budget, &last_delta, &max_ts_delta)
    return (last_delta, max_ts_delta if get_int32(p + RECORDS_COUNT_OFFSET) else None)


def check_batches(data, max_decompressed_bytes=DEFAULT_MAX_DECOMPRESSED_BYTES):
    """Check one or more concatenated record batches as ``iter_batches`` would decode them —
    framing, magic, CRC-32C, codec, every record's varints and lengths, UTF-8 header keys, the
    decompression bound — without building a Python object per record.  Returns a list with,
    per batch, a pair: its last record's offset delta and its largest record timestamp delta
    (a record's timestamp is the batch's base timestamp plus its delta; Kafka's LogValidator
    sets a batch's maxTimestamp from them), ``(-1, None)`` for a batch without records; anything
    invalid raises :class:`~kafkacore.errors.CorruptRecordError` with ``iter_batches``'s
    message.  Stricter than the reader in two ways, for batches a producer wrote: records must
    be numbered 0, 1, 2, ... (a fetched batch of a compacted topic may skip numbers; a produced
    one may not), and each record's attributes byte, all of whose bits are unused, must be 0.
    The broker's log validator calls this once per partition of a Produce request."""
    return _read_batches(data, max_decompressed_bytes, False)
