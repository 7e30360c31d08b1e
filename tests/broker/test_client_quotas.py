"""Client quotas on our broker (KIP-546 AlterClientQuotas and DescribeClientQuotas, KIP-13 byte
rates, KIP-219 throttling), judged by clients nobody here wrote: kafka-python's own message
classes encode the admin requests and decode the answers (neither installed admin client has the
calls), confluent-kafka's producer and consumer report the throttle times our broker sends.  The
rates checked are the broker's own numbers (its sensors), never a wall-clock speed."""

from __future__ import annotations

import socket
import struct

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka.protocol.admin import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
)
from kafka.record.default_records import DefaultRecordBatchBuilder
from support.topics import new_topic
from waits import wait_until

from kafkacore.broker import Broker, BrokerConfig
from kafkacore.broker.controller.quorum_controller import QuorumController
from kafkacore.broker.metadata.client_quota_control_manager import client_quota_record
from kafkacore.broker.metadata.metadata_cache import MetadataCache
from kafkacore.broker.server import client_quota_manager
from kafkacore.broker.server.client_quota_manager import ClientQuotaManager
from kafkacore.errors import Errors
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey

EXACT, DEFAULT, SPECIFIED = 0, 1, 2  # DescribeClientQuotas' match types
Entry = AlterClientQuotasRequest.EntryData
Component = DescribeClientQuotasRequest.ComponentData


def _recv(s: socket.socket) -> bytes:
    size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
    data = bytearray()
    while len(data) < size:
        chunk = s.recv(size - len(data))
        assert chunk, "the broker closed the connection"
        data += chunk
    return bytes(data)


def _call(address, request, response_class, version):
    request.with_header(correlation_id=7, client_id="quota-admin")
    with socket.create_connection(address, timeout=30) as s:
        s.settimeout(30)
        s.sendall(bytes(request.encode(header=True, framed=True)))
        response = response_class.decode(_recv(s), version=version, header=True)
    assert response.header.correlation_id == 7
    return response


def alter(address, entries, validate_only=False, version=1):
    """[(error code, message)] of each entry: ``entries`` as ([(type, name)], [(key, value)]),
    a value of None removing the key."""
    request = AlterClientQuotasRequest[version](entries=[
        Entry(entity=[Entry.EntityData(entity_type=t, entity_name=n) for t, n in entity],
              ops=[Entry.OpData(key=k, value=0.0 if v is None else v, remove=v is None)
                   for k, v in ops])
        for entity, ops in entries], validate_only=validate_only)
    response = _call(address, request, AlterClientQuotasResponse, version)
    return [(e.error_code, e.error_message) for e in response.entries]


def describe(address, components=(), strict=False, version=1):
    """{((type, name), ...): {key: value}}, or the error (code, message)."""
    request = DescribeClientQuotasRequest[version](components=[
        Component(entity_type=t, match_type=m, match=n) for t, m, n in components],
        strict=strict)
    response = _call(address, request, DescribeClientQuotasResponse, version)
    if response.error_code != Errors.NONE:
        return response.error_code, response.error_message
    return {tuple(sorted((e.entity_type, e.entity_name) for e in entry.entity)):
            {v.key: v.value for v in entry.values} for entry in response.entries}


@pytest.fixture
def ours(tmp_path):
    # Sensors of 3 windows of a second (Kafka's default is 11): the burst a new sensor lets
    # through (2 windows' worth) is small, and the rate soon measures the throttled flow.
    with Broker({"log.dirs": str(tmp_path), "quota.window.num": "3"}) as b:
        yield b


def _address(broker):
    return "127.0.0.1", broker.socket_server.bound_port


def test_quotas_round_trip_and_survive_a_restart(tmp_path):
    with Broker({"log.dirs": str(tmp_path)}) as b:
        at = _address(b)
        assert describe(at) == {}
        assert alter(at, [
            ([("client-id", "c1")], [("producer_byte_rate", 1024.0)]),
            ([("user", "alice"), ("client-id", None)], [("consumer_byte_rate", 2048.0),
                                                        ("request_percentage", 12.5)]),
            ([("user", None)], [("producer_byte_rate", 4096.0)]),
        ], version=0) == [(Errors.NONE, None)] * 3
        # validate_only checks and changes nothing
        assert alter(at, [([("client-id", "c2")], [("producer_byte_rate", 1.0)])],
                     validate_only=True) == [(Errors.NONE, None)]
        everything = {
            (("client-id", "c1"),): {"producer_byte_rate": 1024.0},
            (("client-id", None), ("user", "alice")): {"consumer_byte_rate": 2048.0,
                                                       "request_percentage": 12.5},
            (("user", None),): {"producer_byte_rate": 4096.0},
        }
        assert describe(at) == everything
        assert describe(at, [("client-id", EXACT, "c1")]) == {
            (("client-id", "c1"),): {"producer_byte_rate": 1024.0}}
        assert describe(at, [("client-id", DEFAULT, None)]) == {
            (("client-id", None), ("user", "alice")): everything[
                (("client-id", None), ("user", "alice"))]}
        assert describe(at, [("user", SPECIFIED, None)], strict=True) == {}
        assert describe(at, [("user", SPECIFIED, None)]) == {
            (("client-id", None), ("user", "alice")): everything[
                (("client-id", None), ("user", "alice"))]}
        # The broker enforces what it describes: the most specific quota wins.
        assert b.quotas.produce.quota("bob", "c1") == (("bob", ""), 4096.0)
        assert b.quotas.produce.quota("ANONYMOUS", "c1") == (("ANONYMOUS", ""), 4096.0)
        assert b.quotas.fetch.quota("alice", "c9") == (("alice", "c9"), 2048.0)
        assert b.quotas.fetch.quota("bob", "c9") is None
        assert alter(at, [([("user", None)], [("producer_byte_rate", None)])]) == [
            (Errors.NONE, None)]
        assert b.quotas.produce.quota("bob", "c1") == (("", "c1"), 1024.0)
        del everything[(("user", None),)]
        assert describe(at) == everything
    with Broker({"log.dirs": str(tmp_path)}) as b:
        assert describe(_address(b)) == everything
        assert b.quotas.produce.quota("bob", "c1") == (("", "c1"), 1024.0)


def test_bad_quotas_are_refused_with_kafkas_errors_and_change_nothing(ours):
    at = _address(ours)
    bad = [
        ([("client-id", "c")], [("bogus_rate", 1.0)], "Invalid configuration key bogus_rate"),
        ([("client-id", "c")], [("producer_byte_rate", -5.0)], "must be a non-negative"),
        ([("client-id", "c")], [("consumer_byte_rate", 10.5)], "must be a Long value"),
        ([("client-id", "c")], [("producer_byte_rate", float("nan"))], "non-negative"),
        ([], [("producer_byte_rate", 1.0)], "Invalid empty client quota entity"),
        ([("group", "g")], [("producer_byte_rate", 1.0)], "entity type: group"),
        ([("user", "u"), ("user", "v")], [("producer_byte_rate", 1.0)], "Duplicate entity"),
    ]
    # One good entry among the bad ones, and one entry half good: an entry is all or nothing.
    answers = alter(at, [(entity, ops) for entity, ops, _ in bad] + [
        ([("user", "u")], [("producer_byte_rate", 1.0), ("nope", 1.0)]),
        ([("user", "ok")], [("request_percentage", 50.0)])])
    for (entity, _, message), (error, text) in zip(bad, answers, strict=False):
        assert error == Errors.INVALID_REQUEST and message in text, (entity, text)
    assert answers[-2][0] == Errors.INVALID_REQUEST
    assert answers[-1] == (Errors.NONE, None)
    assert describe(at) == {(("user", "ok"),): {"request_percentage": 50.0}}
    # A filter that names a type twice, or an exact match without a name
    assert describe(at, [("user", EXACT, "a"), ("user", DEFAULT, None)])[0] == \
        Errors.INVALID_REQUEST
    assert describe(at, [("user", EXACT, None)])[0] == Errors.INVALID_REQUEST


def _throttled(events):
    return [e.throttle_time for e in events if e.throttle_time > 0]


def _heard_throttle(client, events):
    """Served callbacks, then the throttle times heard (librdkafka reports them from poll)."""
    client.poll(0.1)
    return _throttled(events)


def test_a_producer_over_its_quota_is_throttled_to_its_rate(ours):
    """100 KB/s for one client id; 400 KB sent in 16 KB batches.  What goes beyond the burst a
    new sensor allows is throttled: the producer hears throttle times, and the broker's measured
    rate is the bound (plus one request at most: Kafka records a request, then throttles)."""
    at = _address(ours)
    bootstrap = f"{at[0]}:{at[1]}"
    bound = 100 * 1024
    assert alter(at, [([("client-id", "slow-producer")], [("producer_byte_rate", float(bound))])]
                 ) == [(Errors.NONE, None)]
    topic = new_topic(bootstrap, 1)
    events: list = []
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": "slow-producer",
                         "batch.size": 16 * 1024, "linger.ms": 5, "compression.type": "none",
                         "throttle_cb": events.append})
    value = b"x" * 1024
    for _ in range(400):
        producer.produce(topic, value)
        producer.poll(0)
    assert producer.flush(60) == 0
    wait_until(lambda: _heard_throttle(producer, events), "the producer heard a throttle time")
    rate = ours.quotas.produce.rate("ANONYMOUS", "slow-producer")
    assert rate is not None and rate <= bound * 1.25, rate
    # Another client id has no quota: never throttled, no sensor.
    others: list = []
    fast = Producer({"bootstrap.servers": bootstrap, "client.id": "fast-producer",
                     "throttle_cb": others.append})
    for _ in range(600):
        fast.produce(topic, value)
        fast.poll(0)
    assert fast.flush(60) == 0
    fast.poll(0)
    assert _throttled(others) == []
    assert ours.quotas.produce.rate("ANONYMOUS", "fast-producer") is None


def test_a_consumer_over_its_quota_is_throttled_and_gets_every_record(ours):
    """The default client id's consumer_byte_rate: each consumer its own sensor; every record
    still arrives, once, in order."""
    at = _address(ours)
    bootstrap = f"{at[0]}:{at[1]}"
    bound = 100 * 1024
    topic = new_topic(bootstrap, 1)
    producer = Producer({"bootstrap.servers": bootstrap, "compression.type": "none",
                         "batch.size": 16 * 1024})
    for i in range(400):
        producer.produce(topic, b"%06d" % i + b"x" * 1018)
    assert producer.flush(60) == 0
    assert alter(at, [([("client-id", None)], [("consumer_byte_rate", float(bound))])]
                 ) == [(Errors.NONE, None)]
    events: list = []
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "slow", "client.id": "slow",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "max.partition.fetch.bytes": 16 * 1024,
                         "throttle_cb": events.append})
    consumer.assign([TopicPartition(topic, 0, 0)])
    seen: list[int] = []
    try:
        def consumed():
            for m in consumer.consume(100, 0.2):
                assert m.error() is None, m.error()
                seen.append(int(m.value()[:6]))
            return len(seen) >= 400
        wait_until(consumed, "every record consumed under the quota", bound_s=60)
        wait_until(lambda: _heard_throttle(consumer, events),
                   "the consumer heard a throttle time")
    finally:
        consumer.close()
    assert seen == list(range(400))
    rate = ours.quotas.fetch.rate("ANONYMOUS", "slow")
    assert rate is not None and rate <= bound * 1.25, rate


def test_the_sensor_throttles_by_the_excess_over_its_window():
    """Kafka's numbers, by a clock the test holds: 11 windows of a second, 100 KB/s.  A new
    sensor's span counts at least 10 s, so 1 MB passes; the next 100 KB make 1.1 MB over 10 s,
    10 % over the bound: 10 % of the span, one second, to wait.  Each further 100 KB adds 900 ms, and the
    time is never more than the sensor's whole span."""
    manager = ClientQuotaManager("producer_byte_rate")
    manager.update_quotas({(("client-id", None),): {"producer_byte_rate": 100_000.0}})
    throttles = [manager.record_and_get_throttle_time_ms("u", "c", 100_000, now_ms=1000 + 100 * i)
                 for i in range(13)]
    assert throttles == [0] * 10 + [1000, 1900, 2800]
    assert manager.record_and_get_throttle_time_ms("u", "c", 10**9, now_ms=2400) == 11_000
    # Another client id of the default has a sensor of its own; a quota-less manager records
    # nothing.
    assert manager.record_and_get_throttle_time_ms("u", "other", 100_000, now_ms=2400) == 0
    assert ClientQuotaManager("consumer_byte_rate").record_and_get_throttle_time_ms(
        "u", "c", 10**9) == 0


def test_sensors_are_bounded_and_idle_ones_expire(monkeypatch):
    """A client making up client ids cannot grow the sensors without end; an hour idle, a
    sensor goes."""
    monkeypatch.setattr(client_quota_manager, "MAX_SENSORS", 3)
    manager = ClientQuotaManager("producer_byte_rate")
    manager.update_quotas({(("client-id", None),): {"producer_byte_rate": 100.0}})
    for i in range(5):
        manager.record_and_get_throttle_time_ms("u", f"made-up-{i}", 1, now_ms=1000 + i)
    assert list(manager._sensors) == [("", f"made-up-{i}") for i in (2, 3, 4)]
    manager.record_and_get_throttle_time_ms("u", "late", 1, now_ms=1004 + 3_600_001)
    assert list(manager._sensors) == [("", "late")]


def test_a_client_that_ignores_its_throttle_time_is_held_back(ours):
    """A raw client sends Produce requests back to back without waiting its throttle time: the
    broker reads the next one only when the time is over (the connection is muted), so its
    sensor's rate stays near the bound (1.3 times it here: the span of a new sensor is padded
    to at least 2 windows), where reading them all at once would make it twice the bound."""
    at = _address(ours)
    bound = 100 * 1024
    assert alter(at, [([("client-id", "rude")], [("producer_byte_rate", float(bound))])]
                 ) == [(Errors.NONE, None)]
    topic = new_topic(f"{at[0]}:{at[1]}", 1)
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 20)
    for i in range(100):
        builder.append(i, timestamp=None, key=None, value=b"r" * 1000, headers=[])
    batch = bytes(builder.build())
    frames = []
    for correlation_id in range(4):  # 4 x 100 KB, sent at once: twice the 2 s allowance
        payload = b"".join(bytes(memoryview(c).cast("B")) for c in codec.encode_request(
            ApiKey.PRODUCE, 9, correlation_id, "rude", {
                "transactional_id": None, "acks": 1, "timeout_ms": 30000,
                "topic_data": [{"name": topic, "partition_data": [
                    {"index": 0, "records": batch}]}]}))
        frames.append(len(payload).to_bytes(4, "big") + payload)
    throttles = []
    with socket.create_connection(at, timeout=30) as s:
        s.settimeout(30)
        s.sendall(b"".join(frames))
        for _ in frames:
            _, response = codec.decode_response(ApiKey.PRODUCE, 9, _recv(s))
            [topic_answer] = response["responses"]
            assert topic_answer["partition_responses"][0]["error_code"] == Errors.NONE
            throttles.append(response["throttle_time_ms"])
    assert throttles[-1] > 0, throttles
    rate = ours.quotas.produce.rate("ANONYMOUS", "rude")
    assert rate is not None and rate <= bound * 1.6, rate


def test_the_controller_keeps_quotas_in_its_log_and_its_snapshot(tmp_path):
    """A cluster's quotas are the controller's ClientQuotaRecords: replayed at a restart, from
    the log and from a snapshot, and fetched by brokers like every other record."""
    def controller():
        return QuorumController(BrokerConfig({"log.dirs": str(tmp_path), "node.id": 0}))

    def entry(entity, key, value):
        return {"entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
                "ops": [{"key": key, "value": value or 0.0, "remove": value is None}]}

    first = controller()
    assert first.alter_client_quotas([entry([("user", None)], "producer_byte_rate", 10.0),
                                      entry([("user", "u")], "bogus", 1.0)], False) == [
        {"error_code": Errors.NONE, "error_message": None,
         "entity": [{"entity_type": "user", "entity_name": None}]},
        {"error_code": Errors.INVALID_REQUEST, "error_message": "Invalid configuration key bogus",
         "entity": [{"entity_type": "user", "entity_name": "u"}]}]
    first.alter_client_quotas([entry([("client-id", "c")], "consumer_byte_rate", 20.0)], False)
    first.alter_client_quotas([entry([("client-id", "c")], "consumer_byte_rate", None)], True)
    quotas = {(("user", None),): {"producer_byte_rate": 10.0},
              (("client-id", "c"),): {"consumer_byte_rate": 20.0}}
    assert first.client_quotas.quotas == quotas
    records = first.fetch_records(0, 1000)[1]
    assert [r["key"] for r in records if r["type"] == "ClientQuotaRecord"] == [
        "producer_byte_rate", "consumer_byte_rate"]
    first.metadata_log.close()
    second = controller()  # from the log
    assert second.client_quotas.quotas == quotas
    second.metadata_log.max_bytes_between_snapshots = 1  # the next change takes a snapshot
    second.alter_client_quotas([entry([("client-id", "c")], "consumer_byte_rate", None)], False)
    assert second.records_start == second.metadata_log.end_offset
    second.metadata_log.close()
    del quotas[(("client-id", "c"),)]
    assert controller().client_quotas.quotas == quotas  # from the snapshot


def test_a_brokers_image_takes_the_controllers_quotas_whole(tmp_path):
    """A broker behind the controller's snapshot takes every quota at once: what it had and the
    controller no longer has goes, the rest becomes the controller's, on disk, and its quota
    managers hear of it."""
    cache = MetadataCache(tmp_path)
    heard = []
    cache.on_client_quotas = lambda quotas: heard.append({e: dict(v) for e, v in quotas.items()})
    gone, kept, new = (("user", "gone"),), (("user", "kept"),), (("client-id", None),)
    cache.apply_client_quota_records([client_quota_record(gone, "producer_byte_rate", 1.0),
                                      client_quota_record(kept, "producer_byte_rate", 2.0)])
    cache.replace_client_quotas([client_quota_record(kept, "producer_byte_rate", 3.0),
                                 client_quota_record(new, "consumer_byte_rate", 4.0)])
    wanted = {kept: {"producer_byte_rate": 3.0}, new: {"consumer_byte_rate": 4.0}}
    assert cache.client_quotas.quotas == wanted and heard[-1] == wanted
    cache.metadata_log.close()
    assert MetadataCache(tmp_path).client_quotas.quotas == wanted


@pytest.mark.cluster
def test_quotas_reach_every_broker_of_a_cluster(cluster):
    """Altered through one broker, kept by the controller: every broker replays it into its
    own image (the one its quota managers read) and describes it from there."""
    def address(broker):
        host, port = cluster.broker_address(broker).rsplit(":", 1)
        return host, int(port)

    entity = [("client-id", "cluster-quota")]
    try:
        assert alter(address(1), [(entity, [("producer_byte_rate", 5000.0)])]) == [
            (Errors.NONE, None)]
        assert alter(address(2), [(entity, [("bogus", 1.0)])])[0][0] == Errors.INVALID_REQUEST
        for broker in (1, 2, 3):
            wait_until(lambda b=broker: describe(address(b), [("client-id", EXACT,
                                                               "cluster-quota")]) ==
                       {(("client-id", "cluster-quota"),): {"producer_byte_rate": 5000.0}},
                       f"broker {broker} has the quota", bound_s=30)
    finally:
        alter(address(3), [(entity, [("producer_byte_rate", None)])])
    for broker in (1, 2, 3):
        wait_until(lambda b=broker: describe(address(b), [("client-id", EXACT,
                                                           "cluster-quota")]) == {},
                   f"broker {broker} forgot the quota", bound_s=30)

