"""Tutorial 47: replication and a leader election, on a real three-broker cluster.

We start a quorum of three controllers and three brokers, each its own process
(``kafkacore.testing.cluster.Cluster``), create a topic with replication factor 3 and
``min.insync.replicas=2``, and produce with ``acks=all``: each acknowledgement means all three
replicas have the record.  Then we kill the partition's leader with SIGKILL and watch the
(active) controller fence it and elect a new leader from
the in-sync replicas, with a new leader epoch.  The producer carries on; nothing acknowledged is
lost.  Finally the dead broker restarts on its old log, truncates by leader epoch, catches up and
rejoins the ISR.  See docs/broker/replication.rst and docs/broker/failover.rst.

    python tutorials/47_replication.py
"""

# needs: cluster

import time
from typing import Any

from kafkacore import KafkaProducer
from kafkacore.admin import create_topics
from kafkacore.testing.cluster import Cluster


def show(cluster: Cluster, topic: str, when: str) -> dict[str, Any]:
    state = cluster.partition_state(topic, 0)
    assert state is not None, f"{topic} is not in the controller's metadata"
    print(f"{when:<28} leader={state['leader_id']}  epoch={state['leader_epoch']}  "
          f"replicas={state['replica_nodes']}  isr={state['isr_nodes']}")
    return state


with Cluster(brokers=3) as cluster:
    print("bootstrap servers:", cluster.bootstrap_servers)
    topic = "orders"
    create_topics(cluster.bootstrap_servers, {topic: 1}, replication_factor=3,
                  configs={"min.insync.replicas": "2"})
    cluster.wait_for_isr(topic, 0, [1, 2, 3])
    cluster.wait_for_topic(topic)
    first = show(cluster, topic, "created:")

    with KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all",
                       enable_idempotence=True, linger_ms=5) as producer:
        futures = [producer.send(topic, b"before-%d" % i) for i in range(100)]
        producer.flush(60)
        print("acknowledged before the kill:", len([f.result(30) for f in futures]))

        leader = first["leader_id"]
        killed_at = time.monotonic()
        cluster.kill(leader)  # SIGKILL: no goodbye, the controller must notice
        print(f"killed broker {leader} (the leader)")
        new_leader = cluster.wait_for_leader_change(topic, 0, leader)
        print(f"the controller fenced broker {leader} and elected broker {new_leader} "
              f"after {time.monotonic() - killed_at:.1f} s (broker.session.timeout.ms=2000)")
        after = show(cluster, topic, "after the election:")
        assert after["leader_epoch"] > first["leader_epoch"]  # every election bumps the epoch
        assert leader not in after["isr_nodes"]

        futures += [producer.send(topic, b"after-%d" % i) for i in range(100)]
        producer.flush(60)
        offsets = [f.result(30).offset for f in futures]
        # Every record acknowledged once, in order: offsets 0..199 with no gap or repeat.
        assert offsets == list(range(200)), offsets
        print("all 200 records acknowledged, offsets 0..199, in order")

    cluster.restart(leader)  # same log.dirs, same port
    print(f"restarted broker {leader}: it truncates by leader epoch, catches up, rejoins the ISR")
    cluster.wait_for_isr(topic, 0, [1, 2, 3])
    show(cluster, topic, "after the restart:")
