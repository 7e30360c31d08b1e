"""KafkaProducer against a real broker, read back by consumers we did not write."""

from __future__ import annotations

import random
import threading
import time

import pytest
from kafka.partitioner.default import murmur2 as kafka_python_murmur2
from readback import read_confluent, read_kafka_python
from waits import wait_for_metadata, wait_until, wait_until_inside_call

from kafkacore import KafkaProducer, RecordMetadata
from kafkacore.errors import (
    BufferExhaustedError,
    ConfigError,
    IllegalStateError,
    InvalidTopicError,
    KafkaError,
    KafkaTimeoutError,
    RecordTooLargeError,
    SerializationError,
)
from kafkacore.network.client import NetworkClient

PARTITIONS = 4


def java_partition(key: bytes, partitions: int) -> int:
    """Where the Java client puts a keyed record (kafka-python's murmur2 is the reference)."""
    return (kafka_python_murmur2(key) & 0x7FFFFFFF) % partitions


def make_records(n: int, seed: int) -> list[dict]:
    """``n`` send() argument sets covering keys, null keys, null values, headers, explicit
    timestamps and explicit partitions."""
    rng = random.Random(seed)
    records = []
    for i in range(n):
        kind = i % 7
        rec: dict = {"value": b"value-%d-" % i + rng.randbytes(rng.randrange(0, 120))}
        if kind in (0, 1, 2):
            rec["key"] = b"key-%d" % rng.randrange(500)
        if kind == 3:
            rec["value"] = None
            rec["key"] = b"tombstone-%d" % i
        if kind == 4:
            rec["headers"] = [("id", b"%d" % i), ("empty", b""), ("null", None), ("ünï", b"\x00\xff")]
        if kind == 5:
            rec["timestamp"] = 1_600_000_000_000 + i
        if kind == 6:
            rec["partition"] = i % PARTITIONS
            rec["key"] = b""  # an empty key is a key: but the explicit partition wins
        records.append(rec)
    return records


def produce_all(producer, topic, records):
    futures = [producer.send(topic, **rec) for rec in records]
    producer.flush(timeout=60)
    return [f.result(timeout=10) for f in futures]


def expected_by_partition(records, metas):
    by_partition: dict[int, list] = {}
    for rec, meta in zip(records, metas, strict=True):
        headers = tuple(rec.get("headers") or ())
        by_partition.setdefault(meta.partition, []).append(
            (meta.offset, meta.timestamp, rec.get("key"), rec["value"], headers)
        )
    return by_partition


def consumed_by_partition(consumed):
    by_partition: dict[int, list] = {}
    for c in sorted(consumed, key=lambda c: (c.partition, c.offset)):
        by_partition.setdefault(c.partition, []).append(
            (c.offset, c.timestamp, c.key, c.value, c.headers)
        )
    return by_partition


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_every_record_arrives_once_in_order_on_the_java_partition(bootstrap, make_topic, codec):
    topic = make_topic(partitions=PARTITIONS)
    records = make_records(20_000, seed=hash(codec) & 0xFFFF)
    with KafkaProducer({"bootstrap.servers": bootstrap, "compression.type": codec}) as producer:
        metas = produce_all(producer, topic, records)

    for rec, meta in zip(records, metas, strict=True):
        assert isinstance(meta, RecordMetadata)
        assert meta.topic == topic
        if "partition" in rec:
            assert meta.partition == rec["partition"]
        elif rec.get("key") is not None:
            assert meta.partition == java_partition(rec["key"], PARTITIONS)
        if "timestamp" in rec:
            assert meta.timestamp == rec["timestamp"]
    assert len({m.partition for m in metas}) == PARTITIONS  # null keys spread (sticky)

    expected = expected_by_partition(records, metas)
    for reader in (read_confluent, read_kafka_python):
        consumed = reader(bootstrap, topic, PARTITIONS, len(records))
        assert len(consumed) == len(records), reader.__name__
        assert consumed_by_partition(consumed) == expected, reader.__name__


def test_a_record_without_a_timestamp_carries_the_wall_clock_of_its_send(bootstrap, make_topic):
    # send() derives the wall clock from the monotonic one plus an offset it reads again every
    # 100 ms (kafkacore/core/appender.pyx): each record's timestamp must still lie between wall
    # clock readings taken just before and just after its send, as read by another client.
    topic = make_topic(partitions=1)
    bounds = []
    with KafkaProducer({"bootstrap.servers": bootstrap, "linger.ms": 0}) as producer:
        futures = []
        for i in range(30):
            before = time.time_ns() // 1_000_000
            futures.append(producer.send(topic, b"%d" % i))
            bounds.append((before, time.time_ns() // 1_000_000))
            if i % 10 == 9:
                time.sleep(0.11)  # past the offset's 100 ms: the next send reads it again
        metas = [f.get(timeout=30) for f in futures]
    for (before, after), meta in zip(bounds, metas, strict=True):
        assert before <= meta.timestamp <= after
    consumed = read_kafka_python(bootstrap, topic, 1, len(metas))
    assert sorted(c.timestamp for c in consumed) == sorted(m.timestamp for m in metas)


def test_callbacks_and_futures_complete_exactly_once(bootstrap, make_topic):
    topic = make_topic(partitions=3)
    calls: dict[int, list] = {}
    lock = threading.Lock()
    order: dict[int, list] = {}

    def callback_for(i):
        def callback(metadata, exception):
            with lock:
                calls.setdefault(i, []).append((metadata, exception))
                order.setdefault(metadata.partition, []).append(metadata.offset)

        return callback

    n = 5000
    with KafkaProducer(bootstrap_servers=bootstrap, linger_ms=2) as producer:
        futures = [
            producer.send(topic, b"v%d" % i, key=b"k%d" % (i % 17), callback=callback_for(i))
            for i in range(n)
        ]
        producer.flush(timeout=60)
        done_callbacks = []
        futures[0].add_done_callback(done_callbacks.append)
    assert done_callbacks == [futures[0]]
    assert sorted(calls) == list(range(n))
    for i, f in enumerate(futures):
        assert f.done() and f.exception() is None
        [(metadata, exception)] = calls[i]
        assert exception is None
        assert metadata == f.result() == f.get()
    for offsets in order.values():  # callbacks run in send order per partition
        assert offsets == sorted(offsets)
    consumed = read_confluent(bootstrap, topic, 3, n)
    seen = {(c.partition, c.offset): c.value for c in consumed}
    for i, f in enumerate(futures):
        meta = f.result()
        assert seen[(meta.partition, meta.offset)] == b"v%d" % i


def test_many_threads_sending_at_once(bootstrap, make_topic):
    topic = make_topic(partitions=3)
    per_thread, threads = 3000, 8
    with KafkaProducer(bootstrap_servers=bootstrap) as producer:
        results: list = [None] * threads

        def work(t):
            results[t] = [
                producer.send(topic, b"%d-%d" % (t, i), key=b"t%d" % t) for i in range(per_thread)
            ]

        workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(60)
        producer.flush(timeout=60)
    for futures in results:
        offsets = [f.result(timeout=5).offset for f in futures]
        assert offsets == sorted(offsets), "one thread's keyed records stay in order"
    consumed = read_confluent(bootstrap, topic, 3, per_thread * threads)
    assert sorted(c.value for c in consumed) == sorted(
        b"%d-%d" % (t, i) for t in range(threads) for i in range(per_thread)
    )


def test_serializers_and_interceptors(bootstrap, make_topic):
    topic = make_topic(partitions=1)
    seen = []

    class Stamp:
        def on_send(self, topic, value, key, partition, timestamp, headers):
            return topic, value, key, partition, timestamp, [("stamped", b"yes")]

        def on_acknowledgement(self, metadata, exception):
            seen.append((metadata.offset, exception))

    with KafkaProducer(
        bootstrap_servers=bootstrap,
        key_serializer=lambda topic, k: k.encode(),
        value_serializer=lambda topic, v: str(v).encode(),
        interceptor_classes=[Stamp()],
    ) as producer:
        producer.send(topic, 12345, key="k").get(timeout=30)
    [c] = read_confluent(bootstrap, topic, 1, 1)
    assert (c.key, c.value, c.headers) == (b"k", b"12345", (("stamped", b"yes"),))
    assert seen == [(0, None)]


def test_partitions_for_and_metrics(bootstrap, make_topic):
    topic = make_topic(partitions=5)
    with KafkaProducer(bootstrap_servers=bootstrap) as producer:
        assert producer.partitions_for(topic) == [0, 1, 2, 3, 4]
        for _ in range(2000):
            producer.send(topic, b"x" * 100)
        producer.flush(timeout=30)
        m = producer.metrics()
    for name in (
        "record-send-rate", "batch-size-avg", "record-queue-time-avg", "request-latency-avg",
        "buffer-available-bytes", "record-retry-rate", "record-error-rate", "requests-in-flight",
    ):
        assert name in m, name
    assert m["record-send-rate"] > 0
    assert m["batch-size-avg"] > 100
    assert m["buffer-available-bytes"] == 32 * 1024 * 1024
    assert m["record-error-rate"] == 0


def test_custom_partitioner(bootstrap, make_topic):
    topic = make_topic(partitions=3)
    with KafkaProducer(
        bootstrap_servers=bootstrap,
        partitioner_class=lambda topic, key, value, n, available: n - 1,
    ) as producer:
        assert producer.send(topic, b"v", key=b"k").get(timeout=30).partition == 2
    with KafkaProducer(
        bootstrap_servers=bootstrap, partitioner_class=lambda *args: 99
    ) as producer, pytest.raises(ValueError, match="partitioner.class returned 99"):
        producer.send(topic, b"v")


# -- faults -----------------------------------------------------------------------------------


def test_no_broker_send_times_out_after_max_block_ms(closed_port):
    with KafkaProducer(bootstrap_servers=f"127.0.0.1:{closed_port}", max_block_ms=1000) as producer:
        start = time.monotonic()
        with pytest.raises(KafkaTimeoutError):
            producer.send("t", b"v")
        # It waited its max.block.ms (no upper bound here: a loaded machine may be slow to wake).
        assert time.monotonic() - start >= 1.0
        producer.close(0)


def test_unknown_topic_is_created_by_the_broker_and_the_record_lands(bootstrap):
    # The producer asks for metadata with allow_auto_topic_creation (as Java does); tansu, like
    # Kafka with auto.create.topics.enable, creates the topic.
    topic = f"never-created-{time.monotonic_ns()}"
    with KafkaProducer(bootstrap_servers=bootstrap, max_block_ms=10_000) as producer:
        meta = producer.send(topic, b"first").get(timeout=30)
        partitions = len(producer.partitions_for(topic))
    assert (meta.topic, meta.offset) == (topic, 0)
    [c] = read_confluent(bootstrap, topic, partitions, 1)
    assert (c.partition, c.value) == (meta.partition, b"first")


def test_invalid_topic_name_fails_at_send(bootstrap):
    with KafkaProducer(bootstrap_servers=bootstrap, max_block_ms=10_000) as producer:
        with pytest.raises((InvalidTopicError, KafkaTimeoutError)):
            producer.send("bad topic name!", b"v")


def test_record_larger_than_max_request_size(bootstrap, make_topic):
    topic = make_topic(partitions=1)
    with KafkaProducer(bootstrap_servers=bootstrap, max_request_size=1000) as producer:
        with pytest.raises(RecordTooLargeError, match="max.request.size"):
            producer.send(topic, b"x" * 2000)
        assert producer.send(topic, b"x" * 100).get(timeout=30).offset == 0


def test_max_block_ms_zero_still_fetches_an_unknown_topic(bootstrap, make_topic):
    # With max.block.ms=0 the call gives up at once, but it must ask (and wake the Sender) on its
    # way out, as Java's waitOnMetadata does: otherwise an idle Sender sleeps a whole
    # request.timeout.ms (here 60 s) before fetching the topic, and every retry finds nothing.
    topic = make_topic(partitions=3)
    producer = KafkaProducer(bootstrap_servers=bootstrap, max_block_ms=0, request_timeout_ms=60_000)
    try:
        deadline = time.monotonic() + 30
        while producer._metadata.version == 0:  # the bootstrap answer, before we name the topic
            assert time.monotonic() < deadline, "no metadata from the broker"
            time.sleep(0.01)
        # The Sender settled into its idle poll: blocked in the selector, inside NetworkClient.poll.
        wait_until_inside_call(producer._sender.thread, "poll", within=(NetworkClient.poll,))
        with pytest.raises(KafkaTimeoutError, match="not present in metadata after 0 ms"):
            producer.partitions_for(topic)
        assert len(wait_for_metadata(producer, topic, bound_s=15.0)) == 3
    finally:
        producer.close()


def test_buffer_full_with_max_block_ms_zero(broker, make_topic):
    # Freeze the broker (SIGSTOP): requests go out and nothing comes back, so memory stays taken.
    topic = make_topic(partitions=1)
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap, buffer_memory=32768, batch_size=16384,
        max_block_ms=0, linger_ms=0,
    )
    try:
        wait_for_metadata(producer, topic)
        futures = []
        with broker.paused(), pytest.raises(BufferExhaustedError):
            for _ in range(1000):  # two batches of memory, then the third cannot wait
                futures.append(producer.send(topic, b"x" * 1000))
        producer.flush(timeout=30)
        assert all(f.exception() is None for f in futures)  # what was accepted is delivered
    finally:
        producer.close()


def test_send_after_close(bootstrap):
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    producer.close()
    with pytest.raises(IllegalStateError):
        producer.send("t", b"v")
    producer.close()  # closing twice is fine


def test_close_zero_fails_what_is_unsent(bootstrap, make_topic):
    topic = make_topic(partitions=1)
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=60_000, batch_size=1 << 20)
    producer.partitions_for(topic)
    futures = [producer.send(topic, b"v%d" % i) for i in range(100)]
    producer.close(0)
    for f in futures:
        assert f.done()
        assert isinstance(f.exception(), KafkaError)


def test_close_during_heavy_sending(bootstrap, make_topic):
    topic = make_topic(partitions=2)
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    futures = []
    stop = threading.Event()

    def spam():
        while not stop.is_set():
            try:
                futures.append(producer.send(topic, b"x" * 100))
            except IllegalStateError:
                return

    t = threading.Thread(target=spam)
    t.start()
    # Close while records flow: some acknowledged already, more in the accumulator.
    wait_until(lambda: len(futures) > 100 and futures[0].done(), "records flowing")
    producer.close(timeout=30)
    stop.set()
    t.join(10)
    assert futures
    acked = 0
    for f in futures:
        assert f.done()
        if f.exception() is None:
            acked += 1
    consumed = read_confluent(bootstrap, topic, 2, acked)
    assert len(consumed) == acked


def test_broker_killed_and_restarted_mid_stream(broker, make_topic):
    topic = make_topic(partitions=2)
    outcomes = {"ok": 0, "failed": 0}
    lock = threading.Lock()

    def callback(metadata, exception):
        with lock:
            outcomes["ok" if exception is None else "failed"] += 1

    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap, delivery_timeout_ms=8000, request_timeout_ms=3000,
        linger_ms=5, max_block_ms=8000,
    )
    n = 0
    try:
        for i in range(20_000):
            producer.send(topic, b"before-%d" % i, callback=callback)
            n += 1
        broker.kill()
        for i in range(2_000):
            try:
                producer.send(topic, b"during-%d" % i, partition=i % 2, callback=callback)
                n += 1
            except KafkaTimeoutError:
                break
        broker.restart()
        producer.flush(timeout=30)
    finally:
        producer.close(timeout=30)
    assert outcomes["ok"] + outcomes["failed"] == n  # every record ended, none in silence


# -- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"value": "text"}, SerializationError),
        ({"value": 42}, SerializationError),
        ({"value": b"v", "key": 7}, SerializationError),
        ({"value": b"v", "partition": -1}, ValueError),
        ({"value": b"v", "partition": "0"}, ValueError),
        ({"value": b"v", "timestamp": -5}, ValueError),
        ({"value": b"v", "timestamp": 1.5}, ValueError),
        ({"value": b"v", "headers": [("k", 42)]}, TypeError),
        ({"value": b"v", "headers": [(1, b"v")]}, TypeError),
        ({"value": b"v", "headers": ["nope"]}, TypeError),
        ({"value": b"v", "callback": 3}, TypeError),
        ({"value": b"v", "timestamp": 1, "timestamp_ms": 1}, TypeError),
        ({"value": b"v", "callback": print, "on_delivery": print}, TypeError),
        ({"value": b"v", "on_delivery": 3}, TypeError),
        ({"value": b"v", "no_such_argument": 1}, TypeError),
    ],
)
def test_bad_input_is_a_typed_error_at_the_call(bootstrap, make_topic, kwargs, error):
    topic = make_topic(partitions=1)
    with KafkaProducer(bootstrap_servers=bootstrap) as producer:
        with pytest.raises(error):
            producer.send(topic, **kwargs)
        assert producer.send(topic, b"fine").get(timeout=30).offset == 0


def test_send_is_compiled_unless_python_must_run_before_the_append(bootstrap, make_topic):
    topic = make_topic(partitions=1)
    calls = []

    class Counting(KafkaProducer):
        def send(self, *args, **kwargs):
            calls.append(args[0])
            return super().send(*args, **kwargs)

    class PassThrough:
        def on_send(self, *record):
            calls.append("intercepted")

        def on_acknowledgement(self, metadata, exception):
            pass

    with KafkaProducer(bootstrap_servers=bootstrap) as plain, Counting(
        bootstrap_servers=bootstrap
    ) as counting, KafkaProducer(
        bootstrap_servers=bootstrap, interceptor_classes=[PassThrough()]
    ) as intercepted:
        # No Python frame per record: send is the appender's own method.
        assert plain.send.__self__ is plain._appender
        assert plain.send(topic, b"a", on_delivery=lambda err, msg: calls.append(msg.value()),
                          timestamp_ms=7).get(timeout=30).timestamp == 7
        # A subclass's send and an interceptor still run, record by record.
        counting.send(topic, b"b").get(timeout=30)
        intercepted.send(topic, b"c").get(timeout=30)
    assert calls == [b"a", topic, "intercepted"]


def test_out_of_range_partition(bootstrap, make_topic):
    topic = make_topic(partitions=2)
    with KafkaProducer(bootstrap_servers=bootstrap, max_block_ms=1500) as producer:
        with pytest.raises(KafkaTimeoutError, match="partition count 2"):
            producer.send(topic, b"v", partition=7)


@pytest.mark.parametrize(
    "settings, key",
    [
        ({"linger.ms": -1}, "linger.ms"),
        ({"no.such.setting": 1}, "no.such.setting"),
        ({"acks": "some"}, "acks"),
        ({"enable.idempotence": True, "acks": 1}, "acks"),
        ({"delivery.timeout.ms": 1000, "request.timeout.ms": 30000}, "delivery.timeout.ms"),
        ({"compression.type": "brotli"}, "compression.type"),
    ],
)
def test_bad_config_names_the_key(bootstrap, settings, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        KafkaProducer({"bootstrap.servers": bootstrap, **settings})


def test_batch_size_zero_means_one_record_per_batch(bootstrap, make_topic):
    from kafkacore.core import iter_batches
    from kafkacore.testing import fetch_record_batches

    topic = make_topic(partitions=1)
    with KafkaProducer(bootstrap_servers=bootstrap, batch_size=0) as producer:
        futures = [producer.send(topic, b"v%d" % i) for i in range(20)]
        producer.flush(timeout=30)
    assert sorted(f.result().offset for f in futures) == list(range(20))
    batches = [b for raw in fetch_record_batches(bootstrap, topic, 0) for b in iter_batches(raw)]
    assert [b.record_count for b in batches] == [1] * 20


def test_headers_as_a_dict_and_str_values_are_sent_as_confluent_kafka_sends_them(
        bootstrap, make_topic):
    """confluent-kafka takes headers as a dict and str values (UTF-8); so do we, and its consumer
    reads back the same bytes."""
    topic = make_topic(partitions=1)
    with KafkaProducer(bootstrap_servers=bootstrap) as producer:
        producer.send(topic, b"1", headers={"trace": "abc-é", "raw": b"\x00\x01", "none": None})
        producer.send(topic, b"2", headers=[("a", "x"), ("a", b"y")])
        producer.flush(30)
    got = [(r.value, list(r.headers)) for r in read_confluent(bootstrap, topic, 1, 2)]
    assert got == [
        (b"1", [("trace", "abc-é".encode()), ("raw", b"\x00\x01"), ("none", None)]),
        (b"2", [("a", b"x"), ("a", b"y")]),
    ]
