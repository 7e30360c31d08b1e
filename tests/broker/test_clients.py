"""Our broker (``LocalBroker(kind="kafkacore")``) judged by clients we did not write.

Every record a producer had acknowledged is read back byte-identical, in order, on the partition
the producer chose, by kafka-python and by confluent-kafka (in a child process, see
tests/readback.py); a replayed Produce request is answered with the original offsets and written
once; a ``kill -9`` of the broker loses no acknowledged record.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import random
import shutil
import subprocess
import uuid

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from reactor_client import recv_frame
from readback import read_confluent, read_kafka_python
from support.topics import new_topic

from kafkacore import KafkaProducer
from kafkacore.admin import create_topics
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey
from kafkacore.testing import LocalBroker

PARTITIONS = 3


@pytest.fixture(scope="module")
def ours():
    with LocalBroker(kind="kafkacore") as broker:
        yield broker



def make_records(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out: list[dict] = []
    for i in range(n):
        rec: dict = {"value": b"v%d-" % i + rng.randbytes(rng.randrange(0, 200))}
        if i % 3 == 0:
            rec["key"] = b"k%d" % rng.randrange(50)
        if i % 5 == 0:
            rec["headers"] = [("h", b"%d" % i), ("null", None)]
        if i % 7 == 0:
            rec["partition"] = i % PARTITIONS
        out.append(rec)
    return out


def by_partition(rows):
    """partition -> [(offset, key, value, headers)], in offset order."""
    out: dict[int, list] = {}
    for r in sorted(rows, key=lambda r: (r[0], r[1])):
        out.setdefault(r[0], []).append(tuple(r[1:]))
    return out


def consumed_rows(consumed):
    return by_partition((c.partition, c.offset, c.key, c.value, c.headers) for c in consumed)


@pytest.mark.parametrize("compression", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_our_idempotent_producer_read_back_by_kafka_python_and_confluent(ours, compression):
    topic = new_topic(ours, PARTITIONS)
    records = make_records(3000, seed=len(compression))
    config = {"bootstrap.servers": ours.bootstrap, "compression.type": compression,
              "enable.idempotence": True, "linger.ms": 5}
    with KafkaProducer(config) as producer:
        futures = [producer.send(topic, **rec) for rec in records]
        producer.flush(timeout=60)
        metas = [f.result(timeout=10) for f in futures]
    for rec, meta in zip(records, metas, strict=True):
        if "partition" in rec:
            assert meta.partition == rec["partition"]
    expected = by_partition(
        (m.partition, m.offset, r.get("key"), r["value"], tuple(r.get("headers") or ()))
        for r, m in zip(records, metas, strict=True)
    )
    # The broker gave consecutive offsets from 0 in each partition.
    for rows in expected.values():
        assert [row[0] for row in rows] == list(range(len(rows)))
    for reader in (read_kafka_python, read_confluent):
        consumed = reader(ours.bootstrap, topic, PARTITIONS, len(records))
        assert len(consumed) == len(records), reader.__name__
        assert consumed_rows(consumed) == expected, reader.__name__


def _produce_with_confluent(bootstrap, topic, values):
    from confluent_kafka import Producer

    delivered = []
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                         "compression.type": "lz4", "linger.ms": 5})
    for i, v in enumerate(values):
        producer.produce(topic, value=v, key=b"k%d" % (i % 10),
                         on_delivery=lambda err, m: delivered.append(
                             (str(err) if err else None, m.partition(), m.offset(), m.key(),
                              m.value())))
        producer.poll(0)
    remaining = producer.flush(60)
    return remaining, delivered


def test_confluent_producer_read_back_by_confluent_and_kafka_python(ours):
    topic = new_topic(ours, PARTITIONS)
    values = [b"confluent-%d-" % i + bytes(i % 256 for _ in range(i % 40)) for i in range(2000)]
    context = multiprocessing.get_context("forkserver")  # librdkafka in a child, see readback.py
    with context.Pool(1) as pool:
        remaining, delivered = pool.apply(_produce_with_confluent,
                                          (ours.bootstrap, topic, values))
    assert remaining == 0
    assert [d[0] for d in delivered if d[0]] == []
    assert sorted(d[4] for d in delivered) == sorted(values)
    expected = by_partition((p, o, k, v, ()) for _, p, o, k, v in delivered)
    for reader in (read_confluent, read_kafka_python):
        consumed = reader(ours.bootstrap, topic, PARTITIONS, len(values))
        assert consumed_rows(consumed) == expected, reader.__name__


def test_aiokafka_producer_read_back_by_kafka_python(ours):
    from aiokafka import AIOKafkaProducer

    topic = new_topic(ours, PARTITIONS)
    values = [b"aiokafka-%d" % i for i in range(500)]

    async def produce():
        producer = AIOKafkaProducer(bootstrap_servers=ours.bootstrap, enable_idempotence=True,
                                    compression_type="gzip")
        await producer.start()
        try:
            return [await producer.send_and_wait(topic, v, partition=i % PARTITIONS)
                    for i, v in enumerate(values)]
        finally:
            await producer.stop()

    metas = asyncio.run(produce())
    expected = by_partition((m.partition, m.offset, None, v, ())
                            for m, v in zip(metas, values, strict=True))
    consumed = read_kafka_python(ours.bootstrap, topic, PARTITIONS, len(values))
    assert consumed_rows(consumed) == expected


@pytest.mark.parametrize("compression", [None, "gzip", "lz4"])
def test_kafka_python_producer_read_back_by_confluent_and_kafka_python(ours, compression):
    from kafka import KafkaProducer as KafkaPythonProducer

    topic = new_topic(ours, PARTITIONS)
    # kafka-python takes header values as bytes only (no null value).
    records = [{**r, "headers": [(k, v or b"") for k, v in r["headers"]]} if "headers" in r else r
               for r in make_records(1500, seed=15)]
    producer = KafkaPythonProducer(bootstrap_servers=ours.bootstrap, acks="all", linger_ms=5,
                                   compression_type=compression)
    try:
        futures = [producer.send(topic, value=r["value"], key=r.get("key"),
                                 partition=r.get("partition"),
                                 headers=r.get("headers"))
                   for r in records]
        producer.flush(timeout=60)
        metas = [f.get(timeout=10) for f in futures]
    finally:
        producer.close(timeout=10)
    for rec, meta in zip(records, metas, strict=True):
        if "partition" in rec:
            assert meta.partition == rec["partition"]
    expected = by_partition(
        (m.partition, m.offset, r.get("key"), r["value"], tuple(r.get("headers") or ()))
        for r, m in zip(records, metas, strict=True)
    )
    for rows in expected.values():
        assert [row[0] for row in rows] == list(range(len(rows)))
    for reader in (read_confluent, read_kafka_python):
        consumed = reader(ours.bootstrap, topic, PARTITIONS, len(records))
        assert len(consumed) == len(records), reader.__name__
        assert consumed_rows(consumed) == expected, reader.__name__


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed (apt-get install kcat)")
def test_kcat_produces_and_consumes(ours):
    topic = new_topic(ours)
    lines = [f"kcat-{i}" for i in range(300)]
    subprocess.run(["kcat", "-P", "-b", ours.bootstrap, "-t", topic, "-p", "0"],
                   input="\n".join(lines) + "\n", text=True, check=True, timeout=60)
    out = subprocess.run(["kcat", "-C", "-b", ours.bootstrap, "-t", topic, "-p", "0", "-o",
                          "beginning", "-e", "-f", "%o %s\n"],
                         capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.splitlines() == [f"{i} {line}" for i, line in enumerate(lines)]
    consumed = read_kafka_python(ours.bootstrap, topic, 1, len(lines))
    assert [c.value for c in consumed] == [line.encode() for line in lines]


def _call(sock, api_key, version, correlation_id, body):
    payload = b"".join(bytes(memoryview(c).cast("B")) for c in
                       codec.encode_request(api_key, version, correlation_id, "replay", body))
    frame = len(payload).to_bytes(4, "big") + payload
    sock.sendall(frame)
    header, response = codec.decode_response(api_key, version, recv_frame(sock))
    return frame, response


def test_a_replayed_produce_request_gets_the_original_offsets_and_is_written_once(ours):
    import socket

    topic = new_topic(ours)
    with socket.create_connection((ours.host, ours.port), timeout=30) as s:
        s.settimeout(30)
        _, pid = _call(s, ApiKey.INIT_PRODUCER_ID, 4, 1,
                       {"transactional_id": None, "transaction_timeout_ms": -1,
                        "producer_id": -1, "producer_epoch": -1})
        assert pid["error_code"] == 0 and pid["producer_id"] >= 0
        offsets = []
        for seq in (0, 5):
            builder = DefaultRecordBatchBuilder(
                magic=2, compression_type=0, is_transactional=False,
                producer_id=pid["producer_id"], producer_epoch=pid["producer_epoch"],
                base_sequence=seq, batch_size=1 << 20)
            for i in range(5):
                builder.append(i, timestamp=1_700_000_000_000 + i, key=None,
                               value=b"seq-%d" % (seq + i), headers=[])
            batch = bytes(builder.build())
            body = {"transactional_id": None, "acks": -1, "timeout_ms": 30000,
                    "topic_data": [{"name": topic, "partition_data": [
                        {"index": 0, "records": batch}]}]}
            answers = []
            for correlation_id in (10 + seq, 20 + seq):  # the same batch, sent twice
                _, response = _call(s, ApiKey.PRODUCE, 9, correlation_id, body)
                answers.append(response["responses"][0]["partition_responses"][0])
            assert [a["error_code"] for a in answers] == [0, 0]
            assert answers[0]["base_offset"] == answers[1]["base_offset"]
            offsets.append(answers[0]["base_offset"])
    assert offsets == [0, 5]
    consumed = read_kafka_python(ours.bootstrap, topic, 1, 10)
    assert [(c.offset, c.value) for c in consumed] == [(i, b"seq-%d" % i) for i in range(10)]


def test_produce_to_an_unknown_partition_is_refused(ours):
    import socket

    topic = new_topic(ours)
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 20)
    builder.append(0, timestamp=1_700_000_000_000, key=None, value=b"x", headers=[])
    batch = bytes(builder.build())
    body = {"transactional_id": None, "acks": 1, "timeout_ms": 30000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 1, "records": batch}]},
        {"name": "no-such-topic-" + uuid.uuid4().hex, "partition_data": [
            {"index": 0, "records": batch}]}]}
    with socket.create_connection((ours.host, ours.port), timeout=30) as s:
        s.settimeout(30)
        _, response = _call(s, ApiKey.PRODUCE, 9, 1, body)
    codes = [t["partition_responses"][0]["error_code"] for t in response["responses"]]
    assert codes == [3, 3]  # UNKNOWN_TOPIC_OR_PARTITION


def test_acknowledged_records_survive_kill_9(tmp_path):
    records = make_records(2000, seed=9)
    with LocalBroker(kind="kafkacore", log_dirs=str(tmp_path)) as broker:
        topic = new_topic(broker, PARTITIONS)
        with KafkaProducer({"bootstrap.servers": broker.bootstrap, "acks": "all"}) as producer:
            futures = [producer.send(topic, **rec) for rec in records]
            producer.flush(timeout=60)
            metas = [f.result(timeout=10) for f in futures]
        expected = by_partition(
            (m.partition, m.offset, r.get("key"), r["value"], tuple(r.get("headers") or ()))
            for r, m in zip(records, metas, strict=True)
        )
        broker.kill()
        assert not broker.is_running()
        broker.start()
        consumed = read_kafka_python(broker.bootstrap, topic, PARTITIONS, len(records))
        assert consumed_rows(consumed) == expected
        # The topic (kept in the metadata file) and the offsets go on after the restart.
        assert create_topics(broker.bootstrap, {topic: PARTITIONS}) == {topic: 36}
        with KafkaProducer({"bootstrap.servers": broker.bootstrap}) as producer:
            meta = producer.send(topic, b"after", partition=0).result(timeout=30)
        assert meta.offset == len(expected.get(0, []))


def test_confluent_list_topics_despite_the_bytes_librdkafka_adds(ours):
    """librdkafka writes an all-topics Metadata request with bytes after its body; Kafka reads
    what the schema declares and ignores the rest, and so do we."""
    import confluent_kafka

    topic = new_topic(ours, PARTITIONS)
    producer = confluent_kafka.Producer({"bootstrap.servers": ours.bootstrap})
    listed = producer.list_topics(timeout=30)
    assert topic in listed.topics
    assert len(listed.topics[topic].partitions) == PARTITIONS
    admin = confluent_kafka.admin.AdminClient({"bootstrap.servers": ours.bootstrap})
    assert topic in admin.list_topics(timeout=30).topics


def test_trailing_bytes_after_a_request_body_are_ignored_and_counted(ours):
    import socket

    payload = b"".join(bytes(memoryview(c).cast("B")) for c in codec.encode_request(
        ApiKey.METADATA, 9, 7, "trailing", {"topics": None, "allow_auto_topic_creation": False,
                                            "include_topic_authorized_operations": False}))
    payload += b"\x00\x00\x00"
    with socket.create_connection((ours.host, ours.port), timeout=30) as s:
        s.settimeout(30)
        s.sendall(len(payload).to_bytes(4, "big") + payload)
        correlation_id, body = codec.decode_response(ApiKey.METADATA, 9, recv_frame(s))
    assert correlation_id == 7
    assert [(b["host"], b["port"]) for b in body["brokers"]] == [(ours.host, ours.port)]


def test_api_versions_advertise_only_what_kafka_4_answers(ours):
    """Produce v0-v2, Fetch v0-v3 and ListOffsets v0 carry message formats 0 and 1, which
    Kafka 4 no longer speaks: neither do we, so we must not advertise them."""
    import socket

    with socket.create_connection((ours.host, ours.port), timeout=30) as s:
        s.settimeout(30)
        _, body = _call(s, ApiKey.API_VERSIONS, 3, 1,
                        {"client_software_name": "t", "client_software_version": "1"})
        versions = {k["api_key"]: (k["min_version"], k["max_version"]) for k in body["api_keys"]}
        assert versions[ApiKey.PRODUCE][0] == 3
        assert versions[ApiKey.FETCH][0] == 4
        assert versions[ApiKey.LIST_OFFSETS][0] == 1
        assert versions[ApiKey.JOIN_GROUP][0] == 2
