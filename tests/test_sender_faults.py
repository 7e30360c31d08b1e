"""Broker errors that tansu never sends, played by a scripted broker on our own codec.

tansu cannot be made to answer MESSAGE_TOO_LARGE (it ignores max.message.bytes) or
NOT_LEADER_OR_FOLLOWER (it is a single broker).  For these paths only, the test peer is
``FakeBroker`` from test_network: a socket server that decodes each request with our codec and
answers with the body a handler returns.  The producer under test is the real one, end to end.
"""

from __future__ import annotations

import threading
import time

import pytest
from support.scripted_broker import FakeBroker, api_versions_answer

from kafkacore import KafkaProducer
from kafkacore.core import iter_batches
from kafkacore.protocol.api_keys import ApiKey

MESSAGE_TOO_LARGE = 10
NOT_LEADER_OR_FOLLOWER = 6
TOPIC = "scripted"


OUT_OF_ORDER_SEQUENCE_NUMBER = 45
DUPLICATE_SEQUENCE_NUMBER = 46


def metadata_answer(brokers, leaders):
    """A MetadataResponse naming ``brokers`` (node id -> FakeBroker) and TOPIC's partitions
    (``leaders``: partition -> leader's node id), all at leader epoch 0."""
    return {
        "brokers": [
            {"node_id": n, "host": "127.0.0.1", "port": b.port, "rack": None}
            for n, b in brokers.items()
        ],
        "controller_id": min(brokers),
        "topics": [{"error_code": 0, "name": TOPIC, "is_internal": False, "partitions": [
            {"error_code": 0, "partition_index": p, "leader_id": n, "leader_epoch": 0,
             "replica_nodes": [n], "isr_nodes": [n], "offline_replicas": []}
            for p, n in leaders.items()
        ]}],
    }


def produce_answer(partitions, **extra):
    """A ProduceResponse for TOPIC: ``partitions`` is a list of (index, error code, base offset),
    or of whole partition-response dicts."""
    return {"responses": [{"name": TOPIC, "partition_responses": [
        p if isinstance(p, dict) else {"index": p[0], "error_code": p[1], "base_offset": p[2],
                                       "log_append_time_ms": -1, "log_start_offset": 0}
        for p in partitions
    ]}], "throttle_time_ms": 0, **extra}


class ScriptedLog:
    """One partition's log, kept by the scripted broker; ``refuse(batch)`` names an error.

    Like Kafka (and unlike tansu) it checks idempotent producers' sequence numbers: a batch that
    skips ahead is refused as out of order, one written before is answered as a duplicate.
    """

    def __init__(self, refuse):
        self.refuse = refuse
        self.values: list[bytes] = []
        self.refusals = 0
        self.next_sequence = 0
        self.lock = threading.Lock()

    def check_sequence(self, batch) -> int:
        if batch.producer_id < 0:
            return 0
        if batch.base_sequence == self.next_sequence:
            self.next_sequence += batch.record_count
            return 0
        if batch.base_sequence < self.next_sequence:
            return DUPLICATE_SEQUENCE_NUMBER
        return OUT_OF_ORDER_SEQUENCE_NUMBER

    def handler(self, brokers):
        """Answer as the leader of TOPIC's one partition; Metadata names ``brokers`` (node id ->
        FakeBroker) and node 1 as the leader."""

        def answer(header, body):
            key = header["request_api_key"]
            if key == ApiKey.API_VERSIONS:
                return api_versions_answer()
            if key == ApiKey.METADATA:
                return metadata_answer(brokers, {0: 1})
            if key == ApiKey.INIT_PRODUCER_ID:
                return {"throttle_time_ms": 0, "error_code": 0, "producer_id": 7,
                        "producer_epoch": 0}
            if key == ApiKey.PRODUCE:
                part = body["topic_data"][0]["partition_data"][0]
                [batch] = iter_batches(bytes(part["records"]))
                with self.lock:
                    error = self.refuse(batch)  # sizes first, as Kafka validates them first
                    if error:
                        self.refusals += 1
                    else:
                        error = self.check_sequence(batch)
                    base = -1
                    if not error:
                        base = len(self.values)
                        self.values.extend(r.value for r in batch.records)
                return produce_answer([(0, error, base)])
            return None

        return answer


def run_against(refuse, n=600, **settings):
    log = ScriptedLog(refuse)
    broker = FakeBroker(lambda h, b: None)
    broker.handler = log.handler({1: broker})
    try:
        with KafkaProducer(bootstrap_servers=broker.bootstrap, **settings) as producer:
            futures = [producer.send(TOPIC, b"%05d" % i + b"." * 95) for i in range(n)]
            producer.flush(timeout=60)
    finally:
        broker.close()
    return log, futures


@pytest.mark.parametrize("idempotent", [True, False])
def test_message_too_large_splits_until_the_broker_takes_the_pieces(idempotent):
    # The broker refuses any batch of more than 10 records; a 16 KiB batch holds ~140.
    settings = {"batch_size": 16384, "linger_ms": 20}
    if not idempotent:
        settings.update(enable_idempotence=False, max_in_flight_requests_per_connection=1)
    log, futures = run_against(
        lambda batch: MESSAGE_TOO_LARGE if batch.record_count > 10 else 0, **settings
    )
    assert log.refusals > 0
    sent = [b"%05d" % i + b"." * 95 for i in range(len(futures))]
    assert log.values == sent  # every record once, in send order
    assert [f.result(timeout=5).offset for f in futures] == list(range(len(futures)))


def test_not_leader_is_retried_after_a_metadata_refresh():
    refused = []

    def refuse_twice(batch):
        if len(refused) < 2:
            refused.append(batch.base_sequence)
            return NOT_LEADER_OR_FOLLOWER
        return 0

    log, futures = run_against(refuse_twice, n=200, batch_size=16384, linger_ms=5)
    assert len(refused) == 2
    assert sorted(log.values) == sorted(b"%05d" % i + b"." * 95 for i in range(200))
    assert len(log.values) == 200  # retried, never duplicated (the broker refused, not lost)
    assert all(f.exception(timeout=5) is None for f in futures)


def test_a_new_leader_named_in_the_produce_response_is_used_at_once():
    """KIP-951.  Node 1 refuses with NOT_LEADER_OR_FOLLOWER and names node 2 (epoch 1) as the
    leader; every Metadata answer is stale (leader 1, epoch 0), so only the hint can get the
    records to node 2.  The retry back-off is 60 s, so only skipping it (a new leader is no
    reason to wait) delivers them within the 30 s we wait."""
    logs = {1: ScriptedLog(lambda batch: 0), 2: ScriptedLog(lambda batch: 0)}
    brokers = {n: FakeBroker(lambda h, b: None) for n in logs}
    hinted = []

    def refuse_with_hint(plain):
        def answer(header, body):
            if header["request_api_key"] != ApiKey.PRODUCE:
                return plain(header, body)
            hinted.append(header["request_api_version"])
            return produce_answer(
                [{"index": 0, "error_code": NOT_LEADER_OR_FOLLOWER, "base_offset": -1,
                  "current_leader": {"leader_id": 2, "leader_epoch": 1}}],
                node_endpoints=[
                    {"node_id": 2, "host": "127.0.0.1", "port": brokers[2].port, "rack": None}
                ],
            )

        return answer

    brokers[1].handler = refuse_with_hint(logs[1].handler(brokers))
    brokers[2].handler = logs[2].handler(brokers)
    sent = [b"%05d" % i for i in range(50)]
    try:
        with KafkaProducer(
            bootstrap_servers=brokers[1].bootstrap, retry_backoff_ms=60_000,
            retry_backoff_max_ms=60_000, linger_ms=0,
        ) as producer:
            futures = [producer.send(TOPIC, v) for v in sent]
            offsets = [f.get(timeout=30).offset for f in futures]
            # white-box: the leader the producer learned from the hint (partitions_for has none)
            leader = producer._metadata.fetch().leader_for(TOPIC, 0)
    finally:
        for broker in brokers.values():
            broker.close()
    assert hinted and min(hinted) >= 10  # the hint exists from Produce v10
    assert leader == 2
    assert logs[1].values == [] and logs[2].values == sent  # once each, in order
    assert offsets == list(range(len(sent)))


def test_a_broker_that_stops_taking_data_loses_its_partitions_for_new_sticky_records():
    """partitioner.availability.timeout.ms, end to end.  Node 1 leads partition 0, node 2 leads
    partition 1.  Node 2 stops reading (its in-flight slots fill up and its data waits), so
    after the timeout the Sender reports it lagging and records without a key all go to
    partition 0.  Without that, the sticky partitioner would keep sending half of them to the
    frozen partition, and those would not be acknowledged while it stays frozen."""
    brokers = {n: FakeBroker(lambda h, b: None) for n in (1, 2)}
    written = {0: [], 1: []}

    def handler(header, body):
        key = header["request_api_key"]
        if key == ApiKey.API_VERSIONS:
            return api_versions_answer()
        if key == ApiKey.METADATA:
            return metadata_answer(brokers, {0: 1, 1: 2})
        if key == ApiKey.PRODUCE:
            answers = []
            for part in body["topic_data"][0]["partition_data"]:
                [batch] = iter_batches(bytes(part["records"]))
                log = written[part["index"]]
                answers.append((part["index"], 0, len(log)))
                log.extend(r.value for r in batch.records)
            return produce_answer(answers)
        return None

    for broker in brokers.values():
        broker.handler = handler
    producer = KafkaProducer(
        bootstrap_servers=brokers[1].bootstrap, partitioner_availability_timeout_ms=300,
        batch_size=512, linger_ms=0, enable_idempotence=False, acks=1,
        request_timeout_ms=60_000, delivery_timeout_ms=120_000,
    )
    try:
        warm = [producer.send(TOPIC, b"w%04d" % i + b"." * 95) for i in range(200)]
        assert all(f.exception(timeout=30) is None for f in warm)
        assert written[0] and written[1]  # both partitions took data while both brokers did

        brokers[2].reading = False
        frozen_at = time.monotonic()
        late = []
        i = 0
        while time.monotonic() - frozen_at < 3.0:
            future = producer.send(TOPIC, b"f%04d" % i + b"." * 95)
            if time.monotonic() - frozen_at > 1.5:  # well past the 300 ms, whatever the load
                late.append(future)
            i += 1
            time.sleep(0.005)
        assert late
        # Every late record went to partition 0, whose broker answers.
        assert all(f.exception(timeout=20) is None and f.get().partition == 0 for f in late)
        brokers[2].reading = True
        producer.flush(timeout=60)
    finally:
        producer.close(timeout=10)
        for broker in brokers.values():
            broker.close()
