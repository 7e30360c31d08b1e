"""Hypothesis over the public API (issue 11, part 2): ``send``, ``send_batch`` and the settings.

Whatever a caller passes, the answer is a future or a typed error (``TypeError``, ``ValueError`` or
a :class:`~kafkacore.errors.KafkaError`) at the call; never a crash, never a hang, and the producer
keeps working for good input afterwards.  Every future that was returned completes.  The record
reader has its own fuzzing in tests/test_records.py.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from support.examples import examples
from support.topics import new_topic

from kafkacore import KafkaProducer
from kafkacore.config import SETTINGS, ProducerConfig
from kafkacore.errors import ConfigError, KafkaError

pytestmark = pytest.mark.timeout(600)  # a hang fails, bounded

TYPED = (TypeError, ValueError, KafkaError)


class Weird:
    """An object no argument should accept."""

    def __bytes__(self):
        raise RuntimeError("must not be called under a lock")


def _shrinking_headers():
    def gen():
        yield ("a", b"1")
        yield ("b", bytearray(b"2"))

    return gen()


blobs = st.one_of(
    st.none(),
    st.binary(max_size=300),
    st.binary(max_size=300).map(bytearray),
    st.binary(max_size=300).map(memoryview),
    st.text(max_size=50),
    st.integers(),
    st.floats(allow_nan=True),
    st.lists(st.integers(0, 255), max_size=5),
    st.just(Weird()),
)
header_values = st.one_of(st.none(), st.binary(max_size=20), st.text(max_size=5), st.integers(),
                          st.binary(max_size=20).map(bytearray))
headers = st.one_of(
    st.none(),
    st.lists(st.tuples(st.one_of(st.text(max_size=8), st.binary(max_size=4), st.integers()),
                       header_values), max_size=4),
    st.lists(st.one_of(st.integers(), st.text(max_size=3), st.tuples(st.text(max_size=3))),
             max_size=3),
    st.dictionaries(st.text(max_size=5), header_values, max_size=3),
    st.just("not headers"),
    st.builds(_shrinking_headers),
)
big_ints = st.one_of(st.integers(), st.integers(-(2**70), 2**70))
partitions = st.one_of(st.none(), st.integers(-3, 5), big_ints, st.text(max_size=3),
                       st.floats(), st.booleans())
timestamps = st.one_of(st.none(), big_ints, st.floats(), st.text(max_size=3), st.booleans())


@pytest.fixture(scope="module")
def fuzz_target(_local_broker):
    """One producer and a 3-partition topic for the module (hypothesis runs many examples; a
    producer each would test construction, not sending)."""
    if not _local_broker.is_running():
        _local_broker.restart()
    topic = new_topic(_local_broker, 3, prefix="fuzz-api")
    producer = KafkaProducer(bootstrap_servers=_local_broker.bootstrap, linger_ms=2,
                             max_block_ms=10_000, delivery_timeout_ms=60_000)
    producer.partitions_for(topic)
    try:
        yield producer, topic
    finally:
        producer.close(10)


def _call(futures, fn, *args, **kwargs):
    try:
        future = fn(*args, **kwargs)
    except TYPED:
        return
    futures.append(future)


def _check_outcome(producer, topic, futures):
    """What a fuzz test asserts once its examples have run: some reached the send path, every
    future handed out completed, and the producer still works for good input."""
    producer.flush(timeout=60)
    assert futures, "no example was accepted: the fuzzing did not reach the send path"
    assert all(f.done() for f in futures)
    assert producer.send(topic, b"still fine", partition=0).get(timeout=30).topic == topic


def test_send_answers_a_future_or_a_typed_error(fuzz_target):
    producer, good_topic = fuzz_target
    futures: list = []

    @settings(max_examples=examples(300), deadline=None)
    @given(value=blobs, key=blobs, partition=partitions, timestamp=timestamps, hdrs=headers,
           topic_ok=st.booleans(), topic=st.text(max_size=12))
    # Valid calls are rare among the draws (about one in a hundred): one is always tried.
    @example(value=b"v", key=b"k", partition=None, timestamp=None, hdrs=None, topic_ok=True,
             topic="")
    def send(value, key, partition, timestamp, hdrs, topic_ok, topic):
        _call(futures, producer.send, good_topic if topic_ok else topic, value, key=key,
              partition=partition, timestamp=timestamp, headers=hdrs)

    send()
    _check_outcome(producer, good_topic, futures)


def test_send_batch_answers_a_future_or_a_typed_error(fuzz_target):
    producer, topic = fuzz_target
    futures: list = []

    @settings(max_examples=examples(200), deadline=None)
    @given(
        values=st.one_of(st.lists(blobs, max_size=20), blobs),
        keys=st.one_of(st.none(), st.lists(blobs, max_size=20)),
        parts=st.one_of(st.none(), st.lists(partitions, max_size=20)),
        stamps=st.one_of(st.none(), st.lists(timestamps, max_size=20)),
        hdrs=st.one_of(st.none(), st.lists(headers, max_size=20)),
    )
    def send_batch(values, keys, parts, stamps, hdrs):
        _call(futures, producer.send_batch, topic, values, keys, parts, stamps, hdrs)

    send_batch()
    _check_outcome(producer, topic, futures)


setting_values = st.one_of(
    st.none(), st.booleans(), big_ints, st.floats(allow_nan=True), st.text(max_size=20),
    st.sampled_from(["all", "-1", "1", "0", "gzip", "zstd", "none", "PLAINTEXT", "SSL",
                     "127.0.0.1:1", "a:b:c", "", "true", "false"]),
    st.lists(st.text(max_size=10), max_size=3), st.just(Weird()),
)


@settings(max_examples=examples(300), deadline=None)
@given(st.dictionaries(st.sampled_from([s.name for s in SETTINGS]), setting_values, max_size=6))
def test_any_settings_are_accepted_or_refused_with_config_error(config):
    try:
        ProducerConfig(config)
    except ConfigError:
        return
    # Accepted settings make a producer (or a ConfigError for what only construction checks:
    # key files, JAAS lines), which closes at once: nothing connects anywhere real.
    config = {**config, "bootstrap.servers": "127.0.0.1:1"}
    try:
        producer = KafkaProducer(config)
    except ConfigError:
        return
    producer.close(0)


# -- the record reader: any bytes, any codec, any bound -----------------------------------------

record_lists = st.lists(
    st.tuples(st.one_of(st.none(), st.binary(max_size=30)),
              st.one_of(st.none(), st.binary(max_size=200)),
              st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=8))),
                       max_size=2)),
    min_size=1, max_size=8,
)


@settings(max_examples=examples(300), deadline=None)
@given(records=record_lists, codec=st.sampled_from(["none", "gzip", "snappy", "lz4", "zstd"]),
       data=st.data())
def test_the_reader_answers_records_or_corrupt_record_error(records, codec, data):
    """Batches of any records and codec, damaged anywhere (the CRC recomputed half the time so
    the parser meets the damage), cut, doubled, and read under any decompression bound: records
    or :class:`~kafkacore.errors.CorruptRecordError`, nothing else."""
    from kafkacore.core import MemoryRecordsBuilder
    from kafkacore.core.records import crc32c, iter_batches
    from kafkacore.errors import CorruptRecordError

    builder = MemoryRecordsBuilder(256, compression=codec)
    for key, value, hdrs in records:
        builder.append(1_700_000_000_000, key, value, hdrs)
    batch = bytearray(builder.build())
    for _ in range(data.draw(st.integers(0, 4))):
        pos = data.draw(st.integers(0, len(batch) - 1))
        batch[pos] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        del batch[data.draw(st.integers(0, len(batch))):]
    if len(batch) > 21 and data.draw(st.booleans()):
        struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    blob = bytes(batch) * data.draw(st.integers(1, 2))
    limit = data.draw(st.one_of(st.integers(0, 4096), st.just(64 << 20)))
    try:
        for b in iter_batches(blob, max_decompressed_bytes=limit):
            for r in b.records:
                assert r.key is None or isinstance(r.key, bytes)
                assert r.value is None or isinstance(r.value, bytes)
    except CorruptRecordError:
        pass
