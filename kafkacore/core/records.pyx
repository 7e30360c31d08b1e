# cython: language_level=3
#
# Record batch, magic v2 (Kafka >= 0.11), as written by the Java producer
# (org.apache.kafka.common.record.DefaultRecordBatch / DefaultRecord):
#
#   RecordBatch =>
#     BaseOffset => Int64            offset of the first record (the broker assigns it; we write 0)
#     Length => Int32                bytes after this field, up to the end of the batch
#     PartitionLeaderEpoch => Int32  set by the broker; a producer writes -1
#     Magic => Int8                  2
#     CRC => Uint32                  CRC-32C of everything from Attributes to the end
#     Attributes => Int16            bits 0-2 compression codec (0 none, 1 gzip, 2 snappy, 3 lz4,
#                                    4 zstd), bit 3 timestamp type (0 CreateTime, 1 LogAppendTime),
#                                    bit 4 transactional, bit 5 control batch
#     LastOffsetDelta => Int32       offset delta of the last record
#     BaseTimestamp => Int64         timestamp of the first record
#     MaxTimestamp => Int64          largest timestamp in the batch
#     ProducerId => Int64            -1 without idempotence
#     ProducerEpoch => Int16         -1 without idempotence
#     BaseSequence => Int32          sequence number of the first record, -1 without idempotence
#     RecordsCount => Int32          number of records
#     Records => [Record]            compressed as one block when the codec is not none
#
#   Record =>
#     Length => Varint               bytes after this field
#     Attributes => Int8             unused, 0
#     TimestampDelta => Varlong      timestamp - BaseTimestamp
#     OffsetDelta => Varint          offset - BaseOffset
#     KeyLength => Varint            -1 for a null key
#     Key => Bytes
#     ValueLength => Varint          -1 for a null value
#     Value => Bytes
#     HeaderCount => Varint
#     Headers => [Header]
#
#   Header =>
#     HeaderKeyLength => Varint
#     HeaderKey => String            UTF-8
#     HeaderValueLength => Varint    -1 for a null value
#     HeaderValue => Bytes
#
# Varints are zigzag-encoded base-128 varints (protobuf's sint32/sint64).
"""Record batches (magic v2): MemoryRecordsBuilder writes one; iter_batches/iter_records read.

``MemoryRecordsBuilder`` is Java's ``org.apache.kafka.common.record.MemoryRecordsBuilder`` for
magic v2: it reserves the 61-byte batch header, appends records uncompressed through a
:class:`~kafkacore.core.ByteBufferOutputStream`, and at ``close()`` compresses the
records section (if a codec is set), fills in the header and computes the CRC-32C.
"""

from cpython.buffer cimport (
    PyBUF_READ,
    PyBUF_SIMPLE,
    PyBuffer_Release,
    PyObject_CheckBuffer,
    PyObject_GetBuffer,
)
from cpython.bytes cimport (
    PyBytes_AS_STRING,
    PyBytes_CheckExact,
    PyBytes_FromStringAndSize,
    PyBytes_GET_SIZE,
)
from cpython.list cimport PyList_AsTuple, PyList_CheckExact
from cpython.memoryview cimport PyMemoryView_FromMemory
from cpython.tuple cimport PyTuple_CheckExact, PyTuple_GET_ITEM, PyTuple_GET_SIZE
from cpython.unicode cimport PyUnicode_Check, PyUnicode_DecodeUTF8
from libc.stdint cimport INT32_MAX, SIZE_MAX, uint16_t, uint64_t
from libc.string cimport memcmp, memcpy

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

import zlib
from collections.abc import Mapping

import cramjam

from kafkacore.errors import CorruptRecordError, IllegalStateError


cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object unicode, Py_ssize_t* size) except NULL


cdef extern from "crc32c.h" nogil:
    uint32_t kc_crc32c(uint32_t crc, const void* buf, size_t len)
    uint32_t kc_crc32c_sw(uint32_t crc, const void* buf, size_t len)
    uint32_t kc_crc32c_hw(uint32_t crc, const void* buf, size_t len)
    int kc_crc32c_hw_available()


# -- the batch header, field by field ---------------------------------------------------------
# Each offset is the previous field's offset plus its size, so the layout above is the only
# source of truth.
cdef enum:
    BASE_OFFSET_OFFSET = 0
    BASE_OFFSET_LENGTH = 8
    LENGTH_OFFSET = BASE_OFFSET_OFFSET + BASE_OFFSET_LENGTH                        # 8
    LENGTH_LENGTH = 4
    PARTITION_LEADER_EPOCH_OFFSET = LENGTH_OFFSET + LENGTH_LENGTH                 # 12
    PARTITION_LEADER_EPOCH_LENGTH = 4
    MAGIC_OFFSET = PARTITION_LEADER_EPOCH_OFFSET + PARTITION_LEADER_EPOCH_LENGTH  # 16
    MAGIC_LENGTH = 1
    CRC_OFFSET = MAGIC_OFFSET + MAGIC_LENGTH                                      # 17
    CRC_LENGTH = 4
    ATTRIBUTES_OFFSET = CRC_OFFSET + CRC_LENGTH                                   # 21
    ATTRIBUTES_LENGTH = 2
    LAST_OFFSET_DELTA_OFFSET = ATTRIBUTES_OFFSET + ATTRIBUTES_LENGTH              # 23
    LAST_OFFSET_DELTA_LENGTH = 4
    BASE_TIMESTAMP_OFFSET = LAST_OFFSET_DELTA_OFFSET + LAST_OFFSET_DELTA_LENGTH   # 27
    BASE_TIMESTAMP_LENGTH = 8
    MAX_TIMESTAMP_OFFSET = BASE_TIMESTAMP_OFFSET + BASE_TIMESTAMP_LENGTH          # 35
    MAX_TIMESTAMP_LENGTH = 8
    PRODUCER_ID_OFFSET = MAX_TIMESTAMP_OFFSET + MAX_TIMESTAMP_LENGTH              # 43
    PRODUCER_ID_LENGTH = 8
    PRODUCER_EPOCH_OFFSET = PRODUCER_ID_OFFSET + PRODUCER_ID_LENGTH               # 51
    PRODUCER_EPOCH_LENGTH = 2
    BASE_SEQUENCE_OFFSET = PRODUCER_EPOCH_OFFSET + PRODUCER_EPOCH_LENGTH          # 53
    BASE_SEQUENCE_LENGTH = 4
    RECORDS_COUNT_OFFSET = BASE_SEQUENCE_OFFSET + BASE_SEQUENCE_LENGTH            # 57
    RECORDS_COUNT_LENGTH = 4
    RECORDS_OFFSET = RECORDS_COUNT_OFFSET + RECORDS_COUNT_LENGTH                  # 61
    RECORD_BATCH_OVERHEAD = RECORDS_OFFSET
    # BaseOffset + Length: the part of the header that Length does not count.
    LOG_OVERHEAD = LENGTH_OFFSET + LENGTH_LENGTH                                  # 12

# Attribute bits.
cdef enum:
    COMPRESSION_CODEC_MASK = 0x07
    TIMESTAMP_TYPE_MASK = 0x08
    TRANSACTIONAL_FLAG_MASK = 0x10
    CONTROL_FLAG_MASK = 0x20

# Codecs (the attribute values).
cdef enum:
    CODEC_NONE = 0
    CODEC_GZIP = 1
    CODEC_SNAPPY = 2
    CODEC_LZ4 = 3
    CODEC_ZSTD = 4

cdef enum:
    MAGIC_V2 = 2
    NO_TIMESTAMP = -1
    NO_PARTITION_LEADER_EPOCH = -1
    # Java DefaultRecord.MAX_RECORD_OVERHEAD: length (5) + attributes (1) + timestampDelta (10)
    # + offsetDelta (5), everything but key, value and headers.
    MAX_RECORD_OVERHEAD = 21
    # Above this many bytes the CRC runs without the GIL (below, releasing costs more than it buys).
    CRC_NOGIL_THRESHOLD = 64 * 1024
    # xerial snappy framing (Java's SnappyOutputStream): 16-byte header, 32 KiB input blocks.
    XERIAL_HEADER_LENGTH = 16
    XERIAL_BLOCK_SIZE = 32 * 1024
    # LZ4 frame as Kafka's Lz4BlockOutputStream writes it: 64 KiB independent blocks.
    LZ4_BLOCK_SIZE = 64 * 1024
    LZ4_INCOMPRESSIBLE = 0x80000000

# Java: MemoryRecordsBuilder.COMPRESSION_RATE_ESTIMATION_FACTOR (float 1.05f); we multiply in
# float precision like Java, so the "is the batch full" decision matches the Java client.
cdef float COMPRESSION_RATE_ESTIMATION_FACTOR = 1.05

CODEC_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")
# (minimum, maximum, default) compression level per codec, as Java's compression.<codec>.level.
LEVELS = {
    "gzip": (1, 9, -1),          # -1: zlib's default (6), Java Deflater.DEFAULT_COMPRESSION
    "lz4": (1, 17, 9),
    "zstd": (-131072, 22, 3),
}
# magic 0x82 'SNAPPY' 0, version 1, minimum compatible version 1.
XERIAL_HEADER = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01"
# LZ4 frame magic (little-endian 0x184D2204), FLG 0x60 (version 1, independent blocks, no
# checksums), BD 0x40 (64 KiB blocks), header checksum byte (xxhash32 of FLG,BD >> 8 & 0xFF).
LZ4_FRAME_HEADER = b"\x04\x22\x4d\x18\x60\x40\x82"


# -- big-endian loads (the reader's counterpart of bytestream's put_*) -------------------------

cdef inline int16_t get_int16(const unsigned char* p) noexcept nogil:
    return <int16_t>((<uint16_t>p[0] << 8) | <uint16_t>p[1])


cdef inline int32_t get_int32(const unsigned char* p) noexcept nogil:
    return <int32_t>((<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8)
                     | <uint32_t>p[3])


cdef inline int64_t get_int64(const unsigned char* p) noexcept nogil:
    return <int64_t>((<uint64_t><uint32_t>get_int32(p) << 32)
                     | <uint64_t><uint32_t>get_int32(p + 4))


# -- CRC-32C --------------------------------------------------------------------------------

cdef uint32_t _crc_of(const unsigned char* p, Py_ssize_t n, uint32_t value) noexcept:
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
        return _crc_of(<const unsigned char*>view.buf, view.len, start)
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


# -- sizes (Java DefaultRecord.sizeInBytes / recordSizeUpperBound) ---------------------------

cdef inline Py_ssize_t _bytes_field_size(Py_ssize_t length) noexcept:
    """Wire size of a nullable bytes field: its varint length (-1 for null) plus its bytes."""
    if length < 0:
        return 1  # varint(-1) is one byte
    return varint_size(<int32_t>length) + length


cdef Py_ssize_t _length_of(object obj, str what) except -2:
    """Byte length of a bytes-like ``obj``, -1 for None; TypeError naming ``what`` otherwise."""
    cdef Py_buffer view
    cdef Py_ssize_t n
    if obj is None:
        return -1
    if PyBytes_CheckExact(obj):
        return PyBytes_GET_SIZE(obj)
    if not PyObject_CheckBuffer(obj):
        raise TypeError(f"{what} must be bytes-like or None, got {type(obj).__name__}")
    try:
        PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE)
    except BufferError as exc:
        raise TypeError(f"{what} must be a contiguous bytes-like object: {exc}") from None
    n = view.len
    PyBuffer_Release(&view)
    return n


cdef object _header_value(object value):
    """A header value as the builder writes it: None, or bytes (str as UTF-8)."""
    if value is None or PyBytes_CheckExact(value):
        return value
    if PyUnicode_Check(value):
        return (<str>value).encode("utf-8")
    return bytes(value)


cdef tuple _normalize_headers(object headers, Py_ssize_t* size):
    """Headers as an immutable tuple of ``(str, bytes | None)`` tuples, and (in ``size[0]``)
    their wire size without the count; TypeError / ValueError on bad input.

    Immutable on purpose: between sizing a record and writing it, an allocation may run a
    finalizer, which could mutate a list the caller handed us; a tuple of str and bytes cannot
    change, so what we write is what we sized.  Well-formed input costs one tuple (none for a
    tuple of tuples); header keys are encoded once, the UTF-8 cached in the str object itself.
    """
    cdef tuple seq
    cdef Py_ssize_t i, count, n, total = 0
    cdef bint copy = False
    if PyTuple_CheckExact(headers):
        seq = <tuple>headers
    elif PyList_CheckExact(headers):
        seq = PyList_AsTuple(headers)
    elif isinstance(headers, Mapping):
        # confluent-kafka's form: {name: value}, in the mapping's order.
        seq = tuple(headers.items())
    else:
        if isinstance(headers, (str, bytes, bytearray)):
            raise TypeError("headers must be a sequence of (str, bytes | None) pairs, got "
                            f"{type(headers).__name__}")
        try:
            seq = tuple(headers)
        except TypeError:
            raise TypeError("headers must be a sequence of (str, bytes | None) pairs, got "
                            f"{type(headers).__name__}") from None
    count = PyTuple_GET_SIZE(seq)
    for i in range(count):
        item = <object>PyTuple_GET_ITEM(seq, i)
        if PyTuple_CheckExact(item) and PyTuple_GET_SIZE(item) == 2:
            key = <object>PyTuple_GET_ITEM(item, 0)
            value = <object>PyTuple_GET_ITEM(item, 1)
        elif PyList_CheckExact(item) and len(item) == 2:
            key = item[0]
            value = item[1]
            copy = True
        else:
            raise TypeError(f"headers[{i}] must be a (str, bytes | None) pair, got {item!r:.80}")
        if not PyUnicode_Check(key):
            raise TypeError(f"headers[{i}] key must be str, got {type(key).__name__}")
        try:
            PyUnicode_AsUTF8AndSize(key, &n)
        except UnicodeEncodeError as exc:
            raise ValueError(f"headers[{i}] key cannot be encoded as UTF-8: {exc}") from None
        total += _bytes_field_size(n)
        if value is None:
            total += 1
        elif PyBytes_CheckExact(value):
            total += _bytes_field_size(PyBytes_GET_SIZE(value))
        elif PyUnicode_Check(value):
            # A str value is sent as UTF-8, as confluent-kafka does (the encoding is cached in
            # the str object: measured here, taken again by the copy below).
            try:
                PyUnicode_AsUTF8AndSize(value, &n)
            except UnicodeEncodeError as exc:
                raise ValueError(f"headers[{i}] value cannot be encoded as UTF-8: {exc}") from None
            total += _bytes_field_size(n)
            copy = True
        else:
            total += _bytes_field_size(_length_of(value, f"headers[{i}] value"))
            copy = True
    if copy:
        seq = tuple([(item[0], _header_value(item[1])) for item in seq])
    size[0] = total
    return seq


def normalize_headers(object headers):
    """``headers`` (None or any iterable of ``(str, bytes | None)`` pairs) as the immutable
    tuple of pairs the builder writes, or None.  ``send()`` calls it once, before it sizes the
    record and before it takes any lock: a headers iterable is user code, run exactly once and
    never under a partition lock, and what is sized is what is written."""
    cdef Py_ssize_t size
    if headers is None:
        return None
    return _normalize_headers(headers, &size)


cdef Py_ssize_t estimate_size_upper_bound_raw(Py_ssize_t klen, Py_ssize_t vlen,
                                              Py_ssize_t headers_size) noexcept:
    """``estimate_size_upper_bound`` from sizes (-1: null), headers already sized (1 if none)."""
    return (RECORD_BATCH_OVERHEAD + MAX_RECORD_OVERHEAD + _bytes_field_size(klen)
            + _bytes_field_size(vlen) + headers_size)


cpdef Py_ssize_t estimate_size_upper_bound(object key, object value, object headers=None) except -1:
    """Upper bound of the size of a batch holding just this record (Java
    ``AbstractRecords.estimateSizeInBytesUpperBound`` for magic v2): the 61-byte batch header, the
    record's worst-case overhead (21 bytes) and its key, value and headers.

    The producer compares it with ``max.request.size`` and ``buffer.memory`` at ``send()``.
    """
    cdef Py_ssize_t size = RECORD_BATCH_OVERHEAD + MAX_RECORD_OVERHEAD, hsize
    cdef tuple hs
    size += _bytes_field_size(_length_of(key, "key"))
    size += _bytes_field_size(_length_of(value, "value"))
    if headers is None:
        size += 1
    else:
        hs = _normalize_headers(headers, &hsize)
        size += varint_size(<int32_t>len(hs)) + hsize
    return size


# -- compression ----------------------------------------------------------------------------

cdef int _codec_of(object compression) except -1:
    if compression is None:
        return CODEC_NONE
    if not isinstance(compression, str):
        raise TypeError(f"compression must be a str, got {type(compression).__name__}")
    try:
        return CODEC_NAMES.index(compression.lower())
    except ValueError:
        raise ValueError(f"unknown compression {compression!r}; expected one of "
                         f"{', '.join(CODEC_NAMES)}") from None


cdef object _check_level(int codec, object level):
    """The level to use for ``codec`` (None: the codec's default); ValueError if out of range."""
    cdef str name = CODEC_NAMES[codec]
    if level is None:
        return LEVELS[name][2] if name in LEVELS else None
    if isinstance(level, bool) or not isinstance(level, int):
        raise TypeError(f"compression_level must be an int or None, got {type(level).__name__}")
    if name not in LEVELS:
        raise ValueError(f"compression {name!r} takes no compression_level (got {level})")
    lo, hi, default = LEVELS[name]
    if level != default and not (lo <= level <= hi):
        raise ValueError(f"compression_level {level} out of range for {name}: {lo}..{hi}"
                         + (f" or {default}" if default < lo else ""))
    return level


cdef object _compress(int codec, object level, object data):
    """Compress the records section ``data`` (a memoryview) the way the Java producer frames it.

    zlib and cramjam release the GIL while they work on large inputs.
    """
    cdef Py_ssize_t n = len(data), i, end
    if codec == CODEC_GZIP:
        # wbits 31: the gzip format (header, deflate, CRC-32, size), as Java's GZIPOutputStream.
        c = zlib.compressobj(level, zlib.DEFLATED, 31)
        return c.compress(data) + c.flush()
    if codec == CODEC_SNAPPY:
        out = bytearray(XERIAL_HEADER)
        i = 0
        while i < n:
            end = min(i + XERIAL_BLOCK_SIZE, n)
            block = cramjam.snappy.compress_raw(data[i:end])
            out += (<uint32_t>len(block)).to_bytes(4, "big")
            out += block
            i = end
        return out
    if codec == CODEC_LZ4:
        out = bytearray(LZ4_FRAME_HEADER)
        i = 0
        while i < n:
            end = min(i + LZ4_BLOCK_SIZE, n)
            chunk = data[i:end]
            if level == 9:
                # Java uses lz4-java's fast compressor for the default level, HC otherwise.
                block = cramjam.lz4.compress_block(chunk, store_size=False)
            else:
                block = cramjam.lz4.compress_block(chunk, mode="high_compression",
                                                   compression=level, store_size=False)
            if len(block) >= end - i:
                # Incompressible: store the block raw, flagged by the top bit of its length.
                out += (<uint32_t>(end - i) | LZ4_INCOMPRESSIBLE).to_bytes(4, "little")
                out += chunk
            else:
                out += (<uint32_t>len(block)).to_bytes(4, "little")
                out += block
            i = end
        out += b"\x00\x00\x00\x00"  # end mark; no content checksum (Java writes none)
        return out
    if codec == CODEC_ZSTD:
        return cramjam.zstd.compress(data, level=level)
    raise ValueError(f"unknown codec {codec}")


# A reader's default bound on the bytes that decompression may produce in one call: a batch of
# a few KiB can inflate to GiB (a "zip bomb"), and the broker decompresses what any client sends.
# Kafka's own limits are on the compressed sizes (message.max.bytes, fetch.max.bytes: 1 MiB and
# 50 MiB by default); 64 MiB of records out leaves room for any batch of sane size.
DEFAULT_MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024


cdef object _too_large(int codec, Py_ssize_t limit):
    return CorruptRecordError(f"{CODEC_NAMES[codec]} records inflate past the reader's limit of"
                              f" {limit} bytes (max_decompressed_bytes)")


cdef object _decompress(int codec, object data, Py_ssize_t limit):
    """Decompress a records section (a memoryview) into at most ``limit`` bytes;
    CorruptRecordError if it is not valid or would inflate past the limit.  The limit holds
    while decompressing: no more than it is ever allocated."""
    try:
        if codec == CODEC_GZIP:
            return _gzip_decompress(data, limit)
        if codec == CODEC_SNAPPY:
            return _snappy_decompress(data, limit)
        if codec == CODEC_LZ4:
            return _bounded_decompress(cramjam.lz4.decompress_into, codec, data, limit)
        if codec == CODEC_ZSTD:
            return _bounded_decompress(cramjam.zstd.decompress_into, codec, data, limit)
    except CorruptRecordError:
        raise
    except Exception as exc:
        raise CorruptRecordError(f"cannot decompress {CODEC_NAMES[codec]} records: {exc}") from exc
    raise CorruptRecordError(f"unknown compression codec {codec} in record batch attributes")


cdef object _gzip_decompress(object data, Py_ssize_t limit):
    cdef Py_ssize_t total = 0
    out = []
    d = zlib.decompressobj(47)  # 32 + 15: gzip or zlib header, detected
    pending = data
    while True:
        # max_length: zlib stops there and keeps the rest of the input in unconsumed_tail.
        chunk = d.decompress(pending, limit - total + 1)
        total += len(chunk)
        if total > limit:
            raise _too_large(CODEC_GZIP, limit)
        out.append(chunk)
        if d.eof:
            if not d.unused_data:
                break
            # Concatenated gzip members are valid gzip (GZIPInputStream reads them all).
            pending = d.unused_data
            d = zlib.decompressobj(47)
        elif d.unconsumed_tail or chunk:
            pending = d.unconsumed_tail
        else:
            break  # no input left and no progress: truncated
    if not d.eof:
        raise CorruptRecordError("truncated gzip stream in record batch")
    return b"".join(out)


cdef object _bounded_decompress(object decompress_into, int codec, object data,
                                Py_ssize_t limit):
    """A whole-frame codec (lz4, zstd) into an output buffer that grows by doubling up to
    ``limit``: the codec stops with an error when the buffer is full, so a bomb costs at most
    ``limit`` bytes, and an honest batch a buffer at most twice its size."""
    cdef Py_ssize_t size = max(<Py_ssize_t>65536, 4 * len(data))
    out = None
    while True:
        if size > limit:
            size = limit
        out = None  # the old buffer goes before the new one comes: at most ``limit`` held
        out = bytearray(size)
        try:
            n = decompress_into(data, out)
        except Exception as exc:
            # Rust's write_all: the output buffer is full and there is more.  Anything else is
            # a bad stream, said at once (no growing for it).
            if "failed to write whole buffer" not in str(exc):
                raise
            if size >= limit:
                raise _too_large(codec, limit) from None
            size *= 2
            continue
        return bytes(memoryview(out)[:n])


cdef object _snappy_decompress(object data, Py_ssize_t limit):
    """xerial-framed snappy (what the Java producer writes) or a raw snappy block; each block
    declares its length up front, so the limit is checked before decompressing it."""
    cdef Py_buffer view
    cdef const unsigned char* p
    cdef Py_ssize_t n, pos, total = 0
    cdef int32_t block_len
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        p = <const unsigned char*>view.buf
        n = view.len
        if n < XERIAL_HEADER_LENGTH or memcmp(p, PyBytes_AS_STRING(XERIAL_HEADER), 8) != 0:
            if cramjam.snappy.decompress_raw_len(data) > limit:
                raise _too_large(CODEC_SNAPPY, limit)
            return bytes(cramjam.snappy.decompress_raw(data))
        out = []
        pos = XERIAL_HEADER_LENGTH
        while pos < n:
            if n - pos < 4:
                raise CorruptRecordError("truncated xerial snappy block length")
            block_len = get_int32(p + pos)
            pos += 4
            if block_len < 0 or block_len > n - pos:
                raise CorruptRecordError(f"xerial snappy block of {block_len} bytes at {pos}"
                                         f" overruns the {n}-byte records section")
            block = data[pos:pos + block_len]
            total += cramjam.snappy.decompress_raw_len(block)
            if total > limit:
                raise _too_large(CODEC_SNAPPY, limit)
            out.append(bytes(cramjam.snappy.decompress_raw(block)))
            pos += block_len
        return b"".join(out)
    finally:
        PyBuffer_Release(&view)


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
            + _bytes_field_size(klen) + _bytes_field_size(vlen)
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
        self._compression_type = _codec_of(compression)
        self._compression_level = _check_level(self._compression_type, compression_level)
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
                hs = _normalize_headers(headers, &hsize)
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
            hs = _normalize_headers(headers, &hsize)
            hcount = PyTuple_GET_SIZE(hs)
        if self._num_records > 0 and (
                self.is_full() or not self._fits(timestamp_ms, klen, vlen, hcount, hsize)):
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
        cdef Py_ssize_t klen = _length_of(key, "key")
        cdef Py_ssize_t vlen = _length_of(value, "value")
        if headers is not None:
            hs = _normalize_headers(headers, &hsize)
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
            + varint_size(self._num_records) + _bytes_field_size(klen)
            + _bytes_field_size(vlen) + varint_size(<int32_t>hcount) + hsize)
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
                compressed = _compress(self._compression_type, self._compression_level, section)
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
        put_int32(p + CRC_OFFSET, <int32_t>_crc_of(p + ATTRIBUTES_OFFSET,
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


def _append_loop(MemoryRecordsBuilder builder not None, Py_ssize_t n, int64_t timestamp_ms,
                 key, value, headers=None):
    """Benchmark hook: ``builder.append(...)`` ``n`` times, called from C the way batch.pyx calls
    it (a direct C call per record, no Python call).  Returns the last offset delta."""
    cdef Py_ssize_t _i
    cdef int last = -1
    for _i in range(n):
        last = builder.append(timestamp_ms, key, value, headers)
    return last


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
    computed = _crc_of(p + ATTRIBUTES_OFFSET, size - ATTRIBUTES_OFFSET, 0)
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
            plain = _decompress(codec, section, budget[0])
        finally:
            section.release()
        budget[0] -= PyBytes_GET_SIZE(plain)
        batch.records = _decode_records(batch, <const unsigned char*>PyBytes_AS_STRING(plain),
                                        PyBytes_GET_SIZE(plain))
    return batch


cdef list _read_batches(object data, object max_decompressed_bytes, bint decode):
    """Walk the concatenated batches in ``data``: the framing that iter_batches and
    check_batches share.  Per batch, _decode_batch's RecordBatch (``decode``) or _check_batch's
    last offset delta; both spend one ``max_decompressed_bytes`` budget for the whole input."""
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

cdef inline bint _try_varint(const unsigned char* p, Py_ssize_t end, Py_ssize_t* pos,
                             int max_bytes, int64_t* out) noexcept nogil:
    """_read_varint's rules without the GIL: False wherever _read_varint would raise."""
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


cdef inline bint _try_skip_bytes(const unsigned char* p, Py_ssize_t end,
                                 Py_ssize_t* pos) noexcept nogil:
    cdef int64_t length
    if not _try_varint(p, end, pos, 5, &length):
        return False
    if length == -1:
        return True
    if length < -1 or length > end - pos[0]:
        return False
    pos[0] += <Py_ssize_t>length
    return True


cdef bint _try_check_records(const unsigned char* p, Py_ssize_t n, int32_t record_count,
                             int64_t* last_delta) noexcept nogil:
    """The fast path of _check_records, without the GIL: True when every record is sound and
    none has headers (a header key's UTF-8 is checked by Python's decoder, with the GIL); False
    sends the batch down the slow path, which finds the same faults and names them."""
    cdef Py_ssize_t pos = 0, rend
    cdef int64_t length, value, header_count
    cdef int32_t _i
    last_delta[0] = -1
    for _i in range(record_count):
        if not _try_varint(p, n, &pos, 5, &length) or length < 1 or length > n - pos:
            return False
        rend = pos + <Py_ssize_t>length
        if p[pos] != 0:  # attributes: every bit unused
            return False
        pos += 1
        if not _try_varint(p, rend, &pos, 10, &value):  # timestamp delta
            return False
        if not _try_varint(p, rend, &pos, 5, last_delta) or last_delta[0] != _i:  # offset delta
            return False
        if not _try_skip_bytes(p, rend, &pos) or not _try_skip_bytes(p, rend, &pos):
            return False  # key, value
        if not _try_varint(p, rend, &pos, 5, &header_count) or header_count != 0:
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


cdef int64_t _check_records(const unsigned char* p, Py_ssize_t n,
                            int32_t record_count) except? -2:
    """Walk the ``record_count`` records in p[0:n] as _decode_records reads them, raising the
    same CorruptRecordError for the same faults; return the last record's offset delta (-1
    without records).  Sound records without headers take the fast path (no GIL for a large
    batch); anything else is walked again here, step by step, to name the fault."""
    cdef Py_ssize_t pos = 0, rend
    cdef int64_t length, offset_delta = -1, header_count, klen, j
    cdef int32_t i
    cdef bint ok
    if n >= CRC_NOGIL_THRESHOLD:
        with nogil:
            ok = _try_check_records(p, n, record_count, &offset_delta)
    else:
        ok = _try_check_records(p, n, record_count, &offset_delta)
    if ok:
        return offset_delta
    offset_delta = -1
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
        _read_varint(p, rend, &pos, 10, "timestamp delta")
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


cdef int64_t _check_batch(const unsigned char* p, Py_ssize_t size, Py_ssize_t where,
                          Py_ssize_t* budget) except? -2:
    """_decode_batch's checks on the batch in p[0:size]: magic, CRC, record count, codec, then
    every record (decompressed within ``budget[0]`` bytes).  Returns the last record's offset
    delta, or -1 for a batch without records."""
    cdef uint32_t stored, computed
    cdef signed char magic = <signed char>p[MAGIC_OFFSET]
    cdef int32_t record_count
    cdef int codec
    if magic != MAGIC_V2:
        raise CorruptRecordError(f"record batch at byte {where} has magic {magic};"
                                 " only magic 2 is supported")
    stored = <uint32_t>get_int32(p + CRC_OFFSET)
    computed = _crc_of(p + ATTRIBUTES_OFFSET, size - ATTRIBUTES_OFFSET, 0)
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
        return _check_records(p + RECORDS_OFFSET, size - RECORDS_OFFSET, record_count)
    section = PyMemoryView_FromMemory(<char*>p + RECORDS_OFFSET, size - RECORDS_OFFSET,
                                      PyBUF_READ)
    try:
        plain = _decompress(codec, section, budget[0])
    finally:
        section.release()
    budget[0] -= PyBytes_GET_SIZE(plain)
    return _check_records(<const unsigned char*>PyBytes_AS_STRING(plain),
                          PyBytes_GET_SIZE(plain), record_count)


def check_batches(data, max_decompressed_bytes=DEFAULT_MAX_DECOMPRESSED_BYTES):
    """Check one or more concatenated record batches as ``iter_batches`` would decode them —
    framing, magic, CRC-32C, codec, every record's varints and lengths, UTF-8 header keys, the
    decompression bound — without building a Python object per record.  Returns a list with,
    per batch, its last record's offset delta (-1 for a batch without records); anything
    invalid raises :class:`~kafkacore.errors.CorruptRecordError` with ``iter_batches``'s
    message.  Stricter than the reader in two ways, for batches a producer wrote: records must
    be numbered 0, 1, 2, ... (a fetched batch of a compacted topic may skip numbers; a produced
    one may not), and each record's attributes byte, all of whose bits are unused, must be 0.
    The broker's log validator calls this once per partition of a Produce request."""
    return _read_batches(data, max_decompressed_bytes, False)
