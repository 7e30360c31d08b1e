"""Tutorial 49: two consumers in one group split a topic's partitions, on our own broker.

A consumer that calls ``subscribe()`` with a ``group.id`` does not choose its partitions: it
joins the group (JoinGroup), the coordinator picks one member as the leader and hands it every
member's subscription, the leader computes the assignment (range, here), and SyncGroup brings
each member its share.  When a second consumer joins, the coordinator answers the first one's
next heartbeat with REBALANCE_IN_PROGRESS; it rejoins, and a new generation splits the
partitions.  When one leaves (LeaveGroup on close), the other gets everything back.

The consumers are confluent-kafka's (librdkafka joins and syncs on its own threads; ``poll``
hands the application the new assignment): the broker is ours (kafkacore.broker), started in
this process.

    python tutorials/49_consumer_group.py
"""

import time
from collections.abc import Callable

from confluent_kafka import Consumer

from kafkacore import KafkaProducer
from kafkacore.broker import Broker

TOPIC = "orders"
GROUP = "billing"

settings = {
    "num.partitions": "4",
    # Kafka waits 3 s for more members before an empty group's first rebalance
    # (InitialDelayedJoin); a tutorial does not need to.
    "group.initial.rebalance.delay.ms": "0",
}


def consumer(bootstrap: str) -> Consumer:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "partition.assignment.strategy": "range"})
    c.subscribe([TOPIC])
    return c


def owned(c: Consumer) -> list[int]:
    return sorted(tp.partition for tp in c.assignment())


def poll_until(
    consumers: list[Consumer], condition: Callable[[], object], bound_s: float = 60.0
) -> None:
    """Poll every consumer in turn (a consumer takes its new assignment when it polls)."""
    deadline = time.monotonic() + bound_s
    while not condition():
        assert time.monotonic() < deadline, "the group did not settle in time"
        for c in consumers:
            c.poll(0.2)


def describe(broker: Broker) -> str:
    group = broker.group_coordinator.group(GROUP)
    with group.lock:
        return f"generation {group.generation_id}, {group.state.value}, {len(group.members)} member(s)"


with Broker(settings) as broker:
    bootstrap = broker.bootstrap_servers
    with KafkaProducer({"bootstrap.servers": bootstrap}) as producer:
        for i in range(40):
            producer.send(TOPIC, b"order-%d" % i, partition=i % 4)
        producer.flush(timeout=30)

    first = consumer(bootstrap)
    poll_until([first], lambda: owned(first) == [0, 1, 2, 3])
    print("one consumer :", owned(first), "|", describe(broker))

    second = consumer(bootstrap)
    poll_until([first, second],
               lambda: owned(first) and owned(second)
               and sorted(owned(first) + owned(second)) == [0, 1, 2, 3])
    print("two consumers:", owned(first), owned(second), "|", describe(broker))
    assert not set(owned(first)) & set(owned(second))

    second.close()  # LeaveGroup: the coordinator rebalances at once, no session timeout to wait
    poll_until([first], lambda: owned(first) == [0, 1, 2, 3])
    print("second left  :", owned(first), "|", describe(broker))
    first.close()
    print("both left    :", describe(broker))
    assert broker.group_coordinator.group(GROUP).state.value == "Empty"
