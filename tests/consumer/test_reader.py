"""PartitionReader against our broker (the ``kafka_broker`` fixture), with records written by
clients we did not write (confluent-kafka, kafka-python) and by our producer: every codec,
null keys and values, headers, both timestamp types, ranges across batch boundaries,
read_committed (aborted transactions and control records absent, the LSO respected), the
log start moved by DeleteRecords, a NOT_LEADER / FENCED_LEADER_EPOCH answer retried, and bad
input refused at the call.  docs/consumer.rst describes what is tested here."""

from __future__ import annotations

import time

import pyarrow as pa
import pytest
from waits import wait_until

from kafkacore import KafkaProducer
from kafkacore.consumer import (
    SPARK_KAFKA_SCHEMA,
    SPARK_KAFKA_SCHEMA_WITH_HEADERS,
    OffsetSpec,
    PartitionReader,
)
from kafkacore.errors import (
    ConfigError,
    KafkaTimeoutError,
    OffsetOutOfRangeError,
    UnknownTopicOrPartitionError,
)

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


@pytest.fixture
def bootstrap(kafka_broker):
    return kafka_broker.bootstrap_servers


@pytest.fixture
def reader(bootstrap):
    with PartitionReader({"bootstrap.servers": bootstrap}) as r:
        yield r


def committed_reader(bootstrap):
    return PartitionReader({"bootstrap.servers": bootstrap, "isolation.level": "read_committed"})


def confluent_producer(bootstrap, **config):
    from confluent_kafka import Producer

    return Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **config})


def rows(batch: pa.RecordBatch) -> list[tuple]:
    """(offset, key, value, headers) of each row."""
    d = batch.to_pydict()
    headers = d.get("headers") or [None] * batch.num_rows
    return [(o, k, v, None if h is None else [(e["key"], e["value"]) for e in h])
            for o, k, v, h in zip(d["offset"], d["key"], d["value"], headers, strict=True)]


def test_records_from_confluent_kafka_every_codec(kafka_broker, reader):
    topic = kafka_broker.new_topic(len(CODECS))
    sent = {}
    for p, codec in enumerate(CODECS):
        producer = confluent_producer(kafka_broker.bootstrap_servers, **{
            "compression.type": codec, "batch.num.messages": 37})
        sent[p] = [(None if i % 5 == 0 else b"key-%d" % i, None if i % 7 == 3 else b"v" * i,
                    [(f"h{i % 3}", b"x" * (i % 4))] if i % 2 else None)
                   for i in range(200)]
        for key, value, headers in sent[p]:
            producer.produce(topic, value, key, partition=p, headers=headers)
        assert producer.flush(30) == 0
    for p in range(len(CODECS)):
        batch = reader.read_range(topic, p, 0, 200, include_headers=True)
        assert batch.schema == SPARK_KAFKA_SCHEMA_WITH_HEADERS
        assert rows(batch) == [(i, k, v, list(h or ())) for i, (k, v, h) in enumerate(sent[p])]
        assert set(batch.column("topic").to_pylist()) == {topic}
        assert set(batch.column("partition").to_pylist()) == {p}


def test_records_from_kafka_python_and_ours_same_as_confluent_reads(kafka_broker, reader):
    from kafka import KafkaProducer as KpProducer

    topic = kafka_broker.new_topic(2)
    kp = KpProducer(bootstrap_servers=kafka_broker.bootstrap_servers, compression_type="gzip",
                    linger_ms=5)
    for i in range(300):
        kp.send(topic, value=b"kp-%d" % i, key=b"k" if i % 2 else None, partition=0,
                headers=[("n", str(i).encode())], timestamp_ms=1_600_000_000_000 + i)
    kp.flush(30)
    kp.close()
    with KafkaProducer({"bootstrap.servers": kafka_broker.bootstrap_servers,
                        "compression.type": "zstd", "batch.size": 2000}) as ours:
        for i in range(300):
            ours.send(topic, value=b"ours-%d" % i, partition=1, timestamp_ms=1_700_000_000_000 + i)
        ours.flush()
    got = reader.read_range(topic, 0, 0, 300, include_headers=True).to_pydict()
    assert got["value"] == [b"kp-%d" % i for i in range(300)]
    assert got["headers"][7] == [{"key": "n", "value": b"7"}]
    # CreateTime: the producer's timestamps, as Spark's microseconds.
    micros = pa.array(got["timestamp"], pa.timestamp("us", tz="UTC")).cast(pa.int64())
    assert micros.to_pylist() == [(1_600_000_000_000 + i) * 1000 for i in range(300)]
    assert set(got["timestampType"]) == {0}
    ours_rows = reader.read_range(topic, 1, 0, 300)
    assert ours_rows.schema == SPARK_KAFKA_SCHEMA
    assert ours_rows.column("value").to_pylist() == [b"ours-%d" % i for i in range(300)]
    # The same rows a consumer we did not write reads.
    from readback import read_confluent

    theirs = read_confluent(kafka_broker.bootstrap_servers, topic, 2, 600)
    for p in (0, 1):
        mine = reader.read_range(topic, p, 0, 300, include_headers=True).to_pydict()
        expected = sorted((c.offset, c.timestamp, c.key, c.value) for c in theirs
                          if c.partition == p)
        ms = pa.array(mine["timestamp"], pa.timestamp("us", tz="UTC")).cast(pa.int64())
        assert list(zip(mine["offset"], [t // 1000 for t in ms.to_pylist()], mine["key"],
                        mine["value"], strict=True)) == expected


def test_log_append_time(kafka_broker, reader):
    topic = kafka_broker.new_topic(1, configs={"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    producer = confluent_producer(kafka_broker.bootstrap_servers)
    for i in range(10):
        producer.produce(topic, b"%d" % i, partition=0, timestamp=1000)  # replaced by the broker
    assert producer.flush(30) == 0
    after = int(time.time() * 1000)
    batch = reader.read_range(topic, 0, 0, 10)
    assert set(batch.column("timestampType").to_pylist()) == {1}
    for t in batch.column("timestamp").cast(pa.int64()).to_pylist():
        assert before * 1000 <= t <= after * 1000


def test_ranges_across_batch_boundaries(kafka_broker, reader):
    topic = kafka_broker.new_topic(1)
    producer = confluent_producer(kafka_broker.bootstrap_servers, **{"compression.type": "lz4"})
    # Batches of 7, 7, ..., each flushed on its own: boundaries at multiples of 7.
    for b in range(20):
        for i in range(7):
            producer.produce(topic, b"%d" % (b * 7 + i), partition=0)
        assert producer.flush(30) == 0
    for start, end in [(0, 140), (3, 4), (6, 8), (7, 14), (10, 131), (139, 140), (50, 50),
                       (130, 10**9)]:
        values = reader.read_range(topic, 0, start, end).column("value").to_pylist()
        assert values == [b"%d" % i for i in range(start, min(end, 140))], (start, end)
    # Small fetches: each Fetch answer a batch or two, one RecordBatch per answer.
    with PartitionReader({"bootstrap.servers": kafka_broker.bootstrap_servers,
                          "max.partition.fetch.bytes": 100}) as small:
        parts = list(small.read(topic, 0, 5, 61))
        assert len(parts) > 3
        assert pa.Table.from_batches(parts).column("offset").to_pylist() == list(range(5, 61))
        assert sum(b.num_rows for b in small.read(topic, 0, 5, 140, max_rows=17)) == 17


def test_list_offsets_and_metadata(kafka_broker, reader):
    topic = kafka_broker.new_topic(3)
    producer = confluent_producer(kafka_broker.bootstrap_servers)
    for i in range(10):
        producer.produce(topic, b"%d" % i, partition=0, timestamp=10_000 + 100 * i)
    assert producer.flush(30) == 0
    tps = [(topic, p) for p in range(3)]
    assert reader.list_offsets(tps, OffsetSpec.EARLIEST) == dict.fromkeys(tps, 0)
    assert reader.list_offsets(tps, OffsetSpec.LATEST) == {tps[0]: 10, tps[1]: 0, tps[2]: 0}
    # By timestamp: the first offset at or after it; past every record, the end of the log.
    assert reader.list_offsets([tps[0]], 10_250) == {tps[0]: 3}
    assert reader.list_offsets([tps[0]], 0) == {tps[0]: 0}
    assert reader.list_offsets([tps[0]], 99_000) == {tps[0]: 10}
    assert reader.partitions_for([topic, "no-such-topic-here"]) == {topic: 3}
    other = kafka_broker.new_topic(2, prefix="other")
    found = reader.topics_matching(r"(test|other)-[0-9a-f]+")
    assert found[topic] == 3 and found[other] == 2
    assert not any(name.startswith("__") for name in reader.topics_matching(".*"))
    with pytest.raises(UnknownTopicOrPartitionError):
        reader.list_offsets([(topic, 7)], OffsetSpec.LATEST)


def transactional(bootstrap, tid):
    producer = confluent_producer(bootstrap, **{"transactional.id": tid})
    producer.init_transactions(30)
    return producer


def test_read_committed_drops_aborted_and_control_records(kafka_broker, bootstrap):
    topic = kafka_broker.new_topic(1)
    producer = transactional(bootstrap, f"tx-{topic}")
    for outcome, values in (("commit", [b"c1", b"c2"]), ("abort", [b"a1", b"a2", b"a3"]),
                            ("commit", [b"c3"])):
        producer.begin_transaction()
        for v in values:
            producer.produce(topic, v, partition=0)
        assert producer.flush(30) == 0  # in the log before the abort marker
        getattr(producer, f"{outcome}_transaction")(30)
    plain = confluent_producer(bootstrap)
    plain.produce(topic, b"plain", partition=0)
    assert plain.flush(30) == 0
    with committed_reader(bootstrap) as r:
        end = r.list_offsets([(topic, 0)], OffsetSpec.LATEST)[(topic, 0)]
        # 6 data records, 3 markers, 1 plain record
        assert end == 10
        got = r.read_range(topic, 0, 0, end)
        assert got.column("value").to_pylist() == [b"c1", b"c2", b"c3", b"plain"]
        assert got.column("offset").to_pylist() == [0, 1, 7, 9]
        # Starting inside the aborted transaction skips the rest of it.
        assert r.read_range(topic, 0, 4, end).column("value").to_pylist() == [b"c3", b"plain"]
    with PartitionReader({"bootstrap.servers": bootstrap}) as r:
        # read_uncommitted: the aborted records too, never the control records.
        assert r.read_range(topic, 0, 0, 10).column("offset").to_pylist() == [
            0, 1, 3, 4, 5, 7, 9]


def test_read_committed_stops_at_the_last_stable_offset(kafka_broker, bootstrap):
    topic = kafka_broker.new_topic(1)
    plain = confluent_producer(bootstrap)
    for i in range(3):
        plain.produce(topic, b"before-%d" % i, partition=0)
    assert plain.flush(30) == 0
    producer = transactional(bootstrap, f"tx-{topic}")
    producer.begin_transaction()
    producer.produce(topic, b"open", partition=0)
    assert producer.flush(30) == 0
    for i in range(2):
        plain.produce(topic, b"after-%d" % i, partition=0)
    assert plain.flush(30) == 0
    try:
        with committed_reader(bootstrap) as r:
            assert r.list_offsets([(topic, 0)], OffsetSpec.LATEST) == {(topic, 0): 3}
            got = r.read_range(topic, 0, 0, 6, timeout_s=10)
            assert got.column("value").to_pylist() == [b"before-0", b"before-1", b"before-2"]
        with PartitionReader({"bootstrap.servers": bootstrap}) as r:
            assert r.list_offsets([(topic, 0)], OffsetSpec.LATEST) == {(topic, 0): 6}
            assert r.read_range(topic, 0, 0, 6).num_rows == 6
    finally:
        producer.abort_transaction(30)
    with committed_reader(bootstrap) as r:
        assert r.read_range(topic, 0, 0, 7).column("value").to_pylist() == [
            b"before-0", b"before-1", b"before-2", b"after-0", b"after-1"]


def test_offset_out_of_range_after_delete_records(kafka_broker, reader):
    from confluent_kafka import TopicPartition as CkTopicPartition
    from confluent_kafka.admin import AdminClient

    topic = kafka_broker.new_topic(1)
    producer = confluent_producer(kafka_broker.bootstrap_servers)
    for i in range(10):
        producer.produce(topic, b"%d" % i, partition=0)
        producer.flush(30)  # one batch each: DeleteRecords then cuts between batches
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap_servers})
    [deleted] = admin.delete_records([CkTopicPartition(topic, 0, 4)]).values()
    assert deleted.result(timeout=30).low_watermark == 4
    assert reader.list_offsets([(topic, 0)], OffsetSpec.EARLIEST) == {(topic, 0): 4}
    with pytest.raises(OffsetOutOfRangeError, match="log start offset 4"):
        reader.read_range(topic, 0, 0, 10)
    assert reader.read_range(topic, 0, 4, 10).column("offset").to_pylist() == list(range(4, 10))
    with pytest.raises(OffsetOutOfRangeError):  # past the end of the log
        reader.read_range(topic, 0, 11, 20)
    assert reader.read_range(topic, 0, 10, 20).num_rows == 0  # at the end: nothing, no error


def test_not_leader_and_fenced_epoch_are_retried(kafka_broker, reader):
    topic = kafka_broker.new_topic(1)
    producer = confluent_producer(kafka_broker.bootstrap_servers)
    for i in range(50):
        producer.produce(topic, b"%d" % i, partition=0)
    assert producer.flush(30) == 0
    kafka_broker.faults.fail_next("Fetch", ["NOT_LEADER_OR_FOLLOWER", "FENCED_LEADER_EPOCH",
                                            "UNKNOWN_LEADER_EPOCH"])
    assert reader.read_range(topic, 0, 0, 50).column("offset").to_pylist() == list(range(50))
    kafka_broker.faults.fail_next("ListOffsets", ["NOT_LEADER_OR_FOLLOWER"])
    assert reader.list_offsets([(topic, 0)], OffsetSpec.LATEST) == {(topic, 0): 50}


def test_a_partition_that_does_not_exist(kafka_broker, reader):
    topic = kafka_broker.new_topic(1)
    with pytest.raises(UnknownTopicOrPartitionError):
        reader.read_range(topic, 3, 0, 10, timeout_s=10)
    with pytest.raises(UnknownTopicOrPartitionError):
        reader.read_range("no-such-topic-" + topic, 0, 0, 10, timeout_s=10)


def test_bad_input_is_refused_at_the_call(bootstrap, reader):
    with pytest.raises(ConfigError, match="did you mean 'isolation.level'"):
        PartitionReader({"bootstrap.servers": bootstrap, "isolation_level": "read_committed"})
    with pytest.raises(ConfigError, match="bootstrap.servers"):
        PartitionReader({})
    with pytest.raises(ConfigError, match="isolation.level"):
        PartitionReader({"bootstrap.servers": bootstrap, "isolation.level": "serializable"})
    with pytest.raises(ConfigError, match="fetch.max.bytes"):
        PartitionReader({"bootstrap.servers": bootstrap, "fetch.max.bytes": -1})
    for bad in [dict(topic=""), dict(partition=-1), dict(start=-1), dict(start=5, end=4),
                dict(max_rows=-2), dict(timeout_s=0), dict(partition=True)]:
        args = {"topic": "t", "partition": 0, "start": 0, "end": 1, **bad}
        with pytest.raises((TypeError, ValueError)):
            reader.read(args.pop("topic"), args.pop("partition"), args.pop("start"),
                        args.pop("end"), **args)
    with pytest.raises(ValueError):
        reader.list_offsets([("t", 0)], -5)
    with pytest.raises(TypeError):
        reader.list_offsets(["t"], OffsetSpec.LATEST)
    with pytest.raises(TypeError):
        reader.partitions_for("t")
    with pytest.raises(ValueError):
        reader.topics_matching("(")


def test_unreachable_bootstrap_times_out(closed_port):
    with PartitionReader({"bootstrap.servers": f"127.0.0.1:{closed_port}",
                          "default.api.timeout.ms": 500}) as r:
        with pytest.raises(KafkaTimeoutError, match="Connection refused|connect"):
            r.partitions_for(["t"])
        with pytest.raises(KafkaTimeoutError):
            r.topics_matching(".*")
        with pytest.raises(KafkaTimeoutError):
            r.list_offsets([("t", 0)], OffsetSpec.LATEST)
        with pytest.raises(KafkaTimeoutError):
            r.read_range("t", 0, 0, 5, timeout_s=0.5)


def test_closed_reader(bootstrap):
    r = PartitionReader({"bootstrap.servers": bootstrap})
    r.close()
    r.close()
    with pytest.raises(Exception, match="closed"):
        r.partitions_for(["t"])
    assert wait_until(lambda: "closed" in repr(r), "repr says closed", 1)


def test_a_topic_deleted_mid_read(kafka_broker, bootstrap):
    from confluent_kafka.admin import AdminClient

    topic = kafka_broker.new_topic(1)
    producer = confluent_producer(bootstrap)
    for i in range(200):
        producer.produce(topic, b"x" * 100, partition=0)
        if i % 10 == 9:
            assert producer.flush(30) == 0  # batches of 10: many Fetches of 2000 bytes
    with PartitionReader({"bootstrap.servers": bootstrap,
                          "max.partition.fetch.bytes": 2000}) as r:
        batches = r.read(topic, 0, 0, 200, timeout_s=20)
        first = next(batches)
        assert first.num_rows > 0
        admin = AdminClient({"bootstrap.servers": bootstrap})
        [deleted] = admin.delete_topics([topic]).values()
        deleted.result(timeout=30)
        with pytest.raises(UnknownTopicOrPartitionError):
            for _ in batches:
                pass


def test_an_empty_range_has_the_schema(kafka_broker, reader):
    topic = kafka_broker.new_topic(1)
    assert reader.read_range(topic, 0, 0, 0).schema == SPARK_KAFKA_SCHEMA
    empty = reader.read_range(topic, 0, 0, 100, include_headers=True)
    assert empty.num_rows == 0 and empty.schema == SPARK_KAFKA_SCHEMA_WITH_HEADERS


def test_reads_from_the_session_brokers(broker):
    """The session's brokers (tansu, which nobody here wrote, and ours as a child process):
    what our producer wrote, read back whole, from the middle of a batch."""
    from support.topics import new_topic

    topic = new_topic(broker.bootstrap, 1)
    with KafkaProducer({"bootstrap.servers": broker.bootstrap, "compression.type": "zstd"}) as p:
        for i in range(300):
            p.send(topic, value=b"v%d" % i, key=None if i % 3 else b"k", partition=0,
                   headers=[("h", b"%d" % i)])
        p.flush()
    with PartitionReader({"bootstrap.servers": broker.bootstrap}) as r:
        got = r.read_range(topic, 0, 7, 300, include_headers=True).to_pydict()
    assert got["offset"] == list(range(7, 300))
    assert got["value"] == [b"v%d" % i for i in range(7, 300)]
    assert got["key"] == [None if i % 3 else b"k" for i in range(7, 300)]
    assert got["headers"][0] == [{"key": "h", "value": b"7"}]
