"""``Cluster``: a controller (or a quorum of them) and N brokers, each its own OS process, that
a test can break.

>>> with Cluster(brokers=3) as cluster:                    # doctest: +SKIP
...     producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all")
...     cluster.kill(cluster.leader_of("orders", 0))         # SIGKILL: a real leader election

Every broker keeps its ``log.dirs`` under one directory (a temporary one unless given), so
``restart(broker)`` brings it back with its log, on the same port.  Faults without killing
(``isolate``, ``heal``, ``set_latency``, ``fail_next``) go through each broker's control socket
(``kafkacore.broker.network.faults.BrokerControl``).  Every wait is bounded.

By default three controllers run as a Raft quorum (``controller.quorum.voters``, node ids
3000, 3001, 3002 as Kafka's ``KafkaClusterTestKit`` numbers them): ``kill``, ``restart``,
``isolate`` and the rest take a controller's id too, and ``active_controller()`` says which one
leads (docs/broker/quorum.rst).  ``Cluster(controllers=1)`` runs the lone controller, node 0, a
quorum of one.  See docs/broker/failover.rst.
"""

from __future__ import annotations

import argparse
import functools
import os
import pathlib
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import kafkacore
from kafkacore.broker.server_common import lifeline
from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
from kafkacore.errors import Errors, IllegalStateError
from kafkacore.network.sasl import PlainMechanism
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey

READY_PREFIX = "kafkacore-broker listening on "
CLUSTER_READY_PREFIX = "kafkacore-cluster bootstrap servers "
#: the first node id of a quorum's controllers (Kafka's KafkaClusterTestKit numbers them so)
QUORUM_CONTROLLER_BASE_ID = 3000
_ROOT = str(pathlib.Path(kafkacore.__file__).resolve().parent.parent)


class ClusterError(RuntimeError):
    """A process of the cluster did not start, stop or answer in time."""


class _Node:
    def __init__(self, node_id: int, role: str, directory: pathlib.Path) -> None:
        self.node_id = node_id
        self.role = role
        self.directory = directory
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.paused = False

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


class Cluster:
    """A quorum of controllers (or one, node 0) and brokers 1..N as separate processes.

    ``config``: broker settings for every broker, by Kafka's names.  The defaults suit tests:
    a short ``broker.session.timeout.ms`` (a dead broker is fenced within about 2 s) and
    heartbeats every 200 ms; ``default.replication.factor`` is min(3, brokers).

    ``advertised_listeners``: for some brokers, the address they give clients and peers instead
    of their own (Kafka's ``advertised.listeners``, e.g. ``{1: "PLAINTEXT://127.0.0.1:40001"}``),
    so that a TCP proxy in front of a broker is on the way of every connection to it.

    ``security_protocol``: the listener of the brokers and the controller (``SASL_PLAINTEXT``
    for authenticated brokers; their own credentials then come in ``config``, see
    docs/broker/security.rst), and
    ``sasl_plain``: the (user, password) the harness itself uses to ask for Metadata.

    ``controllers``: how many controllers; more than one makes them a Raft quorum (ids 3000 and
    on, see docs/broker/quorum.rst), of which the active one decides (``active_controller()``);
    the default is 3, as Kafka's production clusters run; 1 is the lone controller, node 0.
    """

    def __init__(self, brokers: int = 3, *, log_dir: str | os.PathLike[str] | None = None,
                 config: Mapping[str, Any] | None = None, start_timeout_s: float = 60.0,
                 log_level: str = "INFO",
                 advertised_listeners: Mapping[int, str] | None = None,
                 security_protocol: str = "PLAINTEXT",
                 sasl_plain: tuple[str, str] | None = None, controllers: int = 3) -> None:
        if brokers < 1:
            raise ValueError(f"a cluster needs at least one broker, got {brokers}")
        if isinstance(controllers, bool) or not isinstance(controllers, int) or controllers < 1:
            raise ValueError(f"a cluster needs at least one controller, got {controllers!r}")
        self.num_controllers = controllers
        advertised = dict(advertised_listeners or {})
        for node_id, listener in advertised.items():
            if not isinstance(node_id, int) or not 1 <= node_id <= brokers:
                raise ValueError(f"advertised_listeners: no broker {node_id!r} in this cluster "
                                 f"(1..{brokers})")
            if not isinstance(listener, str) or not listener.startswith("PLAINTEXT://"):
                raise ValueError(f"advertised_listeners[{node_id}] must be 'PLAINTEXT://host:port',"
                                 f" got {listener!r}")
        self.advertised_listeners: dict[int, str] = advertised
        if security_protocol not in ("PLAINTEXT", "SASL_PLAINTEXT"):
            raise ValueError(f"security_protocol: PLAINTEXT or SASL_PLAINTEXT, got "
                             f"{security_protocol!r}")
        self.security_protocol = security_protocol
        self._sasl = None if sasl_plain is None else functools.partial(
            PlainMechanism, *sasl_plain)
        self.num_brokers = brokers
        self.start_timeout_s = start_timeout_s
        self.log_level = log_level
        self._given_dir = log_dir is not None
        self.base = pathlib.Path(log_dir) if log_dir is not None else None
        self.config: dict[str, str] = {
            "broker.session.timeout.ms": "2000",
            "broker.heartbeat.interval.ms": "200",
            "default.replication.factor": str(min(3, brokers)),
            "num.partitions": "1",
            "replica.fetch.backoff.ms": "100",
            "num.network.threads": "2",
            "num.io.threads": "4",
        }
        self.config.update({k: str(v) for k, v in (config or {}).items()})
        #: the first controller (of a quorum, not necessarily the active one: see
        #: ``active_controller()``; with ``controllers=1``, node 0)
        self.controller: _Node | None = None
        self.controllers: dict[int, _Node] = {}
        self.brokers: dict[int, _Node] = {}
        # Lock order 1 (outermost; the harness's, not a broker's). Guards brokers and _closing.
        self._lock = threading.RLock()
        self._closing = False

    # -- starting and stopping -------------------------------------------------------------------

    def start(self) -> Cluster:
        self._closing = False
        if self.base is None:
            self.base = pathlib.Path(tempfile.mkdtemp(prefix="kafkacore-cluster-"))
            lifeline.own_directory(self.base)  # removed by the reaper if we are killed
        self.base.mkdir(parents=True, exist_ok=True)
        try:
            if self.num_controllers == 1:
                self.controllers = {0: _Node(0, "controller", self.base / "controller")}
            else:
                self.controllers = {}
                for i in range(self.num_controllers):
                    node_id = QUORUM_CONTROLLER_BASE_ID + i
                    node = _Node(node_id, "controller", self.base / f"controller-{node_id}")
                    # The voters are named with their addresses up front
                    # (controller.quorum.voters): choose the ports here.
                    with socket.create_server(("127.0.0.1", 0)) as probe:
                        node.port = probe.getsockname()[1]
                    self.controllers[node_id] = node
            self.controller = next(iter(self.controllers.values()))
            for node in self.controllers.values():
                self._spawn(node)
            for node in self.controllers.values():
                self._wait_ready(node)
            for i in range(1, self.num_brokers + 1):
                self.brokers[i] = _Node(i, "broker", self.base / f"broker-{i}")
                self._spawn(self.brokers[i])
            for node in self.brokers.values():
                self._wait_ready(node)
            # Ready is not enough for a client: a broker that has not pulled the others'
            # registrations yet lists only some brokers, and a client that took a node id from
            # one answer would not find it in the next (kafka-python's admin client).
            self.wait_for_brokers()
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        """Stop every process (SIGTERM, then SIGKILL after a bound) and remove a temporary
        directory."""
        self._closing = True  # a restart from another thread (a failover) spawns no more
        nodes = [*self.brokers.values(), *self.controllers.values()]
        for node in nodes:
            if node.running:
                if node.process is None:
                    raise IllegalStateError(f"{node.role} {node.node_id} has no process: it was never started")
                if node.paused:
                    node.process.send_signal(signal.SIGCONT)
                node.process.terminate()
        for node in nodes:
            self._reap(node, 15.0)
        if not self._given_dir and self.base is not None and self.base.exists():
            lifeline.remove_directory(self.base)

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _command(self, node: _Node) -> list[str]:
        if self.base is None:
            raise IllegalStateError("the cluster has not started")
        protocol = self.security_protocol
        cmd = [sys.executable, "-m", "kafkacore.broker", "--node-id", str(node.node_id),
               "--log-dirs", str(node.directory),
               "--listeners", f"{protocol}://127.0.0.1:{node.port}",
               "--log-level", self.log_level]
        config = dict(self.config)
        if node.role == "controller":
            cmd += ["--process-roles", "controller", "--control-socket",
                    str(self.control_socket(node.node_id))]
            config = {k: v for k, v in config.items()
                      if k in ("broker.session.timeout.ms", "default.replication.factor",
                               "num.partitions", "cluster.id", "sasl.enabled.mechanisms",
                               "sasl.users", "authorizer.class.name", "super.users",
                               "allow.everyone.if.no.acl.found",
                               "controller.quorum.election.timeout.ms",
                               "controller.quorum.fetch.timeout.ms",
                               "metadata.log.max.record.bytes.between.snapshots")}
            if self.num_controllers > 1:
                # The voters talk to each other as brokers talk to a controller: with the
                # brokers' credentials on the controller listener (docs/broker/security.rst).
                config.update({k: v for k, v in self.config.items()
                               if k in ("controller.listener.names",
                                        "sasl.mechanism.controller.protocol")
                               or k.startswith("listener.name.")})
                config["controller.quorum.voters"] = ",".join(
                    f"{c.node_id}@127.0.0.1:{c.port}" for c in self.controllers.values())
        else:
            if not self.controllers:
                raise IllegalStateError("the cluster has not started")
            cmd += ["--process-roles", "broker",
                    "--controller", ",".join(f"127.0.0.1:{c.port}"
                                             for c in self.controllers.values()),
                    "--control-socket", str(self.control_socket(node.node_id))]
            if node.node_id in self.advertised_listeners:
                config["advertised.listeners"] = self.advertised_listeners[node.node_id]
        for key, value in config.items():
            cmd += ["--config", f"{key}={value}"]
        return cmd

    def control_socket(self, broker: int) -> pathlib.Path:
        """The control socket of a broker, or of a controller (by its id)."""
        if self.base is None:
            raise IllegalStateError("the cluster has not started")
        if broker in self.controllers:
            return self.base / ("controller.ctl" if self.num_controllers == 1
                                else f"controller-{broker}.ctl")
        return self.base / f"broker-{broker}.ctl"

    def _advertises_elsewhere(self, node: _Node) -> bool:
        return node.role == "broker" and node.node_id in self.advertised_listeners

    def _spawn(self, node: _Node) -> None:
        if self._closing:
            raise ClusterError(f"the cluster is closing: {node.role} {node.node_id} not started")
        node.directory.mkdir(parents=True, exist_ok=True)
        if node.port == 0 and self._advertises_elsewhere(node):
            # Its ready line names the advertised address, not the one it listens on: choose
            # the port here (the OS gives a free one; it is bound again at once).
            with socket.create_server(("127.0.0.1", 0)) as probe:
                node.port = probe.getsockname()[1]
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [_ROOT, env.get("PYTHONPATH")]))
        if self.base is None:
            raise IllegalStateError("the cluster has not started")
        with open(self.base / f"{node.role}-{node.node_id}.log", "ab") as stderr:
            # It ends with this process, however it ends (kafkacore.broker.server_common.lifeline).
            node.process = lifeline.spawn(self._command(node), lifeline=True,
                                          stdout=subprocess.PIPE, stderr=stderr, cwd=self.base,
                                          env=env)
        node.paused = False

    def _wait_ready(self, node: _Node) -> None:
        if node.process is None or node.process.stdout is None:
            raise IllegalStateError(f"{node.role} {node.node_id} has no process: it was never started")
        deadline = time.monotonic() + self.start_timeout_s
        line = b""
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or node.process.poll() is not None:
                raise ClusterError(f"{node.role} {node.node_id} did not start (see "
                                   f"{self.base}/{node.role}-{node.node_id}.log)")
            ready, _, _ = select.select([node.process.stdout], [], [], min(left, 0.5))
            if ready:
                chunk = os.read(node.process.stdout.fileno(), 1)
                if not chunk:
                    continue
                line += chunk
        text = line.decode().strip()
        if not text.startswith(READY_PREFIX):
            raise ClusterError(f"{node.role} {node.node_id} printed {text!r}")
        if not self._advertises_elsewhere(node):
            node.port = int(text.rpartition(":")[2])

    def _reap(self, node: _Node, bound_s: float) -> None:
        if node.process is None:
            return
        try:
            node.process.wait(bound_s)
        except subprocess.TimeoutExpired:
            node.process.kill()
            node.process.wait(10.0)
        if node.process.stdout is not None:
            node.process.stdout.close()

    # -- addresses and leaders -------------------------------------------------------------------

    @property
    def pids(self) -> dict[int, int]:
        """The process id of every running node, by node id (the controller is node 0; a
        quorum's are 3000 and on)."""
        nodes = [*self.controllers.values(), *self.brokers.values()]
        return {n.node_id: n.process.pid for n in nodes if n.running and n.process is not None}

    @property
    def bootstrap_servers(self) -> str:
        """Every running broker's address, comma separated."""
        return ",".join(f"127.0.0.1:{n.port}" for n in self.brokers.values()
                        if n.running and not n.paused)

    def broker_address(self, broker: int) -> str:
        return f"127.0.0.1:{self._broker(broker).port}"

    def active_controller(self, timeout_s: float = 30.0) -> int:
        """The id of the active controller: the quorum's leader, once it acts (waits, bounded,
        while there is none, as during an election).  With one controller, that one."""
        if not self.controllers:
            raise IllegalStateError("the cluster has not started")
        if self.num_controllers == 1:
            return next(iter(self.controllers))
        deadline = time.monotonic() + timeout_s
        while True:
            for node in self.controllers.values():
                if not node.running or node.paused:
                    continue  # an isolated one refuses the connection
                client = InterBrokerClient("127.0.0.1", node.port, "cluster", 2.0,
                                           sasl=self._sasl)
                try:
                    body = codec.REQUESTS[ApiKey.DESCRIBE_QUORUM].body.defaults(2)
                    body["topics"] = [{"topic_name": "__cluster_metadata",
                                       "partitions": [{"partition_index": 0}]}]
                    answer = client.send(ApiKey.DESCRIBE_QUORUM, 2, body)
                except OSError:
                    continue
                finally:
                    client.close()
                parts = [p for t in answer["topics"] for p in t["partitions"]]
                # The quorum's leader acts as the controller once it has replayed the log to
                # its own epoch: until then it answers NOT_CONTROLLER (any voter answers
                # DescribeQuorum, a leader before it is active too).
                if answer["error_code"] == Errors.NONE and parts \
                        and parts[0]["leader_id"] == node.node_id \
                        and self.quorum_status(node.node_id)["active"]:
                    return node.node_id
            if time.monotonic() > deadline:
                raise ClusterError(f"no active controller after {timeout_s} s")
            time.sleep(0.05)

    def controller_address(self, controller: int | None = None) -> str:
        """The address of ``controller`` (an id), or of the active controller if None (waits,
        bounded, for one): where a test talks to "the controller" directly."""
        node_id = self.active_controller() if controller is None else controller
        if node_id not in self.controllers:
            raise ValueError(f"no controller {node_id} in this cluster {sorted(self.controllers)}")
        return f"127.0.0.1:{self.controllers[node_id].port}"

    def metadata(self, topics: Iterable[str] | None = None) -> dict[str, Any]:
        """The active controller's Metadata answer: every topic's partitions and the live
        brokers."""
        if not self.controllers:
            raise IllegalStateError("the cluster has not started")
        names = None if topics is None else list(topics)
        deadline = time.monotonic() + 30.0
        while True:
            port = self.controllers[self.active_controller()].port
            client = InterBrokerClient("127.0.0.1", port, "cluster", 10.0, sasl=self._sasl)
            try:
                body = codec.REQUESTS[ApiKey.METADATA].body.defaults(12)
                body.update(topics=None if names is None else [{"name": t} for t in names],
                            allow_auto_topic_creation=False)
                return client.send(ApiKey.METADATA, 12, body)
            except OSError:
                # A quorum's new leader closes the connection (NOT_CONTROLLER, for a request
                # whose answer has no error code) until it has replayed the log and acts; or
                # the one asked has just died.  Ask whoever leads again, within the bound.
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
            finally:
                client.close()

    def partition_state(self, topic: str, partition: int) -> dict[str, Any] | None:
        for t in self.metadata()["topics"]:
            if t["name"] == topic:
                for p in t["partitions"]:
                    if p["partition_index"] == partition:
                        return p
        return None

    def leader_of(self, topic: str, partition: int = 0, timeout_s: float = 30.0) -> int:
        """The broker leading ``topic``-``partition`` (waits, bounded, until there is one)."""
        deadline = time.monotonic() + timeout_s
        while True:
            state = self.partition_state(topic, partition)
            if state is not None and state["leader_id"] >= 0:
                return int(state["leader_id"])
            if time.monotonic() > deadline:
                raise ClusterError(f"{topic}-{partition} has no leader after {timeout_s} s")
            time.sleep(0.05)

    def wait_for_leader_change(self, topic: str, partition: int, old_leader: int,
                               timeout_s: float = 30.0) -> int:
        """Wait (bounded) until the controller elected a leader other than ``old_leader``."""
        deadline = time.monotonic() + timeout_s
        while True:
            state = self.partition_state(topic, partition)
            if state is not None and state["leader_id"] not in (-1, old_leader):
                return int(state["leader_id"])
            if time.monotonic() > deadline:
                raise ClusterError(f"{topic}-{partition} still led by {old_leader} (or by "
                                   f"nobody) after {timeout_s} s: {state}")
            time.sleep(0.05)

    def wait_for_topic(self, topic: str, timeout_s: float = 30.0) -> None:
        """Wait (bounded) until every running broker knows ``topic`` and a leader for each of
        its partitions (brokers pull the controller's image every heartbeat interval)."""
        self._wait_for_every_broker(
            topic, lambda t: all(p["leader_id"] >= 0 for p in t["partitions"]),
            f"does not know {topic}", timeout_s)

    def wait_for_leader_known(self, topic: str, partition: int, leader: int,
                              timeout_s: float = 30.0) -> None:
        """Wait (bounded) until every running broker names ``leader`` for the partition.

        The controller elects at once, but each broker learns of it only at its next pull of the
        controller's image; until then it still sends clients (Metadata, FindCoordinator) to the
        old leader.  Clients retry that, but one that fails at once on a refused connection
        (kafka-python 3.0.12's consumer raises it from ``poll()``) needs the news everywhere."""
        self._wait_for_every_broker(
            topic, lambda t: any(p["partition_index"] == partition and p["leader_id"] == leader
                                 for p in t["partitions"]),
            f"does not name broker {leader} as leader of {topic}-{partition}", timeout_s)

    def wait_for_brokers(self, timeout_s: float = 60.0) -> None:
        """Wait (bounded) until every running broker lists the running brokers, and no other, in
        its Metadata (a restarted broker is registered and unfenced again, a stopped one fenced,
        and the others have pulled that): what a client bootstrapping now is told."""
        want = {i for i, n in self.brokers.items() if n.running and not n.paused}
        self._wait_for_every_metadata(
            [], lambda answer: want == {b["node_id"] for b in answer["brokers"]},
            f"does not list exactly the brokers {sorted(want)}", timeout_s)

    def _wait_for_every_broker(self, topic: str, known: Callable[[dict[str, Any]], bool],
                               failure: str, timeout_s: float) -> None:
        """Ask each running broker for ``topic``'s Metadata until ``known(topic)`` holds."""

        def done(answer: dict[str, Any]) -> bool:
            t = answer["topics"][0]
            return bool(t["error_code"] == Errors.NONE and t["partitions"] and known(t))

        self._wait_for_every_metadata(
            [{"name": topic, "topic_id": uuid.UUID(int=0)}], done, failure, timeout_s)

    def _wait_for_every_metadata(self, topics: list[dict[str, Any]],
                                 done: Callable[[dict[str, Any]], bool], failure: str,
                                 timeout_s: float) -> None:
        """Ask each running broker for the Metadata of ``topics`` until ``done(answer)`` holds
        (or raise ClusterError with ``failure`` after ``timeout_s`` in all)."""
        deadline = time.monotonic() + timeout_s
        for node in list(self.brokers.values()):
            if not node.running or node.paused:
                continue
            client = InterBrokerClient("127.0.0.1", node.port, "cluster", 10.0, sasl=self._sasl)
            try:
                while True:
                    body = codec.REQUESTS[ApiKey.METADATA].body.defaults(12)
                    body.update(topics=topics, allow_auto_topic_creation=False)
                    if done(client.send(ApiKey.METADATA, 12, body)):
                        break
                    if time.monotonic() > deadline:
                        raise ClusterError(f"broker {node.node_id} {failure} after {timeout_s} s")
                    time.sleep(0.05)
            finally:
                client.close()

    def wait_for_isr(self, topic: str, partition: int, isr: Iterable[int],
                     timeout_s: float = 60.0) -> None:
        want = sorted(isr)
        deadline = time.monotonic() + timeout_s
        while True:
            state = self.partition_state(topic, partition)
            if state is not None and sorted(state["isr_nodes"]) == want:
                return
            if time.monotonic() > deadline:
                raise ClusterError(f"{topic}-{partition}: ISR is not {want} after {timeout_s}"
                                   f" s: {state}")
            time.sleep(0.05)

    # -- faults ----------------------------------------------------------------------------------

    def _broker(self, broker: int) -> _Node:
        node = self.brokers.get(broker)
        if node is None:
            raise ValueError(f"no broker {broker} in this cluster (1..{self.num_brokers})")
        return node

    def _node(self, node_id: int) -> _Node:
        """A broker, or a controller by its id."""
        node = self.controllers.get(node_id)
        return node if node is not None else self._broker(node_id)

    def kill(self, broker: int) -> None:
        """SIGKILL: the broker dies with no goodbye; its controller session lapses.  A
        controller's id kills that controller (its quorum elects another leader)."""
        node = self._node(broker)
        if node.running:
            if node.process is None:
                raise IllegalStateError(f"{node.role} {node.node_id} has no process: it was never started")
            node.process.kill()
        self._reap(node, 10.0)

    def stop(self, broker: int, timeout_s: float = 30.0) -> None:
        """SIGTERM: a clean shutdown.  The broker asks the controller for a controlled shutdown
        first (its leaderships move to other in-sync replicas at once), then flushes and closes
        its logs."""
        node = self._node(broker)
        if node.running:
            if node.process is None:
                raise IllegalStateError(f"{node.role} {node.node_id} has no process: it was never started")
            if node.paused:
                node.process.send_signal(signal.SIGCONT)
                node.paused = False
            node.process.terminate()
        self._reap(node, timeout_s)

    def restart(self, broker: int) -> None:
        """Start the broker again on the same port with the same ``log.dirs`` (stopping it
        cleanly first if it runs)."""
        node = self._node(broker)
        if node.running:
            self.stop(broker)
        self._spawn(node)
        self._wait_ready(node)

    def pause(self, broker: int) -> None:
        """SIGSTOP: the process is frozen (no heartbeats, no fetches) but its sockets stay open."""
        node = self._node(broker)
        if node.process is None:
            raise IllegalStateError(f"{node.role} {node.node_id} has no process: it was never started")
        node.process.send_signal(signal.SIGSTOP)
        node.paused = True

    def resume(self, broker: int) -> None:
        node = self._node(broker)
        if node.process is None:
            raise IllegalStateError(f"{node.role} {node.node_id} has no process: it was never started")
        node.process.send_signal(signal.SIGCONT)
        node.paused = False

    def _control(self, broker: int) -> Any:
        from kafkacore.broker.network.faults import BrokerControl

        self._node(broker)
        return BrokerControl(self.control_socket(broker))

    def isolate(self, broker: int) -> None:
        """Cut the broker from clients, peers and the controller without killing it."""
        self._control(broker).isolate()

    def heal(self, broker: int) -> None:
        self._control(broker).heal()

    def quorum_status(self, controller: int) -> dict[str, Any]:
        """What a controller's voter knows, asked of its control socket (it answers while
        isolated): ``{"node_id", "epoch", "leader_id", "is_leader", "active", "end_offset",
        "high_watermark", "state"}`` (``state``: its Raft state, ``"Follower"``,
        ``"Prospective"``...), the counters of ``KafkaRaftManager.statistics`` (the log start
        offset, snapshots installed from the leader, ...) and the controller's snapshots loaded
        and written."""
        if controller not in self.controllers:
            raise ValueError(f"no controller {controller} in this cluster "
                             f"{sorted(self.controllers)}")
        return dict(self._control(controller)._call(  # noqa: SLF001
            {"op": "quorum_status"})["status"])

    def metadata_image(self, controller: int) -> dict[str, Any]:
        """A controller's image, asked of its control socket: ``{"applied": the quorum offset
        it stands at, "records": the records that rebuild it}`` (what a snapshot holds)."""
        if controller not in self.controllers:
            raise ValueError(f"no controller {controller} in this cluster "
                             f"{sorted(self.controllers)}")
        return dict(self._control(controller)._call(  # noqa: SLF001
            {"op": "metadata_image"})["image"])

    def set_latency(self, broker: int, ms: int) -> None:
        self._control(broker).set_latency(ms)

    def reset_faults(self) -> None:
        """Switch every fault off on every running broker (no queued errors, no latency, not
        isolated): what a test that shares the cluster calls after it."""
        nodes = {**self.brokers, **(self.controllers if self.num_controllers > 1 else {})}
        for node_id, node in nodes.items():
            if node.running:
                if node.paused:
                    self.resume(node_id)
                self._control(node_id).reset()

    def fault_status(self, broker: int) -> dict[str, Any]:
        """The broker's faults: ``{"isolated", "latency_ms", "pending", "injected"}``, where
        ``injected`` counts the responses that carried an injected error, by API name."""
        return dict(self._control(broker).status())

    def statistics(self, broker: int) -> dict[str, Any]:
        """The broker's counters since it started: ``network`` (requests by API key, bytes
        read and written) and ``fetch_sessions`` (fetches by kind, the sessions cached)."""
        return dict(self._control(broker).statistics())

    def fail_next(self, broker: int, api: int | str, errors: Sequence[int | str],
                  after_append: bool = False) -> None:
        """Answer the broker's next requests of ``api`` with ``errors``, one each."""
        self._control(broker).fail_next(api, errors, after_append=after_append)

    def move_leader(self, topic: str, partition: int, broker: int,
                    timeout_s: float = 30.0) -> None:
        """Make ``broker`` (a live in-sync replica) the partition's leader, with a new leader
        epoch, and wait (bounded) until the controller records it.  Raises
        ``kafkacore.broker.network.faults.InvalidFaultError`` if ``broker`` is not eligible."""
        from kafkacore.broker.network.faults import BrokerControl

        self._broker(broker)
        if self.base is None:
            raise IllegalStateError("the cluster has not started")
        BrokerControl(self.control_socket(self.active_controller()))._call(  # noqa: SLF001
            {"op": "elect_leader", "topic": topic, "partition": partition, "broker": broker})
        deadline = time.monotonic() + timeout_s
        while self.leader_of(topic, partition, timeout_s) != broker:
            if time.monotonic() > deadline:
                raise ClusterError(f"{topic}-{partition}: leader is not {broker} after "
                                   f"{timeout_s} s")
            time.sleep(0.05)


def main(argv: Sequence[str] | None = None) -> int:
    """``kafkacore-broker cluster --brokers 3``: run a cluster until SIGTERM or SIGINT."""
    parser = argparse.ArgumentParser(prog="kafkacore-broker cluster",
                                     description="a quorum of controllers and N brokers, one "
                                                 "process each")
    parser.add_argument("--brokers", type=int, default=3,
                        help="how many brokers, besides the controllers (default 3)")
    parser.add_argument("--controllers", type=int, default=3,
                        help="how many controllers: a Raft quorum if more than one (default 3)")
    parser.add_argument("--log-dirs", help="base directory (default: a temporary one)")
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                        help="a setting of every broker, by Kafka's name (repeatable)")
    args = parser.parse_args(argv)
    config = {}
    for item in args.config:
        key, sep, value = item.partition("=")
        if not sep:
            parser.error(f"--config expects key=value, got {item!r}")
        config[key.strip()] = value
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    with Cluster(args.brokers, log_dir=args.log_dirs, config=config,
                 controllers=args.controllers) as cluster:
        print(f"{CLUSTER_READY_PREFIX}{cluster.bootstrap_servers}", flush=True)
        while not stop.wait(1.0):
            pass
    return 0

