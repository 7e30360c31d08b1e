"""Kafka's combined mode on a quorum: three ``kafkacore-broker`` processes, each started with a
copy of Kafka's stock ``server.properties`` (``process.roles=broker,controller``, a PLAINTEXT
and a CONTROLLER listener) and ``controller.quorum.voters`` naming all three, are the quorum's
voters and the cluster's brokers at once.  Judged by clients we did not write: kafka-python's
admin client creates the topics and describes the quorum, confluent-kafka produces and reads.
The active controller's process is SIGKILLed: the other two elect a leader and go on deciding
(a new topic); restarted, the node rejoins and learns what was decided without it.  See
docs/broker/quorum.rst, "Combined nodes".
"""

from __future__ import annotations

import os
import pathlib
import select
import signal
import socket
import subprocess
import sys
import time
import uuid

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from readback import produce_confluent, read_confluent
from test_describe_quorum import describe
from waits import wait_until

import kafkacore
from kafkacore.broker.config.kafka_config import BrokerConfig
from kafkacore.broker.config.server_properties import parse_properties
from kafkacore.broker.server.kafka_raft_server import (
    CONTROLLER_DIR,
    is_combined_quorum,
    split_roles,
)
from kafkacore.broker.server_common import lifeline
from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
from kafkacore.errors import ConfigError, Errors
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey

pytestmark = pytest.mark.timeout(300)

READY = "kafkacore-broker listening on "
NODES = (1, 2, 3)
ROOT = str(pathlib.Path(kafkacore.__file__).resolve().parent.parent)

#: Kafka 4's stock config/server.properties (combined mode), the very file
STOCK = pathlib.Path(__file__).parent / "kafka_config" / "server.properties"


def node_properties(node: int, voters: str, port: int, controller_port: int,
                    log_dir: str) -> str:
    """The stock file for node ``node``: its id, the quorum's voters, free ports and its own
    log dir, fewer threads, and the tests' short broker session (a dead node's partitions move
    within about 2 s); every other line as Kafka ships it."""
    changes = {
        "node.id": str(node), "controller.quorum.voters": voters,
        "controller.quorum.bootstrap.servers": voters.split("@", 1)[1].split(",")[0],
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners":
            f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "log.dirs": log_dir, "num.network.threads": "2", "num.io.threads": "4",
        "broker.session.timeout.ms": "2000", "broker.heartbeat.interval.ms": "200"}
    lines = []
    for line in STOCK.read_text().splitlines():
        key = line.partition("=")[0].strip()
        lines.append(f"{key}={changes.pop(key)}" if key in changes else line)
    return "\n".join(lines + [f"{k}={v}" for k, v in changes.items()]) + "\n"


def stock(node: int = 1, log_dir: str = "/tmp/kc-combined") -> dict[str, str]:
    """The settings of node ``node``'s file, as ``kafkacore-broker`` reads them."""
    text = node_properties(node, "1@h:9093,2@h:9094,3@h:9095", 9092, 9093, log_dir)
    return parse_properties(text)


def free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        return probe.getsockname()[1]


class CombinedNodes:
    """Three combined processes; each node's broker port and controller port are fixed up
    front (``controller.quorum.voters`` names them), so a restarted node comes back on them."""

    def __init__(self, base: pathlib.Path) -> None:
        self.base = base
        self.ports = {n: free_port() for n in NODES}
        self.controller_ports = {n: free_port() for n in NODES}
        voters = ",".join(f"{n}@127.0.0.1:{self.controller_ports[n]}" for n in NODES)
        for n in NODES:
            (base / f"node-{n}.properties").write_text(node_properties(
                n, voters, self.ports[n], self.controller_ports[n], str(base / f"node-{n}")))
        self.processes: dict[int, subprocess.Popen[bytes]] = {}

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{self.ports[n]}" for n in sorted(self.processes))

    def spawn(self, node: int) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            filter(None, [ROOT, os.environ.get("PYTHONPATH")]))}
        with open(self.base / f"node-{node}.log", "ab") as stderr:
            self.processes[node] = lifeline.spawn(
                [sys.executable, "-m", "kafkacore.broker",
                 str(self.base / f"node-{node}.properties")],
                # From its own directory: ``python -m`` puts the working directory first on
                # sys.path, and a checkout's would hide the installed kafkacore.
                lifeline=True, stdout=subprocess.PIPE, stderr=stderr, env=env, cwd=self.base)

    def wait_ready(self, node: int, bound_s: float = 90.0) -> None:
        """Its ready line: the broker registered with the quorum and holds its image."""
        process = self.processes[node]
        if process.stdout is None:
            raise AssertionError(f"node {node} has no stdout")
        deadline = time.monotonic() + bound_s
        line = b""
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            assert left > 0 and process.poll() is None, \
                f"node {node} did not start (see {self.base}/node-{node}.log)"
            ready, _, _ = select.select([process.stdout], [], [], min(left, 0.5))
            if ready:
                line += os.read(process.stdout.fileno(), 1)
        assert line.decode().strip() == f"{READY}127.0.0.1:{self.ports[node]}", line

    def kill(self, node: int) -> None:
        process = self.processes.pop(node)
        process.kill()
        process.wait(10)
        if process.stdout is not None:
            process.stdout.close()

    def close(self) -> None:
        for process in self.processes.values():
            process.send_signal(signal.SIGTERM)
        for node in list(self.processes):
            process = self.processes[node]
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
            if process.stdout is not None:
                process.stdout.close()
        self.processes.clear()

    def brokers_known_to(self, node: int) -> set[int]:
        """The live brokers node ``node``'s broker lists in its Metadata."""
        return {b["node_id"] for b in self.metadata(node, [])["brokers"]}

    def metadata(self, node: int, topics: list[str]) -> dict:
        client = InterBrokerClient("127.0.0.1", self.ports[node], "combined", 10.0)
        try:
            body = codec.REQUESTS[ApiKey.METADATA].body.defaults(12)
            body.update(topics=[{"name": t, "topic_id": uuid.UUID(int=0)} for t in topics],
                        allow_auto_topic_creation=False)
            return client.send(ApiKey.METADATA, 12, body)
        finally:
            client.close()

    def knows(self, node: int, topic: str) -> bool:
        """Node ``node``'s broker knows ``topic`` and a leader for it."""
        [t] = self.metadata(node, [topic])["topics"]
        return t["error_code"] == Errors.NONE and all(
            p["leader_id"] >= 0 for p in t["partitions"])


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    combined = CombinedNodes(tmp_path_factory.mktemp("combined"))
    try:
        for n in NODES:  # all at once: a broker's start waits for the quorum's leader
            combined.spawn(n)
        for n in NODES:
            combined.wait_ready(n)
        yield combined
    finally:
        combined.close()


def create_topic(bootstrap: str, replication_factor: int) -> str:
    name = f"c-{uuid.uuid4().hex[:10]}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
    try:
        admin.create_topics([NewTopic(name, 1, replication_factor)])
    finally:
        admin.close()
    return name


@pytest.mark.cluster
def test_three_combined_nodes_are_the_quorum_and_the_brokers(nodes):
    wait_until(lambda: all(nodes.brokers_known_to(n) == set(NODES) for n in NODES),
               "every node's broker lists the three brokers")
    quorum = describe(nodes.bootstrap_servers)
    assert sorted(v["replica_id"] for v in quorum["current_voters"]) == list(NODES)
    assert quorum["leader_id"] in NODES
    topic = create_topic(nodes.bootstrap_servers, 3)
    wait_until(lambda: all(nodes.knows(n, topic) for n in NODES), f"every node knows {topic}")
    values = [b"combined-%03d" % i for i in range(50)]
    delivered, errors = produce_confluent(nodes.bootstrap_servers, topic, values,
                                          {"acks": "all", "enable.idempotence": True})
    assert errors == [] and len(delivered) == len(values)
    assert [r.value for r in read_confluent(nodes.bootstrap_servers, topic, 1, len(values))] \
        == values


@pytest.mark.cluster
def test_the_others_decide_without_the_active_controller_and_it_rejoins(nodes):
    active = describe(nodes.bootstrap_servers)["leader_id"]
    assert active in NODES
    nodes.kill(active)  # SIGKILL: its voter and its broker die together
    others = sorted(nodes.processes)
    # Its broker is fenced: only an active controller decides that, so one was elected among
    # the other two (until then kafka-python may pick the dead broker from Metadata).
    wait_until(lambda: all(nodes.brokers_known_to(n) == set(others) for n in others),
               f"broker {active} is fenced", bound_s=60)
    new_leader = describe(nodes.bootstrap_servers)["leader_id"]
    assert new_leader in others
    # They go on deciding: a topic on the two live brokers, written and read back.
    topic = create_topic(nodes.bootstrap_servers, 2)
    wait_until(lambda: all(nodes.knows(n, topic) for n in others), f"the others know {topic}")
    values = [b"without-%d-%03d" % (active, i) for i in range(20)]
    delivered, errors = produce_confluent(nodes.bootstrap_servers, topic, values,
                                          {"acks": "all", "enable.idempotence": True})
    assert errors == [] and len(delivered) == len(values)
    # Restarted, the node rejoins: a voter again and a broker that knows what was decided.
    nodes.spawn(active)
    nodes.wait_ready(active)
    wait_until(lambda: nodes.knows(active, topic), f"node {active} learns of {topic}")
    wait_until(lambda: all(nodes.brokers_known_to(n) == set(NODES) for n in NODES),
               f"every node lists broker {active} again")

    def caught_up() -> bool:
        quorum = describe(nodes.bootstrap_servers)
        return any(v["replica_id"] == active and v["log_end_offset"] >= quorum["high_watermark"]
                   for v in quorum["current_voters"])

    wait_until(caught_up, f"voter {active} fetches up to the quorum's high watermark")
    assert [r.value for r in read_confluent(nodes.bootstrap_servers, topic, 1, len(values))] \
        == values


# -- the settings split in two (no process started) -----------------------------------------------

def test_a_combined_node_of_several_voters_is_split_into_its_voter_and_its_broker(tmp_path):
    values = stock(log_dir=str(tmp_path))
    assert is_combined_quorum(values)
    assert not is_combined_quorum({**values, "controller.quorum.voters": "1@h:9093"})
    assert not is_combined_quorum({**values, "process.roles": "broker"})
    controller, broker = split_roles(values)
    voter, member = BrokerConfig(controller), BrokerConfig(broker)
    assert voter["process.roles"] == "controller" and member["process.roles"] == "broker"
    assert [e.name for e in voter.listeners] == ["CONTROLLER"]
    assert [(e.name, e.port) for e in member.listeners] == [("PLAINTEXT", 9092)]
    assert voter.log_dirs == [str(tmp_path / CONTROLLER_DIR)]
    assert member.log_dirs == [str(tmp_path)]
    assert member["controller.quorum.bootstrap.servers"] == "h:9093,h:9094,h:9095"
    assert voter["controller.quorum.voters"] == values["controller.quorum.voters"]


@pytest.mark.parametrize(("change", "says"), [
    ({"node.id": "4"}, "not a voter"),
    ({"listeners": "PLAINTEXT://127.0.0.1:9092"}, "no controller listener"),
    ({"listeners": "CONTROLLER://127.0.0.1:9093"}, "only controller listeners"),
    ({"log.dirs": ""}, "log.dirs"),
    ({"controller.quorum.voters": "1@h:9093,two@h:9094"}, "id@host:port"),
])
def test_a_combined_node_that_cannot_be_split_is_a_config_error(change, says):
    with pytest.raises(ConfigError, match=says):
        split_roles({**stock(), **change})
