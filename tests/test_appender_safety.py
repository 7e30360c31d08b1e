"""The compiled paths under misuse and races (issue 11, Part 1 items 6-8): typed errors, every
record completed once, nothing hung, nothing read out of bounds, memory bounded."""

from __future__ import annotations

import logging
import struct
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import cramjam
import pyarrow as pa
import pytest
from readback import read_confluent

import kafkacore
from kafkacore import KafkaProducer
from kafkacore.core.batch import BatchFuture, ProducerBatch
from kafkacore.core.crc import crc32c
from kafkacore.core.memory_records_builder import MemoryRecordsBuilder
from kafkacore.core.record_batch import iter_batches, iter_records
from kafkacore.errors import CorruptRecordError, IllegalStateError, KafkaTimeoutError

TESTS = Path(__file__).resolve().parent
# The kafkacore under test: installed (tox) or built in place, never an uncompiled tree.
KAFKACORE_ROOT = Path(kafkacore.__file__).resolve().parent.parent

CREATED_MS = 1_700_000_000_000


def make_batch():
    return ProducerBatch("events", 0, MemoryRecordsBuilder(16384), CREATED_MS)


# -- BatchFuture: a completion that raises stops nothing ------------------------------------


def test_a_row_completion_that_raises_still_completes_the_rest_of_the_batch(caplog):
    # A BatchFuture given as an ordinary callback has no row (-1): completing it raises.  Before
    # the fix that stopped _complete half-way: the next record's future was never completed and
    # its result() without a timeout hung for good.
    batch = make_batch()
    broken = BatchFuture("events", 1)
    batch.try_append(CREATED_MS, None, b"a", None, broken, CREATED_MS)
    seen = []
    later = batch.try_append(CREATED_MS, None, b"b", None, lambda m, e: seen.append(m), CREATED_MS)
    batch.done(40, -1, None)
    assert later.result(5).offset == 41
    assert [m.offset for m in seen] == [41]
    assert any("send_batch" in r.getMessage() for r in caplog.records)


def test_empty_batch_future_is_done_and_runs_a_late_callback_once():
    future = BatchFuture("events", 0)
    calls = []
    future.add_done_callback(calls.append)
    assert calls == [future]
    assert future.result().failed == 0


def test_a_done_batch_future_refuses_set_partition():
    # The result's arrays are the caller's once the call is done: extending one moves it, and
    # a write through the future's pointer would land in freed memory.
    future = BatchFuture("events", 1)
    future.set_partition(0, 3)
    # white-box: the Sender's compiled _complete_row; no public call completes a row
    future._complete_row(0, 7, None)
    result = future.result(0)
    result.partitions.extend(range(1 << 16))
    with pytest.raises(IllegalStateError, match="done"):
        future.set_partition(0, 5)
    assert (result.partitions[0], result.offsets[0]) == (3, 7)


def test_batch_future_callbacks_that_raise_do_not_stop_the_others(caplog):
    # An Exception is logged; a KeyboardInterrupt is raised once every other callback ran.
    future = BatchFuture("events", 1)
    seen = []

    def fails(f):
        raise ValueError("callback bug")

    def interrupts(f):
        raise KeyboardInterrupt

    for fn in (fails, interrupts, seen.append):
        future.add_done_callback(fn)
    with caplog.at_level(logging.ERROR, logger="kafkacore"), pytest.raises(KeyboardInterrupt):
        # white-box: the Sender's compiled _complete_row; no public call completes a row
        future._complete_row(0, 7, None)
    assert seen == [future]
    assert future.result(0).offsets[0] == 7
    logged = [r for r in caplog.records if r.levelno == logging.ERROR and r.exc_info]
    assert [r.exc_info[0] for r in logged] == [ValueError]


def test_batch_future_callbacks_race_completion_and_each_runs_once():
    # add_done_callback on one thread while the rows complete on another: each callback runs
    # exactly once, whichever side wins.
    for _ in range(30):
        batch = make_batch()
        futures = [BatchFuture("events", 1) for _ in range(20)]
        # BatchFuture rows are completed through _record_done: reach it via a one-row call.
        for f in futures:
            f.set_partition(0, 0)
        counts = [0] * len(futures)
        start = threading.Barrier(2)

        def register(futures=futures, counts=counts, start=start):
            start.wait(5)
            for i, f in enumerate(futures):
                f.add_done_callback(lambda f, i=i: counts.__setitem__(i, counts[i] + 1))

        t = threading.Thread(target=register)
        t.start()
        start.wait(5)
        for f in futures:
            # white-box: the Sender's compiled _complete_row; no public call completes a row
            f._complete_row(0, 7, None)
        t.join(5)
        assert not t.is_alive()
        assert counts == [1] * len(futures)
        assert all(f.result(0).offsets[0] == 7 for f in futures)
        del batch


def test_a_done_callback_raising_keyboard_interrupt_does_not_stop_the_others():
    future = BatchFuture("events", 1)
    ran = []

    def interrupt(f):
        raise KeyboardInterrupt

    future.add_done_callback(interrupt)
    future.add_done_callback(lambda f: ran.append(f))
    with pytest.raises(KeyboardInterrupt):
        # white-box: the Sender's compiled _complete_row; no public call completes a row
        future._complete_row(0, 3, None)
    assert ran == [future]
    assert future.result().offsets[0] == 3


def test_batch_future_result_times_out_while_rows_are_pending():
    future = BatchFuture("events", 2)
    # white-box: the Sender's compiled _complete_row; no public call completes a row
    future._complete_row(0, 1, None)
    with pytest.raises(KafkaTimeoutError):
        future.result(0.01)


# -- the record reader: decompression has a bound --------------------------------------------


def _zstd_bomb(value_size: int) -> bytes:
    """One magic-v2 batch holding one record whose value is ``value_size`` zero bytes, zstd
    compressed as a stream (so building it never holds the value in memory)."""

    from kafkacore.broker.log.varint import varint

    # attributes, timestamp delta, offset delta, key length -1, value length, value, 0 headers
    head = b"\0" + varint(0) + varint(0) + varint(-1) + varint(value_size)
    body_len = len(head) + value_size + 1
    compressor = cramjam.zstd.Compressor(level=3)
    compressor.compress(varint(body_len) + head)
    zeros = bytes(1 << 20)
    left = value_size
    while left:
        step = min(left, len(zeros))
        compressor.compress(zeros[:step])
        left -= step
    compressor.compress(varint(0))
    section = bytes(compressor.finish())
    after_crc = struct.pack(">hiqqqhii", 4, 0, CREATED_MS, CREATED_MS, -1, -1, -1, 1) + section
    crc = crc32c(after_crc)
    return struct.pack(">qiibI", 0, 4 + 1 + 4 + len(after_crc), 0, 2, crc) + after_crc


def test_a_small_honest_bomb_reads_back_under_a_large_enough_limit():
    data = _zstd_bomb(100_000)
    # The records section: a 3-byte length, 7 bytes of fields, the value, 0 headers: 100,011.
    [record] = list(iter_records(data))
    assert record.value == bytes(100_000)
    assert [r.value for r in iter_records(data, max_decompressed_bytes=100_011)] == [record.value]
    with pytest.raises(CorruptRecordError, match="max_decompressed_bytes"):
        iter_records(data, max_decompressed_bytes=100_010)


def test_an_8_kib_zstd_batch_inflating_to_256_mib_fails_typed_with_memory_bounded():
    # In a child process, so its peak RSS is the reader's: the default limit (64 MiB) stops
    # the bomb while decompressing, so the peak stays far below the 256 MiB it would take.
    code = textwrap.dedent(
        f"""
        import resource, sys
        sys.path[:0] = [{str(KAFKACORE_ROOT)!r}, {str(TESTS)!r}]
        from test_appender_safety import _zstd_bomb
        from kafkacore.core.record_batch import iter_batches
        from kafkacore.errors import CorruptRecordError
        data = _zstd_bomb(256 << 20)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            iter_batches(data)
        except CorruptRecordError as exc:
            print("typed", len(data), before, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
            print(exc)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    ).stdout.splitlines()
    word, size, before_kib, peak_kib = out[0].split()
    assert word == "typed", out
    assert int(size) < 9000
    assert "max_decompressed_bytes" in out[1]
    # 64 MiB of buffer at most, on top of what the interpreter held before; 256 MiB is far off.
    assert int(peak_kib) - int(before_kib) < 100 * 1024, out


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_every_codec_is_bounded(codec):
    builder = MemoryRecordsBuilder(1024, compression=codec)
    for i in range(4):
        builder.append(CREATED_MS + i, None, bytes(200_000), [])
    data = bytes(builder.build())
    assert len(data) < 100_000
    assert [len(r.value) for r in iter_records(data)] == [200_000] * 4
    with pytest.raises(CorruptRecordError, match="max_decompressed_bytes"):
        iter_records(data, max_decompressed_bytes=500_000)
    # The limit is for the whole call: two batches of 800 KB each fit 2 MB, not 1.5 MB.
    assert len(list(iter_batches(data + data, max_decompressed_bytes=2_000_000))) == 2
    with pytest.raises(CorruptRecordError, match="max_decompressed_bytes"):
        iter_batches(data + data, max_decompressed_bytes=1_500_000)


def test_max_decompressed_bytes_must_be_a_non_negative_int():
    with pytest.raises(ValueError, match="max_decompressed_bytes"):
        iter_records(b"", max_decompressed_bytes=-1)
    with pytest.raises(ValueError, match="max_decompressed_bytes"):
        iter_records(b"", max_decompressed_bytes=1.5)


# -- one snapshot of the cluster per call --------------------------------------------------------


def test_a_sticky_partition_beyond_the_calls_view_is_a_typed_error_not_a_wild_write(
    bootstrap, make_topic
):
    # The sticky partitioner is shared by every sending thread: one that saw a newer cluster
    # (the topic grew to 4 partitions) may have switched to partition 3 while this call's view
    # has 2.  Before the fix send_batch counted rows into an array of count + 1 slots at index
    # 4 (a write past its end) and send() queued a batch for a partition the cluster lacks.
    topic = make_topic(partitions=2)
    with KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0) as producer:
        producer.send(topic, b"warm-up", partition=0).get(timeout=30)  # metadata, not sticky
        # white-box: the race is staged by setting the shared sticky partitioner's partition
        partitioner = producer._accumulator.built_in_partitioner(topic)
        partitioner._partition = 3  # what a switch made against the 4-partition cluster leaves
        with pytest.raises(IllegalStateError, match="partition 3 .* 0..1"):
            producer.send_batch(topic, [b"row"] * 50)
        with pytest.raises(IllegalStateError, match="partition 3 .* 0..1"):
            producer.send(topic, b"one")
        assert (topic, 3) not in producer._accumulator.batches
        # The partitioner back in range: both calls go on as usual.
        partitioner._partition = 1
        result = producer.send_batch(topic, [b"row"] * 50).result(timeout=30)
        assert result.failed == 0 and set(result.partitions) == {1}
        assert producer.send(topic, b"one").get(timeout=30).partition == 1


# -- bad input: typed errors at the call, nothing queued ---------------------------------------


@pytest.mark.parametrize("timestamp", [2**63, 2**64 + 5, -1])
def test_send_with_a_timestamp_outside_int64_is_a_value_error_naming_it(
    bootstrap, make_topic, timestamp
):
    topic = make_topic(partitions=1)
    with KafkaProducer(bootstrap_servers=bootstrap) as producer:
        with pytest.raises(ValueError, match="timestamp"):
            producer.send(topic, b"v", timestamp=timestamp)


def test_send_batch_refuses_a_timestamp_outside_int64_before_queueing_anything(
    bootstrap, make_topic
):
    topic = make_topic(partitions=1)
    with KafkaProducer(bootstrap_servers=bootstrap) as producer:
        producer.send(topic, b"warm-up", partition=0).get(timeout=30)
        with pytest.raises(ValueError, match=r"timestamps\[2\]"):
            producer.send_batch(topic, [b"a", b"b", b"c"], timestamps=[1, 2, 2**63])
        with pytest.raises(ValueError, match=r"partitions\[1\]"):
            producer.send_batch(topic, [b"a", b"b"], partitions=[0, 2**40])
        # Nothing of the refused calls was queued: the next record is right after the warm-up.
        assert producer.send(topic, b"next", partition=0).get(timeout=30).offset == 1


def test_a_str_subclass_is_a_valid_topic(bootstrap, make_topic):
    class Topic(str):
        pass

    topic = Topic(make_topic(partitions=1))
    with KafkaProducer(bootstrap_servers=bootstrap) as producer:
        metadata = producer.send(topic, b"one").get(timeout=30)
        assert type(metadata.topic) is str and metadata.topic == topic
        result = producer.send_batch(topic, [b"two", b"three"]).result(timeout=30)
        assert result.failed == 0 and type(result.topic) is str


def test_topics_sent_to_in_turn_each_get_their_own_records(bootstrap, make_topic):
    # send() tries the last topic's entry first, by identity of the string: equal strings that
    # are other objects, and another topic in between, must still find each topic's own entry.
    first, second = make_topic(partitions=1), make_topic(partitions=2)
    with KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5) as producer:
        futures = []
        for i in range(40):
            topic = first if i % 3 else second
            name = "".join(list(topic)) if i % 2 else topic  # equal, not always the same object
            futures.append((topic, producer.send(name, b"%d" % i)))
        landed = [(topic, future.get(timeout=30)) for topic, future in futures]
    assert all(metadata.topic == topic for topic, metadata in landed)
    assert {metadata.partition for topic, metadata in landed if topic == first} == {0}
    offsets = sorted(metadata.offset for topic, metadata in landed if topic == first)
    assert offsets == list(range(len(offsets)))  # each once, none lost to the other topic


def test_send_follows_a_topic_that_grows(broker, bootstrap, make_topic):
    # The send path keeps each topic's partition count beside the cluster it was read from; a
    # partition beyond it makes send() wait for new metadata and use the new cluster's count.
    from confluent_kafka.admin import AdminClient, NewPartitions

    if broker.kind == "tansu":
        pytest.skip("tansu does not implement CreatePartitions (KIP-195); our broker does")
    topic = make_topic(partitions=1)
    with KafkaProducer(bootstrap_servers=bootstrap, max_block_ms=30000) as producer:
        assert producer.send(topic, b"before", partition=0).get(timeout=30).partition == 0
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_partitions([NewPartitions(topic, 3)])[topic].result(timeout=30)
        metadata = producer.send(topic, b"after", partition=2).get(timeout=30)
        assert (metadata.topic, metadata.partition) == (topic, 2)
        assert producer.partitions_for(topic) == [0, 1, 2]


def test_reopen_and_rewrite_refuses_while_a_view_of_the_batch_is_alive():
    builder = MemoryRecordsBuilder(64, producer_id=5, producer_epoch=1, base_sequence=42)
    builder.append(CREATED_MS, b"k", b"v")
    view = builder.build()
    before = bytes(view)
    with pytest.raises(BufferError, match="view"):
        builder.reopen_and_rewrite_producer_state(5, 2, 0, False)
    assert bytes(view) == before  # the request holding it sees the bytes it was given
    assert builder.producer_epoch == 1
    view.release()
    builder.reopen_and_rewrite_producer_state(5, 2, 0, False)
    (batch,) = iter_batches(builder.build())
    assert (batch.producer_epoch, batch.base_sequence) == (2, 0)


# -- inputs are copied or pinned before any user code runs -------------------------------------


def test_a_headers_iterable_that_shrinks_a_bytearray_value_cannot_change_what_is_sent(
    bootstrap, make_topic
):
    # The headers iterable runs after the columns are read; before the fix the value column
    # pointed into the bytearray itself, which this iterable then cleared (freed memory, or a
    # different value sent).  Now the record carries the value as it was at the call.
    topic = make_topic(partitions=1)
    value = bytearray(b"v" * 5000)

    def headers():
        value.clear()
        value.extend(b"?")
        yield ("h", b"1")

    with KafkaProducer(bootstrap_servers=bootstrap) as producer:
        result = producer.send_batch(
            topic, [value, b"other"], partitions=[0, 0], headers=[headers(), None]
        ).result(timeout=30)
        assert result.failed == 0
    [first, second] = read_confluent(bootstrap, topic, 1, 2)
    assert first.value == b"v" * 5000 and first.headers == (("h", b"1"),)
    assert second.value == b"other"


def test_a_headers_generator_in_send_is_read_once_and_written(bootstrap, make_topic):
    # Before the fix send() sized the record with the generator (using it up), then wrote it
    # under the partition lock from the empty generator: the headers vanished.
    topic = make_topic(partitions=1)
    runs = []

    def headers():
        runs.append(1)
        yield ("a", b"1")
        yield ("b", None)

    with KafkaProducer(bootstrap_servers=bootstrap) as producer:
        producer.send(topic, b"x", headers=headers()).get(timeout=30)
    assert runs == [1]
    [record] = read_confluent(bootstrap, topic, 1, 1)
    assert record.headers == (("a", b"1"), ("b", None))


def _binary_array(offsets, data, validity=None, length=None):
    length = len(offsets) - 1 if length is None else length
    return pa.Array.from_buffers(
        pa.binary(),
        length,
        [
            None if validity is None else pa.py_buffer(validity),
            pa.py_buffer(struct.pack(f"<{len(offsets)}i", *offsets)),
            pa.py_buffer(data),
        ],
    )


@pytest.mark.parametrize(
    "offsets, validity, match",
    [
        ([0, 8, 2, 10], None, "not monotonic"),  # a middle offset going back
        ([0, 2, 100000, 10], None, "not monotonic|outside"),  # one far past the data
        ([0, -4, 5, 10], None, "not monotonic"),
    ],
)
def test_arrow_columns_with_bad_buffers_are_refused_before_reading(
    bootstrap, make_topic, offsets, validity, match
):
    topic = make_topic(partitions=1)
    column = _binary_array(offsets, b"0123456789" * 2, validity)
    with KafkaProducer(bootstrap_servers=bootstrap) as producer:
        with pytest.raises(ValueError, match=match):
            producer.send_batch(topic, column)
        # Nothing queued: the next record is the partition's first.
        assert producer.send(topic, b"next", partition=0).get(timeout=30).offset == 0
