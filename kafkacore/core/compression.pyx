# cython: language_level=3
"""The codecs of a record batch's records section: gzip, snappy (xerial framing), lz4 (Kafka's
frame), zstd, compressing for the builder and decompressing, within a bound, for the reader and
the broker's checks (Kafka's ``org.apache.kafka.common.compress``).
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING
from libc.stdint cimport uint32_t
from libc.string cimport memcmp

from kafkacore.core.record_format cimport *  # noqa: F403 - the format's constants

import zlib

import cramjam

from kafkacore.errors import CorruptRecordError

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


cdef int codec_of(object compression) except -1:
    if compression is None:
        return CODEC_NONE
    if not isinstance(compression, str):
        raise TypeError(f"compression must be a str, got {type(compression).__name__}")
    try:
        return CODEC_NAMES.index(compression.lower())
    except ValueError:
        raise ValueError(f"unknown compression {compression!r}; expected one of "
                         f"{', '.join(CODEC_NAMES)}") from None


cdef object check_level(int codec, object level):
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


def compress_records(int codec, data):
    """A records section compressed with ``codec`` (its number, as a batch's attributes hold
    it) at the codec's default level: the broker's log cleaner re-compresses the batches it
    rewrites with the codec they came with."""
    if codec < 0 or codec >= len(CODEC_NAMES) or codec == CODEC_NONE:
        raise ValueError(f"no compression codec {codec}")
    return bytes(compress(codec, check_level(codec, None), memoryview(data)))


cdef object compress(int codec, object level, object data):
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


cdef object decompress(int codec, object data, Py_ssize_t limit):
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
