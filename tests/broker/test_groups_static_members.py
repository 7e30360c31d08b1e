"""Static members of a classic group (KIP-345, ``group.instance.id``), judged with
confluent-kafka consumers: one that restarts gets its old partitions back with no rebalance
(the generation stays, the other member keeps its partitions and its member id), and the old
incarnation's member id is fenced (Heartbeat, OffsetCommit).  See docs/broker/groups.rst, "Static classic members".
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest
from support.topics import new_topic
from waits import wait_until

from kafkacore.errors import FencedInstanceIdError
from kafkacore.protocol.api_keys import ApiKey

PARTITIONS = 4

# A consumer in a child process (librdkafka's objects have crashed test processes when
# collected beside other threads): it prints its assignment each time it changes.
_STATIC_CONSUMER = textwrap.dedent("""
    import sys
    from confluent_kafka import Consumer
    bootstrap, topic, group, instance = sys.argv[1:5]
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "group.instance.id": instance, "session.timeout.ms": 30000,
                         "heartbeat.interval.ms": 200, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic], on_assign=lambda c, ps: print(
        "ASSIGNED", ",".join(str(p.partition) for p in ps), flush=True))
    while True:
        consumer.poll(0.2)
""")


@pytest.fixture
def broker(tmp_path):
    from kafkacore.broker.server.broker_server import Broker

    with Broker({"log.dirs": str(tmp_path), "num.partitions": str(PARTITIONS),
                 "group.initial.rebalance.delay.ms": "0"}) as b:
        yield b


class StaticConsumer:
    """A confluent-kafka consumer with ``group.instance.id`` in a child process."""

    def __init__(self, broker, topic: str, group: str, instance: str) -> None:
        self.assigned: list[set[int]] = []
        self.process = subprocess.Popen(
            [sys.executable, "-c", _STATIC_CONSUMER, broker.bootstrap_servers, topic, group,
             instance], stdout=subprocess.PIPE, text=True, env=os.environ.copy())
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("ASSIGNED"):
                parts = line.split()[1:]
                self.assigned.append({int(p) for p in parts[0].split(",")} if parts else set())

    def kill(self) -> None:
        """SIGKILL: a restart by a crash, no LeaveGroup (a static member sends none anyway)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)
        self._reader.join(10)


def test_a_restarted_static_member_gets_its_partitions_back_without_a_rebalance(broker):
    topic = new_topic(broker, PARTITIONS)
    group = f"static-{topic}"
    coordinator = broker.group_coordinator
    a = StaticConsumer(broker, topic, group, "instance-a")
    b = StaticConsumer(broker, topic, group, "instance-b")
    restarted = None
    try:
        def stable_with_both():
            g = coordinator._get_group(group)
            if g is None or g.state.value != "Stable" or len(g.members) != 2:
                return None
            if not (a.assigned and b.assigned and a.assigned[-1] and b.assigned[-1]):
                return None
            if a.assigned[-1] | b.assigned[-1] != set(range(PARTITIONS)):
                return None
            return g
        g = wait_until(stable_with_both, what="a Stable group of two static members",
                       step_s=0.05)
        with g.lock:
            generation = g.generation_id
            ids = {m.group_instance_id: m.member_id for m in g.members.values()}
        a_partitions, b_partitions = a.assigned[-1], b.assigned[-1]

        a.kill()
        restarted = StaticConsumer(broker, topic, group, "instance-a")
        wait_until(lambda: restarted.assigned and restarted.assigned[-1],
                   what="the restarted member's assignment", step_s=0.05)
        assert restarted.assigned == [a_partitions]  # its old partitions, at once
        with g.lock:
            assert g.state.value == "Stable" and g.generation_id == generation  # no rebalance
            now = {m.group_instance_id: m.member_id for m in g.members.values()}
        assert now["instance-b"] == ids["instance-b"]
        assert now["instance-a"] != ids["instance-a"]
        assert b.assigned[-1] == b_partitions

        # The old incarnation is fenced: its member id with its instance id.
        from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient

        host, port = broker.bootstrap_servers.split(":")
        client = InterBrokerClient(host, int(port), "old-incarnation", 10.0)
        try:
            answer = client.send(ApiKey.HEARTBEAT, 3, {
                "group_id": group, "generation_id": generation,
                "member_id": ids["instance-a"], "group_instance_id": "instance-a"})
            assert answer["error_code"] == FencedInstanceIdError.errno
            committed = client.send(ApiKey.OFFSET_COMMIT, 8, {
                "group_id": group, "generation_id_or_member_epoch": generation,
                "member_id": ids["instance-a"], "group_instance_id": "instance-a",
                "topics": [{"name": topic, "partitions": [
                    {"partition_index": p, "committed_offset": 0, "committed_leader_epoch": -1,
                     "committed_metadata": ""} for p in sorted(a_partitions)]}]})
            assert {p["error_code"] for p in committed["topics"][0]["partitions"]} == \
                {FencedInstanceIdError.errno}
        finally:
            client.close()
    finally:
        for consumer in (a, b, restarted):
            if consumer is not None:
                consumer.kill()
