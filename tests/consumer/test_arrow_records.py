"""The compiled decoder (kafkacore.core.arrow_records) on its own: the same records as the
reference reader (record_batch.iter_records) for any batches the builder writes, Arrow arrays
that pass Arrow's full validation, read_committed as the Java consumer's CompletedFetch, and
hostile bytes: a typed error or a valid answer, never a crash."""

from __future__ import annotations

import struct

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.examples import examples

from kafkacore.core import MemoryRecordsBuilder, crc32c, iter_records
from kafkacore.core.arrow_records import batch_ends, decode_records
from kafkacore.errors import CorruptRecordError

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")

header = st.tuples(st.text(max_size=6), st.one_of(st.none(), st.binary(max_size=8)))
record = st.tuples(
    st.integers(0, 2**41),  # a timestamp in ms
    st.one_of(st.none(), st.binary(max_size=20)),  # key
    st.one_of(st.none(), st.binary(max_size=40)),  # value
    st.lists(header, max_size=3),
)


def build(records, codec="none", base_offset=0, **producer) -> bytes:
    b = MemoryRecordsBuilder(1 << 20, codec, base_offset=base_offset, **producer)
    for ts, key, value, headers in records:
        b.append(ts, key, value, headers or None)
    return bytes(b.build())


def rows_of(decoded) -> list[tuple]:
    for array in (decoded.key, decoded.value, decoded.offset, decoded.timestamp,
                  decoded.timestamp_type, decoded.headers):
        if array is not None:
            array.validate(full=True)
    keys, values = decoded.key.to_pylist(), decoded.value.to_pylist()
    offsets = decoded.offset.to_pylist()
    micros = decoded.timestamp.cast(pa.int64()).to_pylist()
    headers = decoded.headers.to_pylist() if decoded.headers is not None else [None] * len(keys)
    return [(o, t // 1000, k, v, None if h is None else [(e["key"], e["value"]) for e in h])
            for o, t, k, v, h in zip(offsets, micros, keys, values, headers, strict=True)]


def reference(data: bytes, start: int = 0, end: int = 2**63 - 1) -> list[tuple]:
    return [(r.offset, r.timestamp, r.key, r.value, list(r.headers))
            for r in iter_records(data) if start <= r.offset < end]


@settings(max_examples=examples(80), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(st.lists(record, min_size=1, max_size=12), min_size=1, max_size=4),
       codec=st.sampled_from(CODECS), bounds=st.tuples(st.integers(0, 60), st.integers(0, 60)))
def test_same_records_as_the_reference_reader(batches, codec, bounds):
    data, offset = b"", 0
    for records in batches:
        data += build(records, codec, base_offset=offset)
        offset += len(records)
    start, end = min(bounds), max(bounds)
    decoded = decode_records(data, start, end, include_headers=True)
    assert rows_of(decoded) == reference(data, start, end)
    assert decoded.num_rows == len(reference(data, start, end))
    # Where the next fetch starts: past the last batch, or at the first record left out.
    if end < offset:  # the record at ``end`` was met
        assert decoded.reached_end and decoded.next_offset == end
    else:
        assert not decoded.reached_end and decoded.next_offset == max(start, offset)


def test_nulls_headers_and_schema_types():
    data = build([(5, None, b"v", [("h", None), ("ü", b"x")]), (6, b"k", None, [])])
    decoded = decode_records(data, 0, include_headers=True)
    assert decoded.key.type == pa.binary() and decoded.key.null_count == 1
    assert decoded.value.null_count == 1
    assert decoded.timestamp.type == pa.timestamp("us", tz="UTC")
    assert decoded.timestamp_type.to_pylist() == [0, 0]
    assert rows_of(decoded) == [(0, 5, None, b"v", [("h", None), ("ü", b"x")]),
                                (1, 6, b"k", None, [])]
    # Without headers the column is not built at all.
    assert decode_records(data, 0).headers is None


def test_log_append_time_takes_the_batch_max_timestamp():
    data = bytearray(build([(1, b"a", b"b", []), (2, b"c", b"d", [])]))
    attributes = struct.unpack_from(">h", data, 21)[0] | 0x08  # LogAppendTime
    struct.pack_into(">h", data, 21, attributes)
    struct.pack_into(">q", data, 35, 777)  # the broker's append time in MaxTimestamp
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    decoded = decode_records(bytes(data), 0)
    assert decoded.timestamp_type.to_pylist() == [1, 1]
    assert decoded.timestamp.cast(pa.int64()).to_pylist() == [777000, 777000]


def test_max_rows_and_end_stop_inside_a_batch():
    data = build([(i, None, b"%d" % i, []) for i in range(10)], base_offset=100)
    decoded = decode_records(data, 103, 200, max_rows=4)
    assert decoded.offset.to_pylist() == [103, 104, 105, 106]
    assert decoded.reached_end and decoded.next_offset == 107
    decoded = decode_records(data, 100, 102)
    assert decoded.offset.to_pylist() == [100, 101] and decoded.next_offset == 102
    assert batch_ends(data) == 110 and batch_ends(data[:-1]) == -1


def control_batch(offset: int, producer_id: int, commit: bool) -> bytes:
    """An end-transaction marker as the broker writes it: a control batch of one record whose
    key is (version 0, type 0 ABORT / 1 COMMIT)."""
    key = struct.pack(">hh", 0, 1 if commit else 0)
    value = struct.pack(">hi", 0, 0)

    def varint(n: int) -> bytes:
        n = (n << 1) ^ (n >> 63)
        out = b""
        while n >= 0x80:
            out += bytes([(n & 0x7F) | 0x80])
            n >>= 7
        return out + bytes([n])

    body = b"\x00" + varint(0) + varint(0) + varint(len(key)) + key + varint(len(value)) + value
    body += varint(0)
    rec = varint(len(body)) + body
    after_crc = struct.pack(">hiqqqhii", 0x30, 0, 0, 0, producer_id, 0, -1, 1) + rec
    head = struct.pack(">qiib", offset, 4 + 1 + 4 + len(after_crc), 0, 2)
    return head + struct.pack(">I", crc32c(after_crc)) + after_crc


def txn_batch(offset: int, producer_id: int, values: list[bytes]) -> bytes:
    return build([(1, None, v, []) for v in values], base_offset=offset, producer_id=producer_id,
                 producer_epoch=0, base_sequence=0, is_transactional=True)


def test_read_committed_drops_aborted_transactions_and_control_batches():
    # Producer 7 commits 0-1 (marker 2); producer 8 aborts 3-4 (marker 5); producer 8 then
    # commits 6 (marker 7) in a new transaction; a plain batch at 8.
    data = (txn_batch(0, 7, [b"c1", b"c2"]) + control_batch(2, 7, True)
            + txn_batch(3, 8, [b"a1", b"a2"]) + control_batch(5, 8, False)
            + txn_batch(6, 8, [b"c3"]) + control_batch(7, 8, True)
            + build([(1, None, b"plain", [])], base_offset=8))
    aborted = [{"producer_id": 8, "first_offset": 3}]
    committed = decode_records(data, 0, aborted_transactions=aborted, read_committed=True)
    assert committed.value.to_pylist() == [b"c1", b"c2", b"c3", b"plain"]
    assert committed.offset.to_pylist() == [0, 1, 6, 8]
    assert committed.aborted_batches == 1 and committed.control_batches == 3
    assert committed.next_offset == 9
    # read_uncommitted: every data record, still no control record.
    everything = decode_records(data, 0, aborted_transactions=aborted)
    assert everything.value.to_pylist() == [b"c1", b"c2", b"a1", b"a2", b"c3", b"plain"]
    # A fetch that starts inside the aborted transaction drops its rest.
    tail = decode_records(data, 4, aborted_transactions=aborted, read_committed=True)
    assert tail.offset.to_pylist() == [6, 8]


# -- hostile bytes ------------------------------------------------------------------------------


def _decode_or_corrupt(data: bytes) -> None:
    try:
        decoded = decode_records(data, 0, include_headers=True, read_committed=True,
                                 aborted_transactions=[(1, 0)],
                                 max_decompressed_bytes=1 << 20)
    except CorruptRecordError:
        return
    rows_of(decoded)  # whatever was accepted is valid Arrow


@settings(max_examples=examples(300), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=300))
def test_garbage_raises_a_typed_error(data):
    _decode_or_corrupt(data)


@settings(max_examples=examples(300), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(records=st.lists(record, min_size=1, max_size=5), codec=st.sampled_from(CODECS),
       flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 255)), min_size=1,
                      max_size=4),
       fix_crc=st.booleans(), cut=st.integers(0, 10**6))
def test_garbled_batches_raise_a_typed_error(records, codec, flips, fix_crc, cut):
    """Bytes flipped in a real batch: with the CRC recomputed, so the record walk itself meets
    the damage (lengths, varints, UTF-8, a compressed section)."""
    data = bytearray(build(records, codec))
    for where, mask in flips:
        data[12 + where % (len(data) - 12)] ^= mask
    if fix_crc:
        struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    _decode_or_corrupt(bytes(data))
    _decode_or_corrupt(bytes(data[: cut % (len(data) + 1)]))


def test_named_faults():
    good = build([(1, b"k", b"v", [("h", b"x")])])
    with pytest.raises(CorruptRecordError, match="CRC mismatch"):
        decode_records(good[:-1] + bytes([good[-1] ^ 1]), 0)
    with pytest.raises(CorruptRecordError, match="truncated"):
        decode_records(good[:-3], 0)
    with pytest.raises(CorruptRecordError, match="magic"):
        decode_records(good[:16] + b"\x01" + good[17:], 0)
    bad_utf8 = bytearray(build([(1, b"k", b"v", [("hh", b"x")])]))
    at = bad_utf8.rindex(b"hh")
    bad_utf8[at] = 0xFF
    struct.pack_into(">I", bad_utf8, 17, crc32c(bytes(bad_utf8[21:])))
    with pytest.raises(CorruptRecordError, match="UTF-8"):
        decode_records(bytes(bad_utf8), 0, include_headers=True)
    # A partial batch after a whole one: the end of this fetch, not an error.
    two = good + build([(2, b"k", b"v", [])], base_offset=1)
    assert decode_records(two[:-5], 0).offset.to_pylist() == [0]


@pytest.mark.parametrize("bad", [
    dict(data="text"), dict(start=-1), dict(start=5, end=4), dict(max_rows=-1),
    dict(max_decompressed_bytes=-1)])
def test_bad_arguments_are_typed_errors(bad):
    args = {"data": build([(1, None, b"v", [])]), "start": 0, "end": 10, **bad}
    data, start, end = args.pop("data"), args.pop("start"), args.pop("end")
    with pytest.raises((TypeError, ValueError)):
        decode_records(data, start, end, **args)
