"""KIP-360 on the idempotent producer: batches whose outcome is unknown, and a broker that forgot us.

Our own broker checks sequence numbers as Kafka does (tansu does not), so the frozen-broker scenario
runs against it; tansu, which keeps producer state in memory, shows the restart that forgets the
producer id.  Every record is read back by confluent-kafka.
"""

from __future__ import annotations

import threading
import time

import pytest
from readback import read_confluent
from support.scripted_broker import FakeBroker, api_versions_answer
from support.topics import new_topic
from waits import wait_until

from kafkacore import KafkaProducer
from kafkacore.admin import create_topics
from kafkacore.core import iter_batches
from kafkacore.errors import KafkaError, KafkaTimeoutError, OutOfOrderSequenceNumberError
from kafkacore.protocol.api_keys import ApiKey
from kafkacore.testing import LocalBroker


@pytest.fixture(scope="module")
def ours():
    with LocalBroker(kind="kafkacore") as broker:
        yield broker


def check_read_back(bootstrap, topic, partitions, acked, unknown):
    """Every acknowledged value once, at the offset its future reported; values whose outcome
    was unknown (they expired) at most once; nothing else; order per partition kept."""
    rows = read_confluent(bootstrap, topic, partitions, expected=len(acked))
    values = [r.value for r in rows]
    assert len(values) == len(set(values)), "a record was written twice"
    assert set(acked) <= set(values), "an acknowledged record is missing"
    assert set(values) <= set(acked) | set(unknown)
    by_value = {r.value: (r.partition, r.offset) for r in rows}
    for value, meta in acked.items():
        assert by_value[value] == (meta.partition, meta.offset)
    for partition in range(partitions):
        ordered = sorted((r.offset, r.value) for r in rows if r.partition == partition)
        sent = [v for v, m in acked.items() if m.partition == partition]
        assert [v for _, v in ordered if v in acked] == sent  # acknowledged order = send order


@pytest.mark.timeout(180)
def test_in_flight_batches_expire_while_the_broker_is_frozen_then_new_batches_succeed(ours):
    """Issue 11, part 1, item 1: the broker is frozen (SIGSTOP) until every batch in flight has
    passed delivery.timeout.ms; after SIGCONT it may write some of them.  The producer must bump
    its epoch for those partitions and go on: new records are delivered, none twice."""
    partitions = 2
    topic = new_topic(ours, partitions)
    producer = KafkaProducer(
        bootstrap_servers=ours.bootstrap, linger_ms=0, batch_size=200,
        request_timeout_ms=1000, delivery_timeout_ms=2500, retry_backoff_ms=20,
        socket_connection_setup_timeout_ms=1000, reconnect_backoff_max_ms=200,
    )
    acked: dict[bytes, object] = {}
    try:
        before = {b"before-%d" % i: producer.send(topic, b"before-%d" % i, partition=i % 2)
                  for i in range(20)}
        for value, future in before.items():
            acked[value] = future.get(timeout=30)
        frozen: dict[bytes, object] = {}
        with ours.paused():
            for i in range(40):
                value = b"frozen-%03d" % i + b"x" * 60
                frozen[value] = producer.send(topic, value, partition=i % 2)
            wait_until(lambda: all(f.done() for f in frozen.values()), "every frozen record done", 60)
        unknown = []
        for value, future in frozen.items():
            error = future.exception()
            if error is None:
                acked[value] = future.result()
            else:
                assert isinstance(error, KafkaTimeoutError), error
                unknown.append(value)
        assert unknown, "nothing expired: the scenario did not happen"
        # The broker is back; it may have written some of the expired batches.  New records
        # must be delivered (with the broken producer they got OUT_OF_ORDER_SEQUENCE_NUMBER
        # until they expired too).
        after = {b"after-%03d" % i: producer.send(topic, b"after-%03d" % i, partition=i % 2)
                 for i in range(40)}
        for value, future in after.items():
            acked[value] = future.get(timeout=60)
    finally:
        producer.close(5)
    check_read_back(ours.bootstrap, topic, partitions, acked, unknown)


# -- UNKNOWN_PRODUCER_ID: the broker forgot us ----------------------------------------------------

UNKNOWN_PRODUCER_ID = 59
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
DUPLICATE_SEQUENCE_NUMBER = 46
INVALID_PRODUCER_EPOCH = 47
UNKNOWN_SERVER_ERROR = -1
TOPIC = "scripted"


class ForgetfulLog:
    """One partition's log on a scripted broker that checks producer ids, epochs and sequences as
    Kafka does, and after ``forget_after`` records loses every producer's state once (a restart
    that kept the log but not the producer state).  A batch from a producer it does not know is
    answered UNKNOWN_PRODUCER_ID, unless its id and epoch were handed out by InitProducerId since
    and it starts at sequence 0.  ``can_bump``: InitProducerId with an id bumps its epoch (v3+);
    otherwise it is refused as tansu refuses it, and only a new producer id helps."""

    def __init__(self, forget_after: int, can_bump: bool, refuse=None):
        self.refuse = refuse  # batch -> an error code to refuse it with (before any check), or 0
        self.forget_after = forget_after
        self.can_bump = can_bump
        self.values: list[bytes] = []
        self.producers: dict[int, list[int]] = {}  # id -> [epoch, next sequence]
        self.issued: set[tuple[int, int]] = set()
        self.init_requests: list[tuple[int, int]] = []
        self.unknown_answers = 0
        self.next_id = 7
        self.forgotten = False
        self.lock = threading.Lock()

    def init_producer_id(self, body) -> dict:
        asked = (body.get("producer_id", -1), body.get("producer_epoch", -1))
        with self.lock:
            self.init_requests.append(asked)
            if asked[0] >= 0 and not self.can_bump:
                return {"throttle_time_ms": 0, "error_code": UNKNOWN_SERVER_ERROR,
                        "producer_id": -1, "producer_epoch": -1}
            given = (asked[0], asked[1] + 1) if asked[0] >= 0 else (self.next_id, 0)
            if asked[0] < 0:
                self.next_id += 1
            self.issued.add(given)
        return {"throttle_time_ms": 0, "error_code": 0, "producer_id": given[0],
                "producer_epoch": given[1]}

    def append(self, batch) -> tuple[int, int]:
        with self.lock:
            refused = self.refuse(batch) if self.refuse else 0
            if refused:
                return refused, -1
            state = self.producers.get(batch.producer_id)
            if state is None:
                if (batch.producer_id, batch.producer_epoch) not in self.issued or (
                    batch.base_sequence != 0
                ):
                    self.unknown_answers += 1
                    return UNKNOWN_PRODUCER_ID, -1
                state = self.producers[batch.producer_id] = [batch.producer_epoch, 0]
            if batch.producer_epoch < state[0]:
                return INVALID_PRODUCER_EPOCH, -1
            if batch.producer_epoch > state[0]:
                if batch.base_sequence != 0:
                    return OUT_OF_ORDER_SEQUENCE_NUMBER, -1
                state[:] = [batch.producer_epoch, 0]
            if batch.base_sequence < state[1]:
                return DUPLICATE_SEQUENCE_NUMBER, -1
            if batch.base_sequence > state[1]:
                return OUT_OF_ORDER_SEQUENCE_NUMBER, -1
            state[1] += batch.record_count
            base = len(self.values)
            self.values.extend(r.value for r in batch.records)
            if not self.forgotten and len(self.values) >= self.forget_after:
                self.forgotten = True
                self.producers.clear()
                self.issued.clear()
            return 0, base

    def handler(self, broker):
        def answer(header, body):
            key = header["request_api_key"]
            if key == ApiKey.API_VERSIONS:
                return api_versions_answer()
            if key == ApiKey.METADATA:
                return metadata_answer({1: broker}, {0: 1})
            if key == ApiKey.INIT_PRODUCER_ID:
                return self.init_producer_id(body)
            if key == ApiKey.PRODUCE:
                part = body["topic_data"][0]["partition_data"][0]
                [batch] = iter_batches(bytes(part["records"]))
                error, base = self.append(batch)
                return produce_answer([(0, error, base)])
            return None

        return answer


def metadata_answer(brokers, leaders):
    return {
        "brokers": [{"node_id": n, "host": "127.0.0.1", "port": b.port, "rack": None}
                    for n, b in brokers.items()],
        "controller_id": min(brokers),
        "topics": [{"error_code": 0, "name": TOPIC, "is_internal": False, "partitions": [
            {"error_code": 0, "partition_index": p, "leader_id": n, "leader_epoch": 0,
             "replica_nodes": [n], "isr_nodes": [n], "offline_replicas": []}
            for p, n in leaders.items()]}],
    }


def produce_answer(partitions):
    return {"responses": [{"name": TOPIC, "partition_responses": [
        {"index": p, "error_code": e, "base_offset": b, "log_append_time_ms": -1,
         "log_start_offset": 0} for p, e, b in partitions]}], "throttle_time_ms": 0}


@pytest.mark.parametrize("can_bump", [True, False], ids=["bump", "new-id"])
def test_unknown_producer_id_starts_the_partition_over_and_retries(can_bump):
    """Issue 11, part 1, item 2: UNKNOWN_PRODUCER_ID used to fail records.  Now the partition
    starts over under a bumped epoch (or, from a broker that cannot bump, a new producer id) and
    every record is written once, in order."""
    log = ForgetfulLog(forget_after=100, can_bump=can_bump)
    broker = FakeBroker(lambda h, b: None)
    broker.handler = log.handler(broker)
    sent = [b"%05d" % i + b"." * 40 for i in range(600)]
    try:
        with KafkaProducer(bootstrap_servers=broker.bootstrap, batch_size=1024,
                           linger_ms=1, retry_backoff_ms=10) as producer:
            futures = [producer.send(TOPIC, v) for v in sent]
            offsets = [f.get(timeout=60).offset for f in futures]
    finally:
        broker.close()
    assert log.forgotten and log.unknown_answers > 0  # the scenario happened
    assert log.values == sent  # every record once, in send order
    assert offsets == list(range(len(sent)))
    assert log.init_requests[0] == (-1, -1)
    assert (7, 0) in log.init_requests  # a bump of our own id and epoch was asked for
    if not can_bump:
        assert log.init_requests[-1] == (-1, -1)  # refused: a new producer id instead


@pytest.mark.timeout(180)
def test_a_broker_restart_that_loses_producer_state_fails_no_record(broker, make_topic):
    """tansu keeps producer ids in memory: after a restart it answers UNKNOWN_PRODUCER_ID to the
    producer it forgot (and refuses to bump an epoch it does not know).  Every record sent after
    the restart must be delivered, once, in order (read back by confluent-kafka)."""
    if broker.kind != "tansu":
        pytest.skip("only tansu forgets producers on restart; our broker keeps their state "
                    "(tests/broker/test_restart.py)")
    partitions = 3
    topic = make_topic(partitions=partitions)
    with KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=2, batch_size=2048) as producer:
        for i in range(30):
            producer.send(topic, b"before-%d" % i).get(timeout=30)
        broker.restart()  # memory storage: the topic and the producer ids are gone
        assert create_topics(broker.bootstrap, {topic: partitions}) == {topic: 0}
        futures = {b"after-%04d" % i: producer.send(topic, b"after-%04d" % i, partition=i % 3)
                   for i in range(600)}
        acked = {value: future.get(timeout=90) for value, future in futures.items()}
    check_read_back(broker.bootstrap, topic, partitions, acked, unknown=[])


INVALID_RECORD = 87


def test_a_batch_refused_for_good_does_not_block_the_younger_ones():
    """A batch refused with a non-retriable error leaves a gap in the sequences: the younger
    batches in flight are answered OUT_OF_ORDER_SEQUENCE_NUMBER and, before KIP-360, were
    retried behind the refused batch until they expired.  Now the poisoned records fail with the
    broker's error, and every other record is written once, in order."""
    poison = b"poison"

    def refuse(batch):
        return INVALID_RECORD if any(r.value == poison for r in batch.records) else 0

    log = ForgetfulLog(forget_after=10**9, can_bump=True, refuse=refuse)
    broker = FakeBroker(lambda h, b: None)
    broker.handler = log.handler(broker)
    sent = [b"%05d" % i + b"." * 40 for i in range(400)]
    try:
        with KafkaProducer(bootstrap_servers=broker.bootstrap, batch_size=512, linger_ms=0,
                           retry_backoff_ms=10, delivery_timeout_ms=30_000) as producer:
            first = [producer.send(TOPIC, v) for v in sent[:200]]
            bad = producer.send(TOPIC, poison)
            rest = [producer.send(TOPIC, v) for v in sent[200:]]
            futures = first + rest
            wait_until(lambda: all(f.done() for f in [bad, *futures]), "every record done", 60)
    finally:
        broker.close()
    error = bad.exception(timeout=0)
    assert isinstance(error, KafkaError) and error.errno == INVALID_RECORD, error
    # Whatever shared the poison's batch failed with it, with the same error; everything else
    # arrived once, in order, at the offsets its future reported.
    outcome = dict(zip(sent, futures, strict=True))
    failed = {v: f.exception(timeout=0) for v, f in outcome.items() if f.exception(timeout=0)}
    assert all(getattr(e, "errno", None) == INVALID_RECORD for e in failed.values()), failed
    assert len(failed) < 20  # only the poison's batch-mates (512-byte batches)
    written = [v for v in sent if v not in failed]
    assert log.values == written
    offsets = [outcome[v].result(timeout=0).offset for v in written]
    assert offsets == list(range(len(written)))
    assert max(epoch for epoch, _ in log.producers.values()) >= 1  # the epoch was raised


def test_batches_a_frozen_broker_appends_late_are_fenced_not_written_after_newer_ones():
    """A broker that froze with our Produce requests unread in its socket buffer appends them
    when it wakes: after the producer has started the partition over and sent newer records.
    The producer raises its own epoch (Java's ``bumpIdempotentProducerEpoch``) rather than take
    a new producer id, so the broker refuses the late batches as an older epoch of the same
    producer: nothing is written out of order.  (Under a new producer id the late batches were
    appended after the newer records: seen on the cluster, tests/test_idempotence_faults.py.)"""
    log = ForgetfulLog(forget_after=10**9, can_bump=False)
    frozen = threading.Event()
    unread: list = []  # Produce requests the frozen broker left in its socket buffer
    broker = FakeBroker(lambda h, b: None)
    serve = log.handler(broker)

    def answer(header, body):
        if frozen.is_set() and header["request_api_key"] == ApiKey.PRODUCE:
            unread.append(body)
            return None
        return serve(header, body)

    broker.handler = answer
    before = [b"before-%d" % i for i in range(5)]
    during = [b"during-%d" % i for i in range(5)]
    after = [b"after-%d" % i for i in range(5)]
    try:
        with KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0, batch_size=16,
                           request_timeout_ms=500, delivery_timeout_ms=1500,
                           retry_backoff_ms=10, max_in_flight_requests_per_connection=5,
                           ) as producer:
            for v in before:
                producer.send(TOPIC, v).get(timeout=30)
            frozen.set()
            expiring = [producer.send(TOPIC, v) for v in during]
            wait_until(lambda: all(f.done() for f in expiring), "the frozen records expiring", 30)
            assert all(isinstance(f.exception(), KafkaTimeoutError) for f in expiring)
            frozen.clear()
            for v in after:
                producer.send(TOPIC, v).get(timeout=30)
    finally:
        broker.close()
    assert unread, "no request was left unread: the scenario did not happen"
    # The broker wakes and reads what was left in its socket buffer.
    late = [log.append(next(iter_batches(bytes(
        body["topic_data"][0]["partition_data"][0]["records"]))))[0] for body in unread]
    assert set(late) == {INVALID_PRODUCER_EPOCH}, late
    assert log.values == before + after


@pytest.mark.timeout(240)
def test_a_stream_through_two_freezes_keeps_every_acknowledged_record_once_in_order(ours):
    """The same, with a thread sending all the while to three partitions, through two freezes
    longer than delivery.timeout.ms: acknowledged records once each and in send order per
    partition, expired ones at most once, and records acknowledged after the last freeze."""
    partitions = 3
    topic = new_topic(ours, partitions)
    producer = KafkaProducer(
        bootstrap_servers=ours.bootstrap, linger_ms=1, batch_size=512,
        request_timeout_ms=1000, delivery_timeout_ms=2500, retry_backoff_ms=20,
        socket_connection_setup_timeout_ms=1000, reconnect_backoff_max_ms=200,
        max_block_ms=60_000,
    )
    sent: list[tuple[bytes, object]] = []
    stop = threading.Event()

    def stream():
        i = 0
        while not stop.is_set():
            value = b"r%06d" % i
            sent.append((value, producer.send(topic, value, partition=i % partitions)))
            i += 1
            time.sleep(0.001)

    thread = threading.Thread(target=stream, daemon=True)
    thread.start()
    try:
        for _ in range(2):
            flowing = len(sent)
            deadline = time.monotonic() + 60
            while len(sent) < flowing + 50:  # the stream is flowing
                assert time.monotonic() < deadline and thread.is_alive()
                time.sleep(0.01)
            window = [f for _, f in sent[flowing:flowing + 50]]
            wait_until(lambda w=window: all(f.done() for f in w), "50 flowing records done", 60)
            with ours.paused():
                frozen_at = len(sent)
                deadline = time.monotonic() + 60
                while not any(f.done() and f.exception() for _, f in sent[frozen_at:]):
                    assert time.monotonic() < deadline, "nothing expired while frozen"
                    time.sleep(0.05)
        resumed_at = len(sent)
        deadline = time.monotonic() + 60
        while not any(f.done() and f.exception() is None for _, f in sent[resumed_at:]):
            assert time.monotonic() < deadline, "nothing delivered after the last freeze"
            time.sleep(0.05)
    finally:
        stop.set()
        thread.join(30)
    producer.flush(timeout=60)
    producer.close(5)
    acked = {}
    unknown = []
    for value, future in sent:
        error = future.exception(timeout=0)
        if error is None:
            acked[value] = future.result(timeout=0)
        else:
            # A batch whose delivery.timeout.ms passes while it is retried fails with its last
            # answer, as Java's does: here the broker's refusal of a batch sent behind an
            # expired one. An earlier attempt of it may still be in doubt: at most once too.
            assert isinstance(error, (KafkaTimeoutError, OutOfOrderSequenceNumberError)), error
            unknown.append(value)
    assert unknown and acked
    check_read_back(ours.bootstrap, topic, partitions, acked, unknown)
