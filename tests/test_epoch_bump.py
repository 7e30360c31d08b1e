"""KIP-360 on the idempotent producer: batches whose outcome is unknown, and a broker that forgot us.

Our own broker checks sequence numbers as Kafka does (tansu does not), so the frozen-broker scenario
runs against it; tansu, which keeps producer state in memory, shows the restart that forgets the
producer id.  Every record is read back by confluent-kafka.
"""

from __future__ import annotations

import time
import uuid

import pytest
from readback import read_confluent

from kafkacore import KafkaProducer
from kafkacore.admin import create_topics
from kafkacore.errors import KafkaTimeoutError
from kafkacore.testing import LocalBroker

pytestmark = pytest.mark.broker


@pytest.fixture(scope="module")
def ours():
    with LocalBroker(kind="kafkacore") as broker:
        yield broker


def new_topic(bootstrap: str, partitions: int) -> str:
    name = f"bump-{uuid.uuid4().hex[:10]}"
    assert create_topics(bootstrap, {name: partitions}) == {name: 0}
    return name


def wait_all_done(futures, bound_s: float) -> None:
    deadline = time.monotonic() + bound_s
    while not all(f.done() for f in futures):
        assert time.monotonic() < deadline, "records neither delivered nor failed in time"
        time.sleep(0.02)


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
    topic = new_topic(ours.bootstrap, partitions)
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
            wait_all_done(frozen.values(), 60)
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
