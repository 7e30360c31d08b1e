"""Record batches (magic v2): CRC-32C, MemoryRecordsBuilder, iter_batches / iter_records.

The oracles are record readers and writers somebody else wrote: kafka-python's
``kafka.record.default_records`` and aiokafka's compiled ``aiokafka.record`` (plus the python-lz4,
python-snappy and zstandard libraries for the codec framings).
"""

from __future__ import annotations

import gzip
import importlib
import os
import random
import re
import struct

import pytest
from aiokafka.record.default_records import DefaultRecordBatch as AioBatch
from aiokafka.record.default_records import DefaultRecordBatchBuilder as AioBuilder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.codec import snappy_decode
from kafka.record import _crc32c as kafka_crc32c
from kafka.record.default_records import DefaultRecordBatch as KafkaBatch
from kafka.record.default_records import DefaultRecordBatchBuilder as KafkaBuilder
from support.examples import examples

from kafkacore.core.bytestream import ByteBufferOutputStream
from kafkacore.core.crc import _crc32c_impl, crc32c, crc32c_uses_hardware
from kafkacore.core.memory_records_builder import MemoryRecordsBuilder
from kafkacore.core.record_batch import (
    Record,
    RecordBatch,
    check_batches,
    iter_batches,
    iter_records,
)
from kafkacore.core.record_sizes import estimate_size_upper_bound
from kafkacore.errors import CorruptRecordError, IllegalStateError

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def codec_library(module: str):
    """python-lz4, python-snappy or zstandard: oracles for the codec framings (test extras).

    Imported per test, so that a missing one fails the tests that need it, with this message,
    instead of the whole module (kafka-python needs them too, for its snappy/lz4/zstd batches).
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - an environment problem, reported clearly
        pytest.fail(f"{module} is needed for this test (pip install lz4 zstandard python-snappy):"
                    f" {exc}")
CODEC_IDS = {name: i for i, name in enumerate(CODECS)}
TS = 1_700_000_000_000


def oracle_crc(data) -> int:
    return kafka_crc32c.crc(bytes(data))


# -- CRC-32C ---------------------------------------------------------------------------------

# RFC 3720 (iSCSI) appendix B.4 test vectors and the usual check value.
CRC_VECTORS = [
    (b"", 0x00000000),
    (b"123456789", 0xE3069283),
    (bytes(32), 0x8A9136AA),
    (b"\xff" * 32, 0x62A8AB43),
    (bytes(range(32)), 0x46DD794E),
    (bytes(range(31, -1, -1)), 0x113FDB5C),
]


@pytest.mark.parametrize("data,expected", CRC_VECTORS)
@pytest.mark.parametrize("impl", ["default", "sw", "hw"])
def test_crc32c_vectors(data, expected, impl):
    got = crc32c(data) if impl == "default" else _crc32c_impl(data, impl)
    assert got == expected


def test_crc32c_continues_like_zlib_crc32():
    data = os.urandom(1000)
    assert crc32c(data[400:], crc32c(data[:400])) == crc32c(data)


@settings(max_examples=examples(200), deadline=None)
@given(st.binary(max_size=3000), st.integers(0, 15))
def test_crc32c_sw_hw_and_oracle_agree(data, offset):
    # Offsets move the start off 8-byte alignment, where the SSE4.2 path has a head loop.
    buf = memoryview(bytes(offset) + data)[offset:]
    expected = oracle_crc(data)
    assert crc32c(buf) == expected
    assert _crc32c_impl(buf, "sw") == expected
    assert _crc32c_impl(buf, "hw") == expected


@pytest.mark.parametrize(
    "size",
    [3 * 256 - 1, 3 * 256, 3 * 256 + 7, 3 * 8192 - 1, 3 * 8192, 3 * 8192 + 3 * 256 + 9,
     64 * 1024 - 1, 64 * 1024, 1 << 20],
)
def test_crc32c_around_interleave_and_gil_thresholds(size):
    data = random.Random(size).randbytes(size)
    expected = oracle_crc(data)
    assert crc32c(data) == expected
    assert _crc32c_impl(data, "sw") == expected
    assert _crc32c_impl(data, "hw") == expected


def test_crc32c_reports_its_implementation():
    assert isinstance(crc32c_uses_hardware(), bool)


def test_crc32c_accepts_any_buffer():
    assert crc32c(bytearray(b"123456789")) == 0xE3069283
    assert crc32c(memoryview(b"xx123456789")[2:]) == 0xE3069283


@pytest.mark.parametrize("bad", ["123456789", 5, None, [1]])
def test_crc32c_bad_data(bad):
    with pytest.raises(TypeError):
        crc32c(bad)


@pytest.mark.parametrize("bad", [-1, 2**32, 2**64])
def test_crc32c_bad_start_value(bad):
    with pytest.raises(ValueError):
        crc32c(b"x", bad)
    with pytest.raises(TypeError):
        crc32c(b"x", "0")


# -- strategies ------------------------------------------------------------------------------

nullable_bytes = st.one_of(st.none(), st.binary(max_size=200))
header_keys = st.text(max_size=12)  # unicode, including the empty key
headers_st = st.lists(st.tuples(header_keys, nullable_bytes), max_size=4)
records_st = st.lists(
    st.tuples(
        st.integers(0, 10_000_000),  # timestamp offset from TS (a batch may hold older records)
        nullable_bytes,
        nullable_bytes,
        headers_st,
    ),
    min_size=1,
    max_size=40,
)


def build_ours(records, compression="none", **kwargs) -> bytes:
    builder = MemoryRecordsBuilder(kwargs.pop("capacity", 1024), compression=compression, **kwargs)
    for i, (dt, key, value, headers) in enumerate(records):
        assert builder.append(TS + dt, key, value, headers) == i
    return bytes(builder.build())


def as_tuples(decoded):
    return [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in decoded]


def expected_tuples(records):
    return [(i, TS + dt, k, v, list(h)) for i, (dt, k, v, h) in enumerate(records)]


# -- byte-for-byte against kafka-python's and aiokafka's builders ------------------------------


@settings(max_examples=examples(60), deadline=None)
@given(records_st, st.booleans())
def test_uncompressed_batch_is_byte_identical_to_kafka_python(records, idempotent):
    pid, epoch, seq = (4242, 7, 1000) if idempotent else (-1, -1, -1)
    theirs = KafkaBuilder(magic=2, compression_type=0, is_transactional=False,
                          producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                          batch_size=1 << 30)
    for i, (dt, key, value, headers) in enumerate(records):
        theirs.append(i, TS + dt, key, value, headers)
    # kafka-python writes partition leader epoch 0 where Java writes -1; match it for the check.
    ours = build_ours(records, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                      partition_leader_epoch=0)
    assert ours == bytes(theirs.build())


@settings(max_examples=examples(40), deadline=None)
@given(records_st)
def test_uncompressed_batch_is_byte_identical_to_aiokafka(records):
    theirs = AioBuilder(magic=2, compression_type=0, is_transactional=0, producer_id=-1,
                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 30)
    for i, (dt, key, value, headers) in enumerate(records):
        theirs.append(i, TS + dt, key, value, headers)
    # aiokafka writes partition leader epoch -1, as the Java producer and we do by default.
    ours = build_ours(records)
    assert ours == bytes(theirs.build())


def test_transactional_header_fields_read_by_kafka_python():
    builder = MemoryRecordsBuilder(256, compression="gzip", base_offset=0, producer_id=99,
                                   producer_epoch=3, base_sequence=17, is_transactional=True)
    builder.append(TS + 5, b"k", b"v")
    builder.append(TS, None, b"v2")
    builder.append(TS + 9, b"k3", None, [("trace", b"1")])
    data = bytes(builder.build())
    batch = KafkaBatch(data)
    assert batch.validate_crc()
    assert (batch.base_offset, batch.magic, batch.leader_epoch) == (0, 2, -1)
    assert batch.compression_type == 1 and batch.is_transactional and not batch.is_control_batch
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (99, 3, 17)
    assert (batch.first_timestamp, batch.max_timestamp) == (TS + 5, TS + 9)
    assert (batch.last_offset_delta, batch.records_count) == (2, 3)
    assert batch.size_in_bytes == len(data)


# -- round trips: ours -> their readers --------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=records_st)
def test_ours_read_by_kafka_python_and_aiokafka(codec, records):
    data = build_ours(records, codec)
    expected = expected_tuples(records)
    kbatch = KafkaBatch(data)
    assert kbatch.validate_crc()
    assert kbatch.compression_type == CODEC_IDS[codec]
    assert as_tuples(kbatch) == expected
    abatch = AioBatch(data)
    assert abatch.validate_crc()
    assert abatch.compression_type == CODEC_IDS[codec]
    assert as_tuples(abatch) == expected
    assert as_tuples(iter_records(data)) == expected


@pytest.mark.parametrize("codec", CODECS)
def test_large_values_round_trip(codec):
    rnd = random.Random(1)
    big = rnd.randbytes(1 << 20)  # incompressible 1 MiB
    compressible = b"0123456789" * 100_000
    records = [(0, b"big", big, []), (1, None, compressible, [("h", big[:1000])]),
               (2, b"", b"", [])]
    builder = MemoryRecordsBuilder(bytearray(16384), compression=codec)
    for dt, key, value, headers in records:
        builder.append(TS + dt, key, value, headers)
    assert builder.buffer is not None and builder.initial_capacity == 16384
    data = bytes(builder.build())
    expected = expected_tuples(records)
    assert as_tuples(AioBatch(data)) == expected
    assert as_tuples(KafkaBatch(data)) == expected
    assert as_tuples(iter_records(data)) == expected


# -- round trips: their writers -> our reader ------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=records_st, idempotent=st.booleans())
def test_their_batches_read_by_us(codec, records, idempotent):
    pid, epoch, seq = (77, 1, 5) if idempotent else (-1, -1, -1)
    for Builder in (KafkaBuilder, AioBuilder):
        theirs = Builder(magic=2, compression_type=CODEC_IDS[codec], is_transactional=False,
                         producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                         batch_size=1 << 30)
        for i, (dt, key, value, headers) in enumerate(records):
            theirs.append(i, TS + dt, key, value, headers)
        data = bytes(theirs.build())
        (batch,) = list(iter_batches(data))
        assert isinstance(batch, RecordBatch)
        assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (pid, epoch, seq)
        assert batch.record_count == len(records)
        assert batch.crc == oracle_crc(data[21:])
        assert as_tuples(batch.records) == expected_tuples(records)


def test_several_concatenated_batches():
    a = build_ours([(0, b"a", b"1", [])], "gzip")
    b = build_ours([(1, b"b", b"2", []), (2, b"c", b"3", [])], "none")
    c = build_ours([(3, None, b"4", [("x", None)])], "zstd")
    batches = list(iter_batches(a + b + c))
    assert [bt.record_count for bt in batches] == [1, 2, 1]
    assert [bt.compression for bt in batches] == ["gzip", "none", "zstd"]
    assert [r.value for r in iter_records(a + b + c)] == [b"1", b"2", b"3", b"4"]


# -- codec framing, checked with the codecs' own libraries -----------------------------------


def records_section(data: bytes) -> bytes:
    return data[61:]


def plain_section(records) -> bytes:
    return records_section(build_ours(records, "none"))


SAMPLE = [(i, b"key-%d" % i, b"value %d " % i * 20, [("h", b"v")]) for i in range(300)]


def test_gzip_section_is_a_gzip_stream():
    data = build_ours(SAMPLE, "gzip")
    assert records_section(data)[:2] == b"\x1f\x8b"
    assert gzip.decompress(records_section(data)) == plain_section(SAMPLE)


@pytest.mark.parametrize("level", [1, 9, -1])
def test_gzip_levels(level):
    data = build_ours(SAMPLE, "gzip", compression_level=level)
    assert gzip.decompress(records_section(data)) == plain_section(SAMPLE)


def test_snappy_section_is_xerial_framed():
    big = [(0, None, random.Random(2).randbytes(100_000), [])]  # several 32 KiB blocks
    for records in (SAMPLE, big):
        section = records_section(build_ours(records, "snappy"))
        assert section[:16] == b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01"
        assert snappy_decode(section) == plain_section(records)
    # every block holds at most 32 KiB of input, like Java's SnappyOutputStream
    section = records_section(build_ours(big, "snappy"))
    pos, blocks = 16, []
    while pos < len(section):
        (n,) = struct.unpack_from(">i", section, pos)
        blocks.append(len(codec_library("snappy").uncompress(section[pos + 4:pos + 4 + n])))
        pos += 4 + n
    assert pos == len(section)
    assert blocks[:-1] == [32 * 1024] * (len(blocks) - 1)


@pytest.mark.parametrize("level", [None, 1, 9, 12, 17])
def test_lz4_section_is_kafkas_frame(level):
    big = [(0, b"k", random.Random(3).randbytes(70_000) + b"z" * 70_000, [])]
    for records in (SAMPLE, big):
        section = records_section(build_ours(records, "lz4", compression_level=level))
        # magic, FLG 0x60 (independent blocks, no checksums), BD 0x40 (64 KiB), header checksum
        assert section[:7] == bytes.fromhex("04224d18604082")
        assert codec_library("lz4.frame").decompress(section) == plain_section(records)


@pytest.mark.parametrize("level", [None, -5, 1, 3, 19])
def test_zstd_section(level):
    section = records_section(build_ours(SAMPLE, "zstd", compression_level=level))
    zstandard = codec_library("zstandard")
    assert zstandard.ZstdDecompressor().decompressobj().decompress(section) == \
        plain_section(SAMPLE)


def reframe(data: bytes, codec: str, section: bytes) -> bytes:
    """Our uncompressed batch re-packed with another records section, length and CRC fixed."""
    header = bytearray(data[:61])
    struct.pack_into(">i", header, 8, 61 + len(section) - 12)
    attributes = (struct.unpack_from(">h", header, 21)[0] & ~7) | CODEC_IDS[codec]
    struct.pack_into(">h", header, 21, attributes)
    body = bytes(header[21:]) + section
    struct.pack_into(">I", header, 17, oracle_crc(body))
    return bytes(header) + section


def test_reader_takes_raw_snappy_and_streaming_zstd_and_gzip_members():
    plain_batch = build_ours(SAMPLE, "none")
    plain = records_section(plain_batch)
    expected = expected_tuples(SAMPLE)
    snappy, zstandard = codec_library("snappy"), codec_library("zstandard")
    raw_snappy = reframe(plain_batch, "snappy", snappy.compress(plain))
    assert as_tuples(iter_records(raw_snappy)) == expected
    # zstd frame without a content size, as a streaming writer (Java's zstd-jni) produces.
    zc = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    zstd_stream = reframe(plain_batch, "zstd", zc.compress(plain) + zc.flush())
    assert as_tuples(iter_records(zstd_stream)) == expected
    # two gzip members back to back are one valid gzip stream
    half = len(plain) // 2
    members = gzip.compress(plain[:half]) + gzip.compress(plain[half:])
    assert as_tuples(iter_records(reframe(plain_batch, "gzip", members))) == expected
    # lz4 frame written by python-lz4 with checksums and linked blocks is still a frame
    framed = codec_library("lz4.frame").compress(plain, content_checksum=True, block_checksum=True)
    assert as_tuples(iter_records(reframe(plain_batch, "lz4", framed))) == expected


# -- the builder's bookkeeping ---------------------------------------------------------------


def test_append_returns_offset_deltas_and_tracks_timestamps():
    b = MemoryRecordsBuilder(1024)
    assert b.append(TS + 10, b"a", b"1") == 0
    assert b.append(TS, b"b", b"2") == 1
    assert b.append(TS + 30, b"c", b"3", None) == 2
    assert (b.num_records, b.base_timestamp, b.max_timestamp) == (3, TS + 10, TS + 30)
    (batch,) = list(iter_batches(b.build()))
    assert [r.timestamp for r in batch.records] == [TS + 10, TS, TS + 30]
    assert (batch.base_timestamp, batch.max_timestamp) == (TS + 10, TS + 30)
    assert batch.partition_leader_epoch == -1  # what the Java producer writes
    assert batch.timestamp_type == 0 and all(r.timestamp_type == 0 for r in batch.records)


def test_accepts_bytes_like_keys_values_and_header_values():
    b = MemoryRecordsBuilder(64)
    b.append(TS, bytearray(b"k"), memoryview(b"xvaluex")[1:6], [("h", bytearray(b"hv"))])
    (r,) = list(iter_records(b.build()))
    assert (r.key, r.value, r.headers) == (b"k", b"value", [("h", b"hv")])
    assert isinstance(r, Record)


def test_headers_as_tuple_and_generator():
    b = MemoryRecordsBuilder(64)
    b.append(TS, None, None, (("a", b"1"), ["b", None]))
    b.append(TS, None, None, (h for h in [("c", b"3")]))
    recs = list(iter_records(b.build()))
    assert recs[0].headers == [("a", b"1"), ("b", None)]
    assert recs[1].headers == [("c", b"3")]


def test_a_header_value_is_measured_as_it_is_written():
    """``bytes(value)`` runs the value's own code: the header is sized from its result, not from
    the buffer it had before (a longer result used to be written past the reserved room)."""

    class Longer(bytes):
        def __bytes__(self):
            return b"x" * 4096

    b = MemoryRecordsBuilder(64)
    b.append(TS, None, b"v", [("h", Longer(b"a")), ["i", bytearray(b"2")]])
    (r,) = list(iter_records(b.build()))
    assert r.headers == [("h", b"x" * 4096), ("i", b"2")]


def test_base_offset_is_written():
    b = MemoryRecordsBuilder(64, base_offset=1000)
    b.append(TS, None, b"x")
    b.append(TS, None, b"y")
    assert [r.offset for r in iter_records(b.build())] == [1000, 1001]


def test_empty_builder_builds_nothing():
    b = MemoryRecordsBuilder(64, compression="gzip")
    assert bytes(b.build()) == b""
    assert b.is_closed and b.estimated_size_in_bytes() == 0
    assert list(iter_records(b"")) == []


def test_build_is_zero_copy_and_blocks_writes():
    pooled = bytearray(1024)
    b = MemoryRecordsBuilder(pooled)
    b.append(TS, b"k", b"v")
    view = b.build()
    assert view.readonly
    assert bytes(view) == bytes(pooled[:len(view)])  # it is the pooled buffer's memory
    assert b.buffer is pooled
    with pytest.raises(BufferError):
        b.stream.write(b"x")
    view.release()


def test_builder_on_a_stream_mid_way():
    stream = ByteBufferOutputStream(16)
    stream.write(b"prefix")
    b = MemoryRecordsBuilder(stream)
    b.append(TS, b"k", b"v")
    view = b.build()
    assert [r.key for r in iter_records(view)] == [b"k"]
    whole = stream.getbuffer()
    assert bytes(whole[:6]) == b"prefix" and bytes(whole[6:]) == bytes(view)


def test_pooled_buffer_that_grows_keeps_accounting_data():
    pooled = bytearray(100)
    b = MemoryRecordsBuilder(pooled)  # write_limit defaults to the capacity
    assert b.write_limit == 100
    assert b.has_room_for(TS, None, b"x" * 500)  # an empty batch always takes one record
    b.append(TS, None, b"x" * 500)
    assert b.buffer is not pooled  # grew: the pool will see a non-poolable buffer
    assert b.initial_capacity == 100  # ... and gets this size back
    assert b.is_full()
    assert not b.has_room_for(TS, None, b"")
    assert [r.value for r in iter_records(b.build())] == [b"x" * 500]


def test_has_room_for_matches_the_exact_record_size():
    first = (b"k0", b"v" * 50, [("h", b"1")])
    nxt = (b"k1", b"w" * 70, None)
    record0 = KafkaBuilder.size_in_bytes(0, 0, *first[:2], first[2])
    record1 = KafkaBuilder.size_in_bytes(1, 5, nxt[0], nxt[1], [])
    exact = 61 + record0 + record1
    for limit, fits in ((exact, True), (exact - 1, False)):
        b = MemoryRecordsBuilder(1024, write_limit=limit)
        b.append(TS, *first)
        assert b.estimated_size_in_bytes() == 61 + record0 == b.uncompressed_bytes_written
        assert b.has_room_for(TS + 5, *nxt) is fits
        assert not b.is_full()
    b = MemoryRecordsBuilder(1024, write_limit=exact)
    b.append(TS, *first)
    b.append(TS + 5, *nxt)
    assert b.is_full() and len(b.build()) == exact


def test_compressed_estimate_uses_ratio_and_java_factor():
    b = MemoryRecordsBuilder(4096, compression="lz4", write_limit=4096)
    b.append(TS, None, b"a" * 1000)
    uncompressed = b.uncompressed_bytes_written - 61
    # Java: header + (int) (uncompressed * ratio(1.0f) * 1.05f)
    assert b.estimated_size_in_bytes() == 61 + int(uncompressed * 1.05)
    b.set_estimated_compression_ratio(0.5)
    assert b.estimated_compression_ratio == 0.5
    assert b.estimated_size_in_bytes() == 61 + int(uncompressed * 0.5 * 1.05)
    with pytest.raises(ValueError):
        b.set_estimated_compression_ratio(0)
    b.close()
    assert b.compression_ratio < 0.1  # 1000 x "a" compresses well
    assert b.estimated_size_in_bytes() == len(b.build())


def test_write_limit_zero_still_takes_one_record():
    b = MemoryRecordsBuilder(0, write_limit=0)
    assert b.has_room_for(TS, b"k", b"v")
    b.append(TS, b"k", b"v")
    assert b.is_full()
    assert list(iter_records(b.build()))[0].value == b"v"


def test_estimate_size_upper_bound_matches_kafka_python():
    cases = [(None, None, None), (b"k", b"v" * 100, None), (b"", b"", []),
             (b"key", None, [("a", b"1"), ("ü", None)])]
    for key, value, headers in cases:
        expected = KafkaBuilder.estimate_size_in_bytes(key, value, headers or [])
        assert estimate_size_upper_bound(key, value, headers) == expected
    # and it is an upper bound of the real thing
    b = MemoryRecordsBuilder(0)
    b.append(TS, b"key", b"v" * 1000, [("h", b"x")])
    assert len(b.build()) <= estimate_size_upper_bound(b"key", b"v" * 1000, [("h", b"x")])
    with pytest.raises(TypeError, match="key"):
        estimate_size_upper_bound("str", None)


# -- lifecycle -------------------------------------------------------------------------------


def test_close_is_idempotent_and_stops_appends():
    b = MemoryRecordsBuilder(64)
    b.append(TS, b"k", b"v")
    b.close()
    first = bytes(b.build())
    b.close()
    assert bytes(b.build()) == first
    with pytest.raises(IllegalStateError, match="closed"):
        b.append(TS, b"k", b"v")
    assert b.is_full() and not b.has_room_for(TS, None, None)


def test_close_for_record_appends_then_producer_state_then_close():
    b = MemoryRecordsBuilder(64)
    b.append(TS, b"k", b"v")
    b.close_for_record_appends()
    assert b.is_full() and not b.is_closed
    with pytest.raises(IllegalStateError):
        b.append(TS, b"k", b"v")
    b.set_producer_state(5, 1, 42, False)  # the Sender does this when it drains the batch
    b.close()
    (batch,) = list(iter_batches(b.build()))
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (5, 1, 42)
    with pytest.raises(IllegalStateError, match="already closed"):
        b.set_producer_state(5, 1, 43, False)


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_reopen_and_rewrite_producer_state(codec):
    b = MemoryRecordsBuilder(64, compression=codec, producer_id=5, producer_epoch=1,
                             base_sequence=42)
    b.append(TS, b"k", b"v")
    b.build().release()
    b.reopen_and_rewrite_producer_state(5, 2, 0, True)
    data = bytes(b.build())
    kbatch = KafkaBatch(data)
    assert kbatch.validate_crc()
    assert (kbatch.producer_epoch, kbatch.base_sequence, kbatch.is_transactional) == (2, 0, True)
    assert [r.value for r in kbatch] == [b"v"]


def test_abort():
    b = MemoryRecordsBuilder(64)
    b.append(TS, b"k", b"v")
    b.abort()
    assert b.is_aborted and b.is_full()
    with pytest.raises(IllegalStateError, match="aborted"):
        b.build()
    with pytest.raises(IllegalStateError, match="aborted"):
        b.close()
    with pytest.raises(IllegalStateError):
        b.append(TS, b"k", b"v")
    with pytest.raises(IllegalStateError):
        b.reopen_and_rewrite_producer_state(1, 1, 1, False)


def test_properties():
    b = MemoryRecordsBuilder(bytearray(200), compression="LZ4", producer_id=1, producer_epoch=2,
                             base_sequence=3)
    assert (b.compression, b.compression_level, b.initial_capacity) == ("lz4", 9, 200)
    assert (b.producer_id, b.producer_epoch, b.base_sequence, b.is_transactional) == (1, 2, 3,
                                                                                       False)
    assert (b.num_records, b.base_offset, b.is_closed) == (0, 0, False)
    assert MemoryRecordsBuilder(8, compression=None).compression == "none"
    assert MemoryRecordsBuilder(8, compression="zstd").compression_level == 3
    assert MemoryRecordsBuilder(8, compression="gzip").compression_level == -1
    assert "records=0" in repr(b)


# -- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args,exc,match",
    [
        ((TS, "key", b"v"), TypeError, "key"),
        ((TS, b"k", "value"), TypeError, "value"),
        ((TS, b"k", 5), TypeError, "value"),
        ((TS, [1], b"v"), TypeError, "key"),
        ((TS, b"k", b"v", "hdr"), TypeError, "headers"),
        ((TS, b"k", b"v", {"a": 1}), TypeError, r"headers\[0\] value"),
        ((TS, b"k", b"v", 5), TypeError, "headers"),
        ((TS, b"k", b"v", [("a",)]), TypeError, r"headers\[0\]"),
        ((TS, b"k", b"v", [("a", b"1"), (b"b", b"2")]), TypeError, r"headers\[1\] key"),
        ((TS, b"k", b"v", [("a", 2.5)]), TypeError, r"headers\[0\] value"),
        ((None, b"k", b"v"), TypeError, "integer"),
        (("1", b"k", b"v"), TypeError, "integer"),
        ((-5, b"k", b"v"), ValueError, "negative timestamp"),
    ],
)
def test_append_bad_input(args, exc, match):
    b = MemoryRecordsBuilder(64)
    with pytest.raises(exc, match=match):
        b.append(*args)
    if exc is TypeError:
        with pytest.raises(TypeError, match=match):
            b.has_room_for(*args)
    assert b.num_records == 0
    b.append(TS, b"k", b"v")  # the builder is still usable
    assert b.num_records == 1


def test_no_timestamp_is_allowed():
    b = MemoryRecordsBuilder(64)
    b.append(-1, None, b"v")
    assert [r.timestamp for r in iter_records(b.build())] == [-1]


def test_non_contiguous_value_is_a_type_error():
    b = MemoryRecordsBuilder(64)
    with pytest.raises(TypeError, match="contiguous"):
        b.append(TS, None, memoryview(b"abcdef")[::2])


@pytest.mark.parametrize(
    "kwargs,exc",
    [
        ({"compression": "brotli"}, ValueError),
        ({"compression": 1}, TypeError),
        ({"compression": "gzip", "compression_level": 10}, ValueError),
        ({"compression": "gzip", "compression_level": 0}, ValueError),
        ({"compression": "lz4", "compression_level": 18}, ValueError),
        ({"compression": "lz4", "compression_level": 0}, ValueError),
        ({"compression": "zstd", "compression_level": 23}, ValueError),
        ({"compression": "zstd", "compression_level": -131073}, ValueError),
        ({"compression": "snappy", "compression_level": 1}, ValueError),
        ({"compression": "none", "compression_level": 1}, ValueError),
        ({"compression": "gzip", "compression_level": True}, TypeError),
        ({"compression": "gzip", "compression_level": 1.0}, TypeError),
        ({"write_limit": -1}, ValueError),
        ({"write_limit": "10"}, TypeError),
        ({"is_transactional": True}, ValueError),
        ({"producer_epoch": 40000}, ValueError),
    ],
)
def test_constructor_bad_input(kwargs, exc):
    with pytest.raises(exc):
        MemoryRecordsBuilder(64, **kwargs)


@pytest.mark.parametrize("bad", [-1, "64", None, b"read-only"])
def test_constructor_bad_buffer(bad):
    with pytest.raises((TypeError, ValueError)):
        MemoryRecordsBuilder(bad)


# -- corrupt input to the reader: clear errors, never a crash or an over-read ------------------


def sample_batch(codec="none") -> bytes:
    return build_ours([(0, b"key", b"value", [("h", b"1")]), (5, None, b"v2", [])], codec)


def test_reader_bad_types():
    with pytest.raises(TypeError):
        iter_records("not bytes")
    with pytest.raises(TypeError):
        iter_batches(None)


@pytest.mark.parametrize("codec", CODECS)
def test_every_truncation_is_corrupt(codec):
    data = sample_batch(codec)
    for n in range(1, len(data)):
        with pytest.raises(CorruptRecordError):
            list(iter_records(data[:n]))
    # a valid batch followed by a partial one
    with pytest.raises(CorruptRecordError, match="truncated"):
        list(iter_records(data + data[:30]))


def test_every_bit_flip_is_caught_or_harmless():
    data = sample_batch()
    for i in range(len(data)):
        for bit in range(8):
            flipped = bytearray(data)
            flipped[i] ^= 1 << bit
            if i < 8 or 12 <= i < 16:
                # base offset and partition leader epoch are outside the CRC (the broker sets
                # them): the batch still decodes, with the flipped value.
                (batch,) = list(iter_batches(flipped))
                assert [r.value for r in batch.records] == [b"value", b"v2"]
            else:
                with pytest.raises(CorruptRecordError):
                    list(iter_records(flipped))


def test_crc_mismatch_message():
    data = bytearray(sample_batch())
    data[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError, match="CRC mismatch"):
        list(iter_records(data))


def test_bad_magic_and_lengths():
    data = bytearray(sample_batch())
    bad_magic = bytearray(data)
    bad_magic[16] = 1
    with pytest.raises(CorruptRecordError, match="magic"):
        list(iter_records(bad_magic))
    short = bytearray(data)
    struct.pack_into(">i", short, 8, 10)
    with pytest.raises(CorruptRecordError, match="less than its own header"):
        list(iter_records(short))
    huge = bytearray(data)
    struct.pack_into(">i", huge, 8, 2**31 - 1)
    with pytest.raises(CorruptRecordError, match="truncated"):
        list(iter_records(huge))


def with_valid_crc(data: bytearray) -> bytes:
    struct.pack_into(">I", data, 17, oracle_crc(bytes(data[21:])))
    return bytes(data)


def test_records_count_mismatch():
    data = bytearray(sample_batch())
    struct.pack_into(">i", data, 57, 3)  # says 3, holds 2
    with pytest.raises(CorruptRecordError, match="truncated varint|record 2"):
        list(iter_records(with_valid_crc(data)))
    data = bytearray(sample_batch())
    struct.pack_into(">i", data, 57, 1)  # says 1, holds 2
    with pytest.raises(CorruptRecordError, match="bytes left"):
        list(iter_records(with_valid_crc(data)))
    data = bytearray(sample_batch())
    struct.pack_into(">i", data, 57, -1)
    with pytest.raises(CorruptRecordError, match="negative record count"):
        list(iter_records(with_valid_crc(data)))


def test_unknown_codec_and_garbage_compressed_section():
    data = bytearray(sample_batch())
    struct.pack_into(">h", data, 21, 7)
    with pytest.raises(CorruptRecordError, match="codec"):
        list(iter_records(with_valid_crc(data)))
    plain = sample_batch()
    for codec in ["gzip", "snappy", "lz4", "zstd"]:
        garbage = reframe(plain, codec, b"\x00garbage that is not compressed" * 3)
        with pytest.raises(CorruptRecordError):
            list(iter_records(garbage))
    # xerial header with a block length running past the end
    bad_xerial = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01" + struct.pack(">i", 1000) + b"x"
    with pytest.raises(CorruptRecordError, match="overruns"):
        list(iter_records(reframe(plain, "snappy", bad_xerial)))


def test_invalid_utf8_header_key():
    b = MemoryRecordsBuilder(64)
    b.append(TS, None, None, [("ab", None)])
    data = bytearray(b.build())
    idx = data.rindex(b"ab")
    data[idx] = 0xFF
    with pytest.raises(CorruptRecordError, match="UTF-8"):
        list(iter_records(with_valid_crc(data)))


def test_overlong_varint():
    # record length as a 6-byte varint: longer than any int32
    header = bytearray(sample_batch()[:61])
    section = b"\x80\x80\x80\x80\x80\x01" + b"\x00" * 10
    data = bytearray(reframe(bytes(header) + b"", "none", section))
    struct.pack_into(">i", data, 57, 1)
    with pytest.raises(CorruptRecordError, match="varint"):
        list(iter_records(with_valid_crc(data)))


@settings(max_examples=examples(300), deadline=None)
@given(st.binary(max_size=400))
def test_random_bytes_never_crash(data):
    try:
        list(iter_records(data))
    except CorruptRecordError:
        pass


@settings(max_examples=examples(300), deadline=None)
@given(st.data())
def test_mutated_records_behind_a_valid_crc(data):
    # The CRC shields the record parser from random damage; recompute it so the parser itself
    # meets every mutation (bounds, varints, lengths).
    codec = data.draw(st.sampled_from(CODECS))
    batch = bytearray(sample_batch(codec))
    n_mutations = data.draw(st.integers(1, 6))
    for _ in range(n_mutations):
        pos = data.draw(st.integers(61, len(batch) - 1))
        batch[pos] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        cut = data.draw(st.integers(62, len(batch)))
        del batch[cut:]
        struct.pack_into(">i", batch, 8, len(batch) - 12)
    try:
        decoded = list(iter_records(with_valid_crc(batch)))
    except CorruptRecordError:
        return
    for record in decoded:
        assert record.key is None or isinstance(record.key, bytes)
        assert record.value is None or isinstance(record.value, bytes)


def test_append_is_not_gated_by_write_limit():
    # Java: hasRoomFor is the gate; append itself always writes, growing the buffer if needed.
    b = MemoryRecordsBuilder(bytearray(80), write_limit=80)
    b.append(TS, None, b"a" * 10)
    assert not b.has_room_for(TS, None, b"b" * 100)
    b.append(TS, None, b"b" * 100)
    assert b.is_full() and b.stream.limit > 80
    assert [r.value for r in iter_records(b.build())] == [b"a" * 10, b"b" * 100]


def test_header_key_that_is_not_utf8_encodable():
    b = MemoryRecordsBuilder(64)
    with pytest.raises(ValueError, match=r"headers\[0\] key"):
        b.append(TS, None, None, [("\udc80", b"x")])
    assert b.num_records == 0


def test_headers_in_every_accepted_shape_write_the_same_bytes():
    shapes = [
        [("a", b"1"), ("b", None)],
        (("a", b"1"), ("b", None)),
        [["a", bytearray(b"1")], ("b", None)],
        (h for h in [("a", memoryview(b"1")), ("b", None)]),
    ]
    built = []
    for headers in shapes:
        b = MemoryRecordsBuilder(64)
        b.append(TS, b"k", b"v", headers)
        built.append(bytes(b.build()))
    assert all(x == built[0] for x in built)
    assert list(iter_records(built[0]))[0].headers == [("a", b"1"), ("b", None)]


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_close_with_a_live_stream_view_fails_cleanly(codec):
    b = MemoryRecordsBuilder(256, compression=codec)
    b.append(TS, b"k", b"v" * 50)
    view = b.stream.getbuffer()
    with pytest.raises(BufferError):
        b.close()
    assert not b.is_closed and not b.is_full()  # nothing changed: still open for appends
    view.release()
    b.append(TS, b"k2", None)
    b.close()
    assert [r.key for r in iter_records(b.build())] == [b"k", b"k2"]


# -- check_batches: iter_batches's checks without the objects (the broker's validator) ---------


def _outcome(reader, data):
    try:
        return ("ok", reader(data))
    except CorruptRecordError as exc:
        return ("corrupt", str(exc))


def _int64(n):
    return (n + (1 << 63)) % (1 << 64) - (1 << 63)


def _last_deltas_by_decoding(data):
    """Per batch: its last record's offset delta and its largest timestamp delta."""
    return [
        (b.records[-1].offset - b.base_offset,
         max(_int64(r.timestamp - b.base_timestamp) for r in b.records))
        if b.records else (-1, None)
        for b in iter_batches(data)
    ]


_STRICTER = re.compile(r"record \d+ has (offset delta|attributes) ")


def _fault_only_check_batches_refuses(data):
    """check_batches's message for a batch the reader accepts whole but a producer never
    writes (a record numbered out of turn, or with attribute bits set); None otherwise."""
    try:
        batches = list(iter_batches(data))
    except CorruptRecordError:
        return None
    for b in batches:
        for i, r in enumerate(b.records):
            if r.attributes != 0:
                return (f"record {i} has attributes 0x{r.attributes:02x}; every bit of a"
                        " record's attributes is unused and must be 0")
            if r.offset - b.base_offset != i:
                return (f"record {i} has offset delta {r.offset - b.base_offset}; the records"
                        " of a batch are numbered 0, 1, 2, ...")
    return None


def test_check_batches_refuses_records_not_numbered_from_zero():
    # The reader accepts a batch whose second record claims offset delta 0 (compaction leaves
    # gaps in fetched batches); the broker's check does not, for a produced batch.
    batch = bytearray(build_ours([(0, None, b"a", []), (0, None, b"b", [])], "none"))
    second = 61 + batch[61] // 2 + 1  # first record: its length varint, then its bytes
    assert batch[second + 3] == 2  # length, attributes, timestamp delta, offset delta zigzag(1)
    batch[second + 3] = 0
    batch = bytearray(with_valid_crc(batch))
    assert [r.offset for r in next(iter_batches(bytes(batch))).records] == [0, 0]
    with pytest.raises(CorruptRecordError, match="record 1 has offset delta 0"):
        check_batches(bytes(batch))


@settings(max_examples=examples(600), deadline=None)
@given(st.data())
def test_check_batches_agrees_with_iter_batches(data):
    """The same verdict, the same message, on valid batches and on every damage: mutated records
    behind a valid CRC, truncations, bit flips, random bytes, several batches in a row."""
    codec = data.draw(st.sampled_from(CODECS))
    if data.draw(st.booleans()):
        batch = bytearray(sample_batch(codec))
    else:  # no headers: check_batches's fast path, which hands any fault to the slow one
        batch = bytearray(build_ours([(0, b"key", b"value", []), (5, None, b"v2", [])], codec))
    how = data.draw(st.sampled_from(["valid", "mutate", "truncate", "flip", "random", "many"]))
    if how == "mutate":
        for _ in range(data.draw(st.integers(1, 6))):
            batch[data.draw(st.integers(61, len(batch) - 1))] = data.draw(st.integers(0, 255))
        batch = bytearray(with_valid_crc(batch))
    elif how == "truncate":
        del batch[data.draw(st.integers(0, len(batch) - 1)):]
    elif how == "flip":
        batch[data.draw(st.integers(0, len(batch) - 1))] ^= 1 << data.draw(st.integers(0, 7))
    elif how == "random":
        batch = bytearray(data.draw(st.binary(max_size=300)))
    elif how == "many":
        batch = batch * data.draw(st.integers(2, 4))
    expected = _outcome(_last_deltas_by_decoding, bytes(batch))
    got = _outcome(check_batches, bytes(batch))
    stricter = _fault_only_check_batches_refuses(bytes(batch))
    if stricter is not None:
        # check_batches also refuses what a producer never writes and the reader accepts
        # (records not numbered 0, 1, 2, ...; a record attributes byte other than 0).
        assert got == ("corrupt", stricter), (got, expected)
    elif expected[0] == "corrupt" and got[0] == "corrupt" and _STRICTER.match(got[1]):
        pass  # both refuse; the check met one of its own faults before the reader's
    else:
        assert got == expected
    if how == "valid":
        assert expected == ("ok", [(1, 5)])  # offset deltas 0, 1; timestamp deltas 0, 5


def test_check_batches_bounds_decompression_and_checks_types():
    data = sample_batch("gzip")
    assert check_batches(data) == [(1, 5)]
    with pytest.raises(CorruptRecordError):
        check_batches(data, max_decompressed_bytes=4)
    with pytest.raises(TypeError):
        check_batches("not bytes")
    with pytest.raises(ValueError):
        check_batches(data, max_decompressed_bytes=-1)
    assert check_batches(b"") == []
    # A batch past 64 KiB is walked without the GIL; a fault deep inside it is still named.
    big = bytearray(build_ours([(i, None, b"v" * 100, []) for i in range(1000)], "none"))
    assert len(big) > 64 * 1024 and check_batches(bytes(big)) == [(999, 999)]
    big[-1] = 0x80  # the last record's header count: now a varint that never ends
    assert _outcome(check_batches, with_valid_crc(big)) == _outcome(
        _last_deltas_by_decoding, with_valid_crc(big))
    assert _outcome(check_batches, with_valid_crc(big))[0] == "corrupt"
