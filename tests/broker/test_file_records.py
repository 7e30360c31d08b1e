"""The fetch path's reads (``Log.read(..., file_records=True)``): a region of the segment file,
found with one offset lookup and checked chunk by chunk, judged against the batches appended
(their sizes and offsets are known) and read back with kafka-python's reader, which checks
each CRC itself."""

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.memory_records import MemoryRecords
from support.examples import examples

from kafkacore.broker.log import Log, LogConfig
from kafkacore.broker.log import log_segment as segment_module
from kafkacore.core.memory_records_builder import MemoryRecordsBuilder
from kafkacore.errors import CorruptMessageError

CHUNK = 4096  #: the fetch path's read chunk, made small so that a fetch spans several


def batch(first, count, value_size):
    b = MemoryRecordsBuilder(1 << 20)
    for i in range(count):
        b.append(1_700_000_000_000 + first + i, None, bytes([65 + (first + i) % 26]) * value_size)
    b.close()
    return bytes(b.build())


def filled(directory, shapes):
    """A one-segment log of batches of ``(records, value size)``; returns it and, per batch,
    (base offset, size in bytes)."""
    log = Log(directory, LogConfig(index_interval_bytes=512))
    layout, offset = [], 0
    for count, value_size in shapes:
        data = batch(offset, count, value_size)
        log.append_as_leader(data)
        layout.append((offset, len(data)))
        offset += count
    return log, layout


def expected_region(layout, end_offset, fetch_offset, max_bytes, max_offset, min_one_batch):
    """The (base offset, size) of the batches a fetch must return, from what was appended: from
    the batch holding ``fetch_offset``, whole batches within ``max_bytes`` (the first whatever
    its size, with ``min_one_batch``), none at or above ``max_offset``."""
    ends = [base for base, _ in layout[1:]] + [end_offset]
    out, total = [], 0
    for (base, size), end in zip(layout, ends, strict=True):
        if end <= fetch_offset:
            continue
        if max_offset is not None and base >= max_offset:
            break
        if total + size > max_bytes and (out or not min_one_batch):
            break
        out.append((base, size))
        total += size
    return out


def offsets_in(data):
    records, out = MemoryRecords(data), []
    while (b := records.next_batch()) is not None:
        assert b.validate_crc()
        out.append(b.base_offset)
    return out


@settings(max_examples=examples(60), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    shapes=st.lists(st.tuples(st.integers(1, 6), st.sampled_from([10, 300, 2000, 6000])),
                    min_size=1, max_size=12),
    data=st.data(),
)
def test_a_region_is_the_whole_batches_a_fetch_asks_for(tmp_path_factory, monkeypatch, shapes,
                                                        data):
    monkeypatch.setattr(segment_module, "_CHUNK", CHUNK)
    log, layout = filled(tmp_path_factory.mktemp("log"), shapes)
    end = log.log_end_offset
    fetch_offset = data.draw(st.integers(0, end - 1))
    max_bytes = data.draw(st.integers(1, sum(size for _, size in layout) + 100))
    max_offset = data.draw(st.none() | st.integers(fetch_offset + 1, end))
    min_one = data.draw(st.booleans())
    want = expected_region(layout, end, fetch_offset, max_bytes, max_offset, min_one)
    got = log.read(fetch_offset, max_bytes, max_offset=max_offset, min_one_batch=min_one,
                   file_records=True)
    try:
        region = got.records
        if not want:
            assert len(region) == 0
            return
        assert got.first_offset == want[0][0]
        assert len(region) == sum(size for _, size in want)
        assert offsets_in(region.read_all()) == [base for base, _ in want]
        copied = log.read(fetch_offset, max_bytes, max_offset=max_offset, min_one_batch=min_one)
        assert copied.records == region.read_all()  # the copying read serves the same bytes
    finally:
        if hasattr(got.records, "close"):
            got.records.close()
        log.close()


def test_a_damaged_batch_in_a_later_chunk_ends_the_region_before_it(tmp_path, monkeypatch):
    monkeypatch.setattr(segment_module, "_CHUNK", CHUNK)
    log, layout = filled(tmp_path, [(3, 1000)] * 12)  # ~3 KB batches: one or two a chunk
    log.flush()
    damaged_base, _ = layout[7]
    position = sum(size for _, size in layout[:7])
    with open(log.active_segment.log_path, "r+b") as f:  # a flipped byte in batch 7's records
        f.seek(position + 100)
        byte = f.read(1)
        f.seek(position + 100)
        f.write(bytes([byte[0] ^ 0xFF]))
    got = log.read(0, 1 << 20, file_records=True)
    try:
        assert offsets_in(got.records.read_all()) == [base for base, _ in layout[:7]]
    finally:
        got.records.close()
    with pytest.raises(CorruptMessageError):
        log.read(damaged_base, 1 << 20, file_records=True)
    log.close()


def _bytes_read_by_this_process():
    with open("/proc/self/io") as f:
        return int(next(line for line in f if line.startswith("rchar:")).split()[1])


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="needs Linux's /proc/self/io")
def test_a_lookup_reads_headers_not_the_large_batches_it_steps_over(tmp_path):
    log, layout = filled(tmp_path, [(4, 60_000)] * 8)  # 240 KB batches, one index entry each
    segment = log.active_segment
    before = _bytes_read_by_this_process()
    header = segment.translate_offset(layout[-1][0] + 1)
    read = _bytes_read_by_this_process() - before
    assert header.base_offset == layout[-1][0]
    # One small read from the index entry; reading each batch stepped over would be 240 KB.
    assert read < 64 * 1024, read
    log.close()


@settings(max_examples=examples(40), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    shapes=st.lists(st.tuples(st.integers(1, 6), st.sampled_from([10, 300, 2000])),
                    min_size=1, max_size=30),
    data=st.data(),
)
def test_readable_bytes_is_what_a_read_would_return(tmp_path_factory, shapes, data):
    """What a fetch waiting for ``min_bytes`` counts, over segments of a few batches each: the
    bytes of the whole batches from the one holding the offset to the bound, at most
    ``max_bytes``."""
    log = Log(tmp_path_factory.mktemp("log"), LogConfig(segment_bytes=16384,
                                                        index_interval_bytes=512))
    layout, offset = [], 0
    for count, value_size in shapes:
        data_ = batch(offset, count, value_size)
        log.append_as_leader(data_)
        layout.append((offset, len(data_)))
        offset += count
    end = log.log_end_offset
    fetch_offset = data.draw(st.integers(0, end))
    bound = data.draw(st.none() | st.sampled_from([base for base, _ in layout] + [end]))
    max_bytes = data.draw(st.integers(1, 1 << 20))
    limit = end if bound is None else bound
    ends = [base for base, _ in layout[1:]] + [end]
    whole = sum(size for (base, size), after in zip(layout, ends, strict=True)
                if after > fetch_offset and base < limit)
    try:
        assert log.readable_bytes(fetch_offset, max_bytes, bound) == min(whole, max_bytes)
    finally:
        log.close()
