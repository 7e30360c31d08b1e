"""The compiled ``LogValidator`` (kafkacore/broker/log/log_validator_core.pyx, imported through
validator.py): ``analyze`` and ``assign_offsets`` on the cases a one-batch Produce does not
reach: several batches in a request, a maxTimestamp the producer left at -1, LogAppendTime,
short and truncated input, old magics, a batch above ``max.message.bytes``, a client's control
batch, the int64 wrap of maxTimestamp, and the buffers each accepts.  The results are read back
by kafka-python's record reader, an implementation nobody here wrote.
See docs/broker/log.rst."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record import MemoryRecords
from support.examples import examples

from kafkacore.broker.log.end_transaction_marker import end_transaction_marker
from kafkacore.broker.log.log_validator import BatchHeader, analyze, assign_offsets
from kafkacore.core.crc import crc32c
from kafkacore.core.memory_records_builder import MemoryRecordsBuilder
from kafkacore.errors import (
    CorruptMessageError,
    InvalidRecordError,
    MessageTooLargeError,
)

LIMIT = 1 << 20
INT64_MAX = (1 << 63) - 1


def batch(timestamps: list[int], producer_id: int = -1, compression: str = "none") -> bytes:
    b = MemoryRecordsBuilder(4096, compression=compression, producer_id=producer_id,
                             producer_epoch=0 if producer_id >= 0 else -1,
                             base_sequence=0 if producer_id >= 0 else -1)
    for i, ts in enumerate(timestamps):
        b.append(ts, b"k%d" % i, b"v%d" % i)
    return bytes(b.build())


def patched(data: bytes, at: int, fmt: str, value: int) -> bytes:
    """``data`` with one header field changed and the CRC made right again."""
    out = bytearray(data)
    struct.pack_into(fmt, out, at, value)
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[21:]))
    return bytes(out)


def read_back(data: bytes | bytearray) -> list:
    records = MemoryRecords(bytes(data))
    out = []
    while records.has_next():
        out.append(records.next_batch())
    return out


def test_several_batches_get_consecutive_offsets_and_keep_their_crc():
    parts = [batch([10, 30]), batch([20]), batch([5, 7, 6], compression="gzip")]
    data = b"".join(parts)
    headers = analyze(data, LIMIT)
    assert [type(h) for h in headers] == [BatchHeader] * 3
    assert [(h.position, h.size, h.record_count, h.max_timestamp) for h in headers] == [
        (0, len(parts[0]), 2, 30),
        (len(parts[0]), len(parts[1]), 1, 20),
        (len(parts[0]) + len(parts[1]), len(parts[2]), 3, 7),
    ]
    buf = bytearray(data)
    assigned = assign_offsets(buf, headers, 100, 7, None)
    assert [(h.base_offset, h.partition_leader_epoch, h.last_offset) for h in assigned] == [
        (100, 7, 101), (102, 7, 102), (103, 7, 105)]
    # Only baseOffset and partitionLeaderEpoch (outside the CRC) changed.
    for h, part in zip(assigned, parts, strict=True):
        stored = bytes(buf[h.position : h.position + h.size])
        assert stored[:8] == struct.pack(">q", h.base_offset)
        assert stored[8:16] == part[8:12] + struct.pack(">i", 7)
        assert stored[16:] == part[16:]
        assert h.crc == struct.unpack_from(">I", part, 17)[0]
    read = read_back(buf)
    assert [b.base_offset for b in read] == [100, 102, 103]
    assert all(b.validate_crc() and b.leader_epoch == 7 for b in read)
    assert [r.offset for b in read for r in b] == list(range(100, 106))


def test_max_timestamp_left_at_minus_one_is_set_and_the_crc_recomputed():
    right = batch([1000, 3000, 2000])
    data = patched(right, 35, ">q", -1)  # Sarama's maxTimestamp
    [h] = analyze(data, LIMIT)
    assert h.max_timestamp == 3000 and h.crc == struct.unpack_from(">I", data, 17)[0]
    buf = bytearray(data)
    [a] = assign_offsets(buf, [h], 42, 3, None)
    # The bytes the producer should have sent, with the broker's offset and epoch.
    assert bytes(buf) == struct.pack(">q", 42) + right[8:12] + struct.pack(">i", 3) + right[16:]
    assert a.crc == struct.unpack_from(">I", right, 17)[0] and a.max_timestamp == 3000
    assert a.attributes == h.attributes


def test_log_append_time_sets_the_type_bit_and_the_time():
    data = batch([1000, 3000], producer_id=5) + batch([7])
    headers = analyze(data, LIMIT)
    buf = bytearray(data)
    assigned = assign_offsets(buf, headers, 0, 1, 555)
    read = read_back(buf)
    for h, b in zip(assigned, read, strict=True):
        assert b.validate_crc() and b.timestamp_type == 1 and b.max_timestamp == 555
        assert h.attributes == b.attributes == 0x08 and h.max_timestamp == 555
        assert h.crc == b.crc
        assert [r.timestamp for r in b] == [555] * b.records_count
    assert read[0].producer_id == 5 and read[0].base_sequence == 0


@pytest.mark.parametrize(("cut", "error", "message"), [
    (0, InvalidRecordError, "the request carries no record batch for this partition"),
    (16, CorruptMessageError, "truncated record batch at byte 0"),
    (60, CorruptMessageError, "truncated record batch at byte 0"),
    (-1, CorruptMessageError, "record batch at byte 0 says it has {size} bytes, {left} are left"),
])
def test_short_input(cut, error, message):
    data = batch([1, 2])
    short = data[:cut]
    with pytest.raises(error) as raised:
        analyze(short, LIMIT)
    assert str(raised.value).endswith(message.format(size=len(data), left=len(short)))


def test_a_stray_tail_after_a_whole_batch():
    data = batch([1])
    for tail in (bytes(16), bytes(16) + b"\x02" + bytes(43)):
        with pytest.raises(CorruptMessageError,
                           match=f"truncated record batch at byte {len(data)}$"):
            analyze(data + tail, LIMIT)
    with pytest.raises(InvalidRecordError, match="magic 1 batch: only magic 2 is accepted$"):
        analyze(data + bytes(16) + b"\x01", LIMIT)


@pytest.mark.parametrize(("magic", "error", "message"), [
    (0, InvalidRecordError, "magic 0 batch at byte {at}: only magic 2 is accepted"),
    (1, InvalidRecordError, "magic 1 batch at byte {at}: only magic 2 is accepted"),
    (0xFF, InvalidRecordError, "magic -1 batch at byte {at}: only magic 2 is accepted"),
    (3, CorruptMessageError, "record batch at byte {at} has magic 3; only magic 2 is supported"),
])
def test_old_and_unknown_magic(magic, error, message):
    first = batch([1])
    data = bytearray(first + batch([2]))
    data[len(first) + 16] = magic
    with pytest.raises(error) as raised:
        analyze(bytes(data), LIMIT)
    assert str(raised.value).endswith(message.format(at=len(first)))


def test_a_batch_above_max_message_bytes():
    small, large = batch([1]), batch([1] * 20)
    data = small + large
    analyze(data, len(large))
    with pytest.raises(MessageTooLargeError) as raised:
        analyze(data, len(large) - 1)
    assert str(raised.value).endswith(
        f"the batch at byte {len(small)} has {len(large)} bytes, above max.message.bytes"
        f" ({len(large) - 1})")


def test_control_batches_only_from_the_coordinator():
    marker = end_transaction_marker(7, 1, True, 0, 1000)
    with pytest.raises(InvalidRecordError, match="clients may not send control batches$"):
        analyze(marker, LIMIT)
    [h] = analyze(marker, LIMIT, allow_control=True)
    assert h.is_control and h.is_transactional and h.producer_id == 7


def test_a_corrupt_batch_is_reported_before_an_earlier_invalid_one():
    control = end_transaction_marker(7, 1, True, 0, 1000)
    corrupt = bytearray(batch([1]))
    corrupt[-1] ^= 1
    with pytest.raises(CorruptMessageError, match=f"record batch at byte {len(control)}: CRC"):
        analyze(control + bytes(corrupt), LIMIT)


def test_header_fields_that_disagree_with_the_records():
    data = batch([1, 2])
    with pytest.raises(InvalidRecordError,
                       match="batch at byte 0: lastOffsetDelta 3 disagrees with its 2 records$"):
        analyze(patched(data, 23, ">i", 3), LIMIT)
    with pytest.raises(InvalidRecordError, match="batch at byte 0 has no records$"):
        empty = bytearray(batch([1])[:61])  # the header alone
        struct.pack_into(">i", empty, 8, 49)
        struct.pack_into(">i", empty, 57, 0)
        analyze(patched(bytes(empty), 23, ">i", -1), LIMIT)
    with pytest.raises(InvalidRecordError, match="a transactional batch without a producer id$"):
        analyze(patched(data, 21, ">h", 0x10), LIMIT)
    # A follower's copy of a compacted batch: fewer records than offsets is legal there.
    [h] = analyze(patched(data, 23, ">i", 3), LIMIT, compacted=True)
    assert (h.last_offset_delta, h.record_count, h.max_timestamp) == (3, 2, 2)


def test_max_timestamp_wraps_as_a_java_long():
    data = patched(batch([0, 1 << 62]), 27, ">q", INT64_MAX)  # baseTimestamp
    [h] = analyze(data, LIMIT)
    assert h.max_timestamp == INT64_MAX + (1 << 62) - (1 << 64)


def test_buffers_each_function_takes():
    data = batch([1, 2])
    for records in (data, bytearray(data), memoryview(data)):
        assert analyze(records, LIMIT) == analyze(data, LIMIT)
    headers = analyze(data, LIMIT)
    with pytest.raises(TypeError, match="^argument must be read-write bytes-like object, not bytes$"):
        assign_offsets(data, headers, 0, 0, None)
    assert assign_offsets(data, [], 0, 0, None) == []
    buf = bytearray(data)
    view = memoryview(buf)
    assert assign_offsets(view, headers, 9, 0, None)[0].base_offset == 9
    view.release()
    buf.append(0)  # the buffer was released: the bytearray may grow again
    with pytest.raises(struct.error, match="does not fit"):
        assign_offsets(bytearray(data[:-1]), headers, 0, 0, None)
    with pytest.raises(TypeError, match="BatchHeader"):
        assign_offsets(bytearray(data), [tuple(headers[0])], 0, 0, None)


@settings(max_examples=examples(25), deadline=None)
@given(st.lists(st.lists(st.integers(0, 1 << 40), min_size=1, max_size=4), min_size=1, max_size=4),
       st.integers(0, 1 << 50), st.integers(-1, 1 << 20), st.none() | st.integers(0, 1 << 41))
def test_assigned_batches_read_back(batches, first_offset, epoch, append_time):
    data = b"".join(batch(ts) for ts in batches)
    buf = bytearray(data)
    assigned = assign_offsets(buf, analyze(data, LIMIT), first_offset, epoch, append_time)
    read = read_back(buf)
    offset = first_offset
    for h, b, ts in zip(assigned, read, batches, strict=True):
        assert b.validate_crc() and b.base_offset == h.base_offset == offset
        assert b.leader_epoch == h.partition_leader_epoch == epoch
        assert b.max_timestamp == h.max_timestamp == (max(ts) if append_time is None
                                                      else append_time)
        assert h.crc == b.crc and h.attributes == b.attributes
        offset += len(ts)
