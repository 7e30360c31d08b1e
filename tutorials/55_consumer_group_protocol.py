"""Tutorial 55: the consumer group protocol (KIP-848): the coordinator assigns, epochs order it.

With ``group.protocol=consumer`` a consumer no longer joins, syncs and computes assignments: it
sends ConsumerGroupHeartbeat every ``group.consumer.heartbeat.interval.ms``, and the coordinator
answers with its member epoch and the partitions it may own.  Each membership change bumps the
*group epoch*; the coordinator's assignor computes a target for that epoch; each member moves to
its target on its own, revoking first, so a partition never has two owners.

The consumers are confluent-kafka's (librdkafka); the broker is ours, started in this process.
We print the group as the coordinator sees it after each step.

    python tutorials/55_consumer_group_protocol.py
"""

import time
from collections.abc import Callable

from confluent_kafka import Consumer, Producer

from kafkacore.broker import Broker

TOPIC = "orders"
GROUP = "billing"

settings = {
    "num.partitions": "4",
    # Kafka's members heartbeat every 5 s; a tutorial does not need to wait that long.
    "group.consumer.heartbeat.interval.ms": "500",
}


def consumer(bootstrap: str) -> Consumer:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                  "group.protocol": "consumer", "auto.offset.reset": "earliest"})
    c.subscribe([TOPIC])
    return c


def owned(c: Consumer) -> list[int]:
    return sorted(tp.partition for tp in c.assignment())


def poll_until(consumers: list[Consumer], condition: Callable[[], object],
               bound_s: float = 30.0) -> None:
    deadline = time.monotonic() + bound_s
    while not condition():
        assert time.monotonic() < deadline, "the group did not settle in time"
        for c in consumers:
            c.poll(0.1)


def describe(broker: Broker) -> str:
    group = broker.group_coordinator.consumer_groups.group(GROUP)
    with group.lock:
        members = ", ".join(f"{m.member_id[:6]}: epoch {m.member_epoch} {m.state.name}"
                            for m in group.members.values())
        return (f"group epoch {group.group_epoch}, assignment epoch {group.assignment_epoch}, "
                f"{group.state().value} [{members}]")


with Broker(settings) as broker:
    bootstrap = broker.bootstrap_servers
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(40):
        producer.produce(TOPIC, b"order-%d" % i, partition=i % 4)
    assert producer.flush(30) == 0

    first = consumer(bootstrap)
    poll_until([first], lambda: owned(first) == [0, 1, 2, 3])
    print("one consumer :", owned(first), "|", describe(broker))

    second = consumer(bootstrap)
    poll_until([first, second],
               lambda: owned(first) and owned(second)
               and sorted(owned(first) + owned(second)) == [0, 1, 2, 3])
    print("two consumers:", owned(first), owned(second), "|", describe(broker))
    assert not set(owned(first)) & set(owned(second))  # revoked before it was given

    second.close()  # a heartbeat with member epoch -1: it leaves, the group epoch moves on
    poll_until([first], lambda: owned(first) == [0, 1, 2, 3])
    print("after a leave:", owned(first), "|", describe(broker))
    first.close()
