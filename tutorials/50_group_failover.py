"""Tutorial 50: a consumer group's committed offsets survive the death of its coordinator.

A group's coordinator is the leader of one partition of the internal topic ``__consumer_offsets``
(``abs(hashCode(group.id)) % 50``, as Kafka computes it), and each OffsetCommit is a record
appended to that partition with ``acks=all``.  So when we SIGKILL the coordinator, the controller
elects another replica of that partition as its leader; that broker loads the partition from its
own log and becomes the group's coordinator, with every commit that was acknowledged.

A kafka-python consumer reads half a topic and commits; we kill the coordinator; a new consumer of
the same group, with ``auto_offset_reset="latest"`` (so it would skip everything if the offsets
were lost), resumes exactly where the first one committed.  See docs/broker/groups.rst.

    python tutorials/50_group_failover.py
"""

# needs: cluster

import time

from kafka import KafkaConsumer
from kafka.structs import OffsetAndMetadata, TopicPartition

from kafkacore import KafkaProducer
from kafkacore.admin import create_topics
from kafkacore.broker.group.group_metadata_manager import OFFSETS_TOPIC, partition_for
from kafkacore.testing.cluster import Cluster

TOPIC = "payments"
GROUP = "ledger"
RECORDS = 100


def consume(bootstrap: str, count: int) -> list[bytes]:
    """Read ``count`` records with ``subscribe()``, committing after each one, then leave."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=GROUP,
                             enable_auto_commit=False, auto_offset_reset="latest",
                             consumer_timeout_ms=60000)
    consumer.subscribe([TOPIC])
    values: list[bytes] = []
    for record in consumer:
        values.append(record.value)
        consumer.commit()  # synchronous: answered once the offsets partition's ISR has it
        if len(values) == count:
            break
    consumer.close(autocommit=False)
    return values


with Cluster(brokers=3, config={"group.initial.rebalance.delay.ms": "0"}) as cluster:
    create_topics(cluster.bootstrap_servers, {TOPIC: 1}, replication_factor=3,
                  configs={"min.insync.replicas": "2"})
    cluster.wait_for_isr(TOPIC, 0, [1, 2, 3])
    cluster.wait_for_topic(TOPIC)
    with KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all",
                       enable_idempotence=True) as producer:
        for i in range(RECORDS):
            producer.send(TOPIC, b"payment-%03d" % i)
        producer.flush(60)
    # "latest" would skip the records already there: the group starts from a commit of offset 0,
    # made as a consumer that assign()s makes it (a group with no members may store offsets).
    seed = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=GROUP,
                         enable_auto_commit=False)
    seed.assign([TopicPartition(TOPIC, 0)])
    seed.commit({TopicPartition(TOPIC, 0): OffsetAndMetadata(0, "", -1)})
    seed.close(autocommit=False)

    offsets_partition = partition_for(GROUP, 50)
    coordinator = cluster.leader_of(OFFSETS_TOPIC, offsets_partition)
    print(f"group {GROUP!r} -> {OFFSETS_TOPIC}-{offsets_partition}, led by broker {coordinator}:"
          " the coordinator")

    first = consume(cluster.bootstrap_servers, RECORDS // 2)
    print(f"first consumer: {first[0]!r} .. {first[-1]!r}, committed offset {len(first)}")

    killed_at = time.monotonic()
    cluster.kill(coordinator)  # SIGKILL
    new_coordinator = cluster.wait_for_leader_change(OFFSETS_TOPIC, offsets_partition,
                                                     coordinator)
    print(f"killed broker {coordinator}; broker {new_coordinator} leads "
          f"{OFFSETS_TOPIC}-{offsets_partition} after {time.monotonic() - killed_at:.1f} s and "
          "loads the group's offsets from its replica")
    # Every broker learns of the election at its next pull of the controller's image; until then
    # one may still send a new consumer to the dead broker, and kafka-python's consumer raises
    # the refused connection from poll() instead of asking another broker.
    cluster.wait_for_leader_known(OFFSETS_TOPIC, offsets_partition, new_coordinator)
    # ... and the dead broker fenced everywhere: a broker that still lists it may hand it to the
    # consumer as the node to ask FindCoordinator of, and the refused connection is raised too.
    cluster.wait_for_brokers()

    second = consume(cluster.bootstrap_servers, RECORDS - len(first))
    print(f"second consumer: {second[0]!r} .. {second[-1]!r}")
    # Resumed at the committed offset: nothing skipped, nothing read twice.
    assert first + second == [b"payment-%03d" % i for i in range(RECORDS)]
    print(f"all {RECORDS} records read once, in order, across the coordinator's death")
    cluster.restart(coordinator)
