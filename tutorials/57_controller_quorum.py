"""Tutorial 57: kill the active controller; the quorum elects another and the cluster goes on.

Three controllers replicate the cluster's metadata log with Raft (KIP-595): one leads, it is
the *active controller*, the only one that decides; the others copy its log.  A decision counts
once two of the three have it.  So when we SIGKILL the active controller, the two others still
hold every committed record: one of them is elected, replays the log, and becomes active; the
brokers find it and carry on.  We prove it with a decision only a controller can take: a new
leader for a partition whose leader we kill afterwards.  See docs/broker/quorum.rst.

    python tutorials/57_controller_quorum.py
"""

# needs: cluster

import time
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer
from kafka.structs import TopicPartition

from kafkacore import KafkaProducer
from kafkacore.admin import create_topics
from kafkacore.testing.cluster import Cluster


def quorum(bootstrap: str) -> dict[str, Any]:
    """DescribeQuorum, asked by kafka-python (a broker forwards it to the active controller)."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
    try:
        [topic] = admin.describe_metadata_quorum()["topics"]
    finally:
        admin.close()
    [partition] = topic["partitions"]
    return dict(partition)


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    with KafkaProducer(bootstrap_servers=bootstrap, acks="all",
                       enable_idempotence=True) as producer:
        for future in [producer.send(topic, v) for v in values]:
            future.get(timeout=60)


def read_back(bootstrap: str, topic: str, count: int) -> list[bytes]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             consumer_timeout_ms=30000)
    consumer.assign([TopicPartition(topic, 0)])
    values = [record.value for _, record in zip(range(count), consumer, strict=False)]
    consumer.close()
    return values


# --- start
with Cluster(brokers=3, controllers=3) as cluster:
    bootstrap = cluster.bootstrap_servers
    before = quorum(bootstrap)
    first = cluster.active_controller()
    print(f"controllers {sorted(cluster.controllers)}: {first} leads, epoch "
          f"{before['leader_epoch']}, metadata log committed to offset {before['high_watermark']}")

    create_topics(bootstrap, {"orders": 1}, replication_factor=3,
                  configs={"min.insync.replicas": "2"})
    cluster.wait_for_isr("orders", 0, [1, 2, 3])
    produce(bootstrap, "orders", [b"before %d" % i for i in range(5)])

    cluster.kill(first)  # SIGKILL: no goodbye, no resignation
    second = cluster.active_controller()  # waits (bounded) for the election
    after = quorum(bootstrap)
    print(f"killed {first}: {second} was elected in epoch {after['leader_epoch']}")
    assert second != first and after["leader_epoch"] > before["leader_epoch"]

    # Only the active controller can move a leadership: kill the partition's leader.
    leader = cluster.leader_of("orders", 0)
    cluster.kill(leader)
    new_leader = cluster.wait_for_leader_change("orders", 0, leader)
    print(f"killed broker {leader}, the leader of orders-0: controller {second} elected "
          f"broker {new_leader}")
    produce(bootstrap, "orders", [b"after %d" % i for i in range(5)])
    values = read_back(bootstrap, "orders", 10)
    print(f"orders-0 holds {len(values)} records: {values[0]!r} ... {values[-1]!r}")
    assert values == [b"before %d" % i for i in range(5)] + [b"after %d" % i for i in range(5)]

    # The old active controller comes back with its log and follows the new leader.
    cluster.restart(first)
    deadline = time.monotonic() + 60
    while (status := cluster.quorum_status(first))["leader_id"] in (-1, first):
        assert time.monotonic() < deadline, f"controller {first} follows nobody: {status}"
        time.sleep(0.1)
    print(f"controller {first} restarted with its log: it follows {status['leader_id']} in "
          f"epoch {status['epoch']}")
    assert not status["active"]
