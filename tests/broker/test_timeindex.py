"""Per-record timestamps: each segment's ``.timeindex`` (Kafka's ``TimeIndex``), ListOffsets
by time answering the first *record* at or after the time, and MAX_TIMESTAMP (KIP-734) the
record with the largest timestamp, judged by confluent-kafka and kafka-python; kept across a
restart, rebuilt by recovery, cut by truncation (docs/broker/log.rst)."""

from __future__ import annotations

import logging
import random
import time

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkacore.broker.log import Log, LogConfig
from kafkacore.broker.log.log import MAX_TIMESTAMP
from kafkacore.broker.server.broker_server import Broker
from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
from kafkacore.core.memory_records_builder import MemoryRecordsBuilder
from kafkacore.core.record_batch import iter_batches
from kafkacore.errors import Errors
from kafkacore.protocol.api_keys import ApiKey

T0 = int(time.time() * 1000) - 3_600_000  # an hour ago: inside message.timestamp.* bounds
#: three batches; timestamps (relative to T0) do not grow within a batch
BATCHES = [[10, 50, 40, 20, 30], [15, 60, 5, 55, 45], [1, 2, 3]]


def _records():
    """(offset, timestamp) of every record of BATCHES, in offset order."""
    out, offset = [], 0
    for batch in BATCHES:
        for delta in batch:
            out.append((offset, T0 + delta))
            offset += 1
    return out


def _first_at_or_after(records, target):
    return next(((o, t) for o, t in records if t >= target), None)


# -- the broker, judged by other clients -----------------------------------------------------------

def _produce_batches(broker, topic):
    client = InterBrokerClient(broker.advertised_host, broker.advertised_port, "test", 30)
    try:
        for batch in BATCHES:
            builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
            for i, delta in enumerate(batch):
                builder.append(i, T0 + delta, b"k%d" % i, b"v", [])
            response = client.send(ApiKey.PRODUCE, 9, {
                "transactional_id": None, "acks": 1, "timeout_ms": 10000, "topic_data": [
                    {"name": topic, "partition_data": [
                        {"index": 0, "records": bytes(builder.build())}]}]})
            assert response["responses"][0]["partition_responses"][0]["error_code"] == \
                Errors.NONE
    finally:
        client.close()


def _check_clients(broker, topic):
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTopicPartition

    records = _records()
    targets = [T0 + d for d in (0, 11, 41, 50, 51, 58, 60)]
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "ti"})
    try:
        for target in targets:
            [tp] = consumer.offsets_for_times([TopicPartition(topic, 0, target)], timeout=30)
            expected = _first_at_or_after(records, target)
            assert tp.offset == expected[0], (target - T0, tp.offset, expected)
        [tp] = consumer.offsets_for_times([TopicPartition(topic, 0, T0 + 61)], timeout=30)
        assert tp.offset == -1  # no record that late: Kafka's "none" (the end, to librdkafka)
    finally:
        consumer.close()
    kp = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers)
    try:
        tp = KTopicPartition(topic, 0)
        for target in targets:
            found = kp.offsets_for_times({tp: target})[tp]
            assert (found.offset, found.timestamp) == _first_at_or_after(records, target)
    finally:
        kp.close()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    futures = admin.list_offsets({TopicPartition(topic, 0): OffsetSpec.max_timestamp()})
    info = futures[TopicPartition(topic, 0)].result(30)
    assert (info.offset, info.timestamp) == (6, T0 + 60)  # the record, not its batch's end


def test_clients_find_records_by_time_and_the_max_timestamp_across_a_restart(tmp_path):
    pytest.importorskip("confluent_kafka")
    from support.topics import new_topic

    config = {"log.dirs": str(tmp_path), "num.network.threads": "1", "num.io.threads": "1"}
    with Broker(config) as broker:
        topic = new_topic(broker, configs={"index.interval.bytes": "0"})
        _produce_batches(broker, topic)
        _check_clients(broker, topic)
    indexes = list(tmp_path.glob(f"{topic}-0/*.timeindex"))
    assert len(indexes) == 1 and indexes[0].stat().st_size > 0  # written at the clean stop
    with Broker(config) as broker:  # loaded from the .timeindex
        _check_clients(broker, topic)


# -- the log: entries, recovery, truncation ----------------------------------------------------

def _random_log(path, seed: int):
    cfg = LogConfig.from_properties({"internal.segment.bytes": "4000", "index.interval.bytes": "200"})
    lg = Log(path, cfg, topic="t", partition=0)
    rnd = random.Random(seed)
    records = []
    for _ in range(120):
        b = MemoryRecordsBuilder(1 << 16)
        base = lg.log_end_offset
        for i in range(rnd.randrange(1, 6)):
            ts = T0 + rnd.randrange(0, 100_000)
            b.append(ts, b"k", b"v" * rnd.randrange(1, 40))
            records.append((base + i, ts))
        lg.append_as_leader(bytes(b.build()))
    return lg, records


def _assert_answers(lg: Log, records) -> None:
    for target in sorted({t for _, t in records} | {T0 - 1, T0 + 100_001}):
        for probe in (target - 1, target, target + 1):
            assert lg.fetch_offset_by_timestamp(probe) == _first_at_or_after(records, probe)
    top = max(t for _, t in records)
    assert lg.fetch_offset_by_timestamp(MAX_TIMESTAMP) == \
        next((o, t) for o, t in records if t == top)
    for segment in lg.segments:  # each time index: both columns grow, inside its segment
        entries = segment.time_index.entries()
        assert entries == sorted(entries) and len({t for t, _ in entries}) == len(entries)
        assert all(segment.base_offset <= o < segment.next_offset for _, o in entries)
        mine = [t for o, t in records if segment.base_offset <= o < segment.next_offset]
        if mine:  # the last entry, when there is one, never exceeds the segment's max
            assert all(t <= max(mine) for t, _ in entries)


def test_time_index_answers_survive_recovery_load_and_truncation(tmp_path, caplog):
    lg, records = _random_log(tmp_path / "t-0", 7)
    assert len(lg.segments) > 3
    assert sum(len(s.time_index) for s in lg.segments) > 10
    _assert_answers(lg, records)
    entries = [s.time_index.entries() for s in lg.segments[:-1]]
    lg.close()  # clean: the .timeindex files are loaded, not rebuilt
    lg = Log(tmp_path / "t-0", lg.config, topic="t", partition=0, had_clean_shutdown=True)
    assert [s.time_index.entries() for s in lg.segments[:-1]] == entries
    _assert_answers(lg, records)
    lg.close(clean=False)  # unclean: every segment is recovered, its time index rebuilt
    lg = Log(tmp_path / "t-0", lg.config, topic="t", partition=0)
    _assert_answers(lg, records)
    # A truncation inside a segment cuts its time index at the new end.
    middle = lg.segments[len(lg.segments) // 2]
    cut = next(h for h in middle.iter_headers() if h.position > 0).base_offset
    lg.truncate_to(cut)
    records = [(o, t) for o, t in records if o < cut]
    _assert_answers(lg, records)
    assert all(o < cut for s in lg.segments for _, o in s.time_index.entries())
    # A .timeindex that fails Kafka's sanity check is rebuilt at load, loudly.
    lg.close()
    first = lg.segments[0].time_index.path
    first.write_bytes(first.read_bytes() + b"\x00" * 5)
    with caplog.at_level(logging.ERROR):
        lg = Log(tmp_path / "t-0", lg.config, topic="t", partition=0, had_clean_shutdown=True)
    assert any("time index fails its sanity check" in r.getMessage() for r in caplog.records)
    _assert_answers(lg, records)
    # Retention deletes a segment's .timeindex with it.
    gone = lg.segments[0].time_index.path
    lg.segments[0].delete()
    assert not gone.exists()
    lg.close()


def test_log_append_time_batches_answer_their_first_record(tmp_path):
    cfg = LogConfig.from_properties({"message.timestamp.type": "LogAppendTime"})
    lg = Log(tmp_path / "t-0", cfg, topic="t", partition=0)
    b = MemoryRecordsBuilder(1 << 16)
    for i in range(3):
        b.append(T0 + 10 - i, b"k", b"v")
    lg.append_as_leader(bytes(b.build()))
    [batch] = iter_batches(lg.read(0, 1 << 20).records)
    assert lg.fetch_offset_by_timestamp(MAX_TIMESTAMP) == (0, batch.max_timestamp)
    assert lg.fetch_offset_by_timestamp(T0) == (0, batch.max_timestamp)
    lg.close()
