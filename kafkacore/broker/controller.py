"""The controller: one process that decides who leads what (Kafka's KRaft ``QuorumController``).

- :class:`BrokerHeartbeatManager`: every broker registers (BrokerRegistration, which gives it a
  broker epoch) and then heartbeats (BrokerHeartbeat).  A broker silent for
  ``broker.session.timeout.ms`` is **fenced**: it leaves every ISR, and every partition it led
  gets a new leader.
- :class:`ReplicationControlManager`: topics and their partitions (replicas, ISR, leader, leader
  epoch, partition epoch).  It assigns replicas at creation (round robin from a random broker,
  like Kafka's rack-unaware assignment), elects leaders from the ISR, and applies the leaders'
  AlterPartition requests (ISR shrink and expansion).
- :class:`QuorumController`: both, under one lock, saved to ``controller-state.json`` after every
  change (a quorum of one; Kafka writes a replicated metadata log instead).

How decisions reach the brokers: each broker **pulls** the whole image (a Metadata request to the
controller, answered with every topic, partition state and live broker) after each heartbeat, as
KRaft brokers fetch the metadata log from the controller quorum.  A pull needs no list of
brokers on the controller and no retry when a broker is away: a broker that comes back just
pulls again.  See docs/broker/replication.rst.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kafkacore.broker.apis import KafkaApis, _fit
from kafkacore.broker.config import BrokerConfig
from kafkacore.broker.faults import ControlServer, FaultInjector
from kafkacore.broker.files import replace_atomically
from kafkacore.broker.handler import KafkaRequestHandlerPool
from kafkacore.broker.metadata_cache import validate_topic_name
from kafkacore.broker.network import SocketServer
from kafkacore.broker.request_channel import Request, RequestChannel
from kafkacore.errors import InvalidTopicError, InvalidUpdateVersionError
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey

log = logging.getLogger(__name__)

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
NOT_LEADER_OR_FOLLOWER = 6
INVALID_TOPIC_EXCEPTION = 17
TOPIC_ALREADY_EXISTS = 36
INVALID_PARTITIONS = 37
INVALID_REPLICATION_FACTOR = 38
INVALID_REQUEST = 42
FENCED_LEADER_EPOCH = 74
STALE_BROKER_EPOCH = 77
BROKER_ID_NOT_REGISTERED = 102
INELIGIBLE_REPLICA = 107
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
STATE_FILE = "controller-state.json"


def _now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


@dataclass
class BrokerRegistration:
    broker_id: int
    host: str
    port: int
    epoch: int
    incarnation_id: str


@dataclass
class PartitionRegistration:
    """A partition as the controller records it (KRaft's ``PartitionRegistration``)."""

    replicas: list[int]
    isr: list[int]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0


@dataclass
class TopicControlInfo:
    name: str
    topic_id: str
    configs: dict[str, str]
    partitions: list[PartitionRegistration] = field(default_factory=list)


class BrokerHeartbeatManager:
    """Last contact per broker; who is fenced (Kafka's ``BrokerHeartbeatManager``)."""

    def __init__(self, session_timeout_ms: int) -> None:
        self.session_timeout_ms = session_timeout_ms
        self.last_contact_ms: dict[int, int] = {}
        self.fenced: set[int] = set()

    def touch(self, broker_id: int) -> None:
        self.last_contact_ms[broker_id] = _now_ms()

    def expired(self) -> list[int]:
        """Unfenced brokers whose session has lapsed."""
        now = _now_ms()
        return [b for b, t in self.last_contact_ms.items()
                if b not in self.fenced and now - t > self.session_timeout_ms]

    def is_active(self, broker_id: int) -> bool:
        return broker_id in self.last_contact_ms and broker_id not in self.fenced


class ReplicationControlManager:
    """Topics, partitions, and the elections (Kafka's ``ReplicationControlManager``)."""

    def __init__(self) -> None:
        self.topics: dict[str, TopicControlInfo] = {}

    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     configs: dict[str, str], live: list[int]) -> TopicControlInfo:
        # Kafka's rack-unaware assignment: replicas of partition p start at a random broker
        # shifted by p, so that leaders spread over the brokers.
        start = random.randrange(len(live))
        info = TopicControlInfo(name, str(uuid.uuid4()), configs)
        for p in range(partitions):
            replicas = [live[(start + p + i) % len(live)] for i in range(replication_factor)]
            info.partitions.append(PartitionRegistration(replicas, list(replicas), replicas[0]))
        self.topics[name] = info
        return info

    def elect(self, part: PartitionRegistration, active: set[int],
              preferred: int | None = None) -> None:
        """A new leader from the ISR (clean election only), and a new leader epoch."""
        candidates = [r for r in part.replicas if r in part.isr and r in active]
        if preferred is not None and preferred in candidates:
            leader = preferred
        else:
            leader = candidates[0] if candidates else -1
        part.leader = leader
        part.leader_epoch += 1
        part.partition_epoch += 1

    def handle_broker_fenced(self, broker_id: int, active: set[int]) -> list[str]:
        """Remove ``broker_id`` from every ISR (unless it is the last member: the data is
        there only) and re-elect where it led.  Returns what changed, for the log."""
        changes = []
        for t in self.topics.values():
            for i, part in enumerate(t.partitions):
                if broker_id not in part.replicas:
                    continue
                touched = False
                if broker_id in part.isr and len(part.isr) > 1:
                    part.isr = [r for r in part.isr if r != broker_id]
                    touched = True
                if part.leader == broker_id or touched:
                    # Kafka 4 keeps the leader epoch when only the ISR shrinks; we bump it, so a
                    # broker that pulls the image knows the controller changed the ISR (docs).
                    if part.leader == broker_id:
                        self.elect(part, active)
                    else:
                        part.leader_epoch += 1
                        part.partition_epoch += 1
                    changes.append(f"{t.name}-{i}: leader {part.leader} epoch "
                                   f"{part.leader_epoch} isr {part.isr}")
        return changes

    def handle_broker_unfenced(self, broker_id: int, active: set[int]) -> list[str]:
        """Partitions left without a leader get one if this broker is in their ISR."""
        changes = []
        for t in self.topics.values():
            for i, part in enumerate(t.partitions):
                if part.leader == -1 and broker_id in part.isr:
                    self.elect(part, active)
                    changes.append(f"{t.name}-{i}: leader {part.leader} epoch "
                                   f"{part.leader_epoch}")
        return changes


class QuorumController:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.node_id = config["node.id"]
        self.lock = threading.RLock()
        self.brokers: dict[int, BrokerRegistration] = {}
        self.heartbeats = BrokerHeartbeatManager(config["broker.session.timeout.ms"])
        self.replication = ReplicationControlManager()
        self._next_broker_epoch = 1
        self.path = Path(config.log_dirs[0]) / STATE_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._load()
        self._stop = threading.Event()
        self._fencer = threading.Thread(target=self._fence_lapsed, daemon=True,
                                        name=f"controller-{self.node_id}-fencer")

    # -- state on disk ---------------------------------------------------------------------------

    def _load(self) -> None:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return
        self._next_broker_epoch = data["next_broker_epoch"]
        for t in data["topics"]:
            info = TopicControlInfo(t["name"], t["topic_id"], t["configs"],
                                    [PartitionRegistration(**p) for p in t["partitions"]])
            self.replication.topics[info.name] = info
        # Brokers must register again after a controller restart; until they do, they are fenced.

    def _save(self) -> None:
        data = {"next_broker_epoch": self._next_broker_epoch,
                "topics": [asdict(t) for t in self.replication.topics.values()]}
        replace_atomically(self.path, json.dumps(data).encode())

    def start(self) -> None:
        self._fencer.start()

    def shutdown(self) -> None:
        self._stop.set()
        self._fencer.join(5.0)

    # -- brokers -----------------------------------------------------------------------------------

    def active_brokers(self) -> set[int]:
        return {b for b in self.brokers if self.heartbeats.is_active(b)}

    def register_broker(self, broker_id: int, host: str, port: int, incarnation: str) -> int:
        with self.lock:
            old = self.brokers.get(broker_id)
            if old is not None and old.incarnation_id != incarnation:
                # A new incarnation (a restart): whatever the old one led must be re-elected
                # before the new one, which starts with no role, takes part again.
                self._fence(broker_id, "re-registered with a new incarnation")
            epoch = self._next_broker_epoch
            self._next_broker_epoch += 1
            self.brokers[broker_id] = BrokerRegistration(broker_id, host, port, epoch,
                                                         incarnation)
            self.heartbeats.touch(broker_id)
            self.heartbeats.fenced.discard(broker_id)
            changes = self.replication.handle_broker_unfenced(broker_id, self.active_brokers())
            self._save()
            log.info("controller: broker %d registered at %s:%d, epoch %d%s", broker_id, host,
                     port, epoch, "; " + "; ".join(changes) if changes else "")
            return epoch

    def heartbeat(self, broker_id: int, broker_epoch: int,
                  want_shut_down: bool = False) -> tuple[int, bool]:
        """(error, is_fenced).  ``want_shut_down``: a controlled shutdown; the broker is fenced
        at once, so its partitions get new leaders before it goes."""
        with self.lock:
            reg = self.brokers.get(broker_id)
            if reg is None:
                return BROKER_ID_NOT_REGISTERED, True
            if reg.epoch != broker_epoch:
                return STALE_BROKER_EPOCH, True
            if want_shut_down:
                if broker_id not in self.heartbeats.fenced:
                    self._fence(broker_id, "controlled shutdown")
                return NONE, True
            self.heartbeats.touch(broker_id)
            if broker_id in self.heartbeats.fenced:
                self.heartbeats.fenced.discard(broker_id)
                changes = self.replication.handle_broker_unfenced(broker_id,
                                                                  self.active_brokers())
                self._save()
                log.info("controller: broker %d unfenced%s", broker_id,
                         "; " + "; ".join(changes) if changes else "")
            return NONE, False

    def _fence(self, broker_id: int, why: str) -> None:
        self.heartbeats.fenced.add(broker_id)
        changes = self.replication.handle_broker_fenced(broker_id, self.active_brokers())
        self._save()
        log.info("controller: broker %d fenced (%s)%s", broker_id, why,
                 "; " + "; ".join(changes) if changes else "")

    def _fence_lapsed(self) -> None:
        period = min(self.heartbeats.session_timeout_ms / 4000.0, 0.25)
        while not self._stop.wait(period):
            with self.lock:
                for broker_id in self.heartbeats.expired():
                    self._fence(broker_id, "its session expired")

    # -- topics ------------------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     configs: dict[str, str]) -> tuple[int, str | None, TopicControlInfo | None]:
        with self.lock:
            try:
                validate_topic_name(name)
            except InvalidTopicError as exc:
                return INVALID_TOPIC_EXCEPTION, str(exc), None
            if name in self.replication.topics:
                return TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists", None
            if partitions <= 0:
                return INVALID_PARTITIONS, f"number of partitions must be positive, got " \
                                           f"{partitions}", None
            live = sorted(self.active_brokers())
            if replication_factor <= 0 or replication_factor > len(live):
                return (INVALID_REPLICATION_FACTOR, f"replication factor {replication_factor} "
                        f"with {len(live)} live brokers", None)
            info = self.replication.create_topic(name, partitions, replication_factor,
                                                 configs, live)
            self._save()
            log.info("controller: created %s: %s", name,
                     [(p.leader, p.replicas) for p in info.partitions])
            return NONE, None, info

    def delete_topic(self, name: str) -> int:
        with self.lock:
            if self.replication.topics.pop(name, None) is None:
                return UNKNOWN_TOPIC_OR_PARTITION
            self._save()
            return NONE

    def alter_partition(self, broker_id: int, topic_id: uuid.UUID, index: int, leader_epoch: int,
                        new_isr: list[int], partition_epoch: int,
                        ) -> tuple[int, PartitionRegistration | None]:
        """Kafka's ``ReplicationControlManager.alterPartition``: a leader's ISR change, accepted
        only from the current leader at the current leader epoch, and only over the partition
        state it was decided on: a ``partition_epoch`` behind ours (the ISR or the replicas
        changed since, by an election or another AlterPartition) is refused with
        ``INVALID_UPDATE_VERSION``, and the leader waits for the new state."""
        with self.lock:
            info = next((t for t in self.replication.topics.values()
                         if t.topic_id == str(topic_id)), None)
            if info is None or not 0 <= index < len(info.partitions):
                return UNKNOWN_TOPIC_OR_PARTITION, None
            part = info.partitions[index]
            if part.leader != broker_id:
                return NOT_LEADER_OR_FOLLOWER, part
            if leader_epoch != part.leader_epoch:
                return FENCED_LEADER_EPOCH, part
            if partition_epoch != part.partition_epoch:
                return InvalidUpdateVersionError.errno, part
            active = self.active_brokers()
            if any(r not in part.replicas or (r not in active and r not in part.isr)
                   for r in new_isr) or broker_id not in new_isr:
                return INELIGIBLE_REPLICA, part
            part.isr = [r for r in part.replicas if r in new_isr]
            part.partition_epoch += 1
            self._save()
            log.info("controller: %s-%d ISR now %s (asked by leader %d)", info.name, index,
                     part.isr, broker_id)
            return NONE, part

    def elect_leader(self, name: str, index: int, preferred: int) -> int:
        """Move leadership of a partition to ``preferred`` (an ISR member that is alive)."""
        with self.lock:
            info = self.replication.topics.get(name)
            if info is None or not 0 <= index < len(info.partitions):
                return UNKNOWN_TOPIC_OR_PARTITION
            part = info.partitions[index]
            if preferred not in part.isr or preferred not in self.active_brokers():
                return INELIGIBLE_REPLICA
            if part.leader != preferred:
                self.replication.elect(part, self.active_brokers(), preferred)
                self._save()
                log.info("controller: %s-%d moved to leader %d, epoch %d", name, index,
                         part.leader, part.leader_epoch)
            return NONE


class ControllerApis(KafkaApis):
    """The APIs the controller answers (Kafka's ``ControllerApis``)."""

    def __init__(self, server: ControllerServer) -> None:  # noqa: D107 - no KafkaApis state
        self.broker = server  # type: ignore[assignment]
        self.request_channel = server.request_channel
        self.controller = server.controller
        self.handlers = {
            ApiKey.API_VERSIONS: self.handle_api_versions_request,
            ApiKey.METADATA: self.handle_metadata_request,
            ApiKey.CREATE_TOPICS: self.handle_create_topics_request,
            ApiKey.DELETE_TOPICS: self.handle_delete_topics_request,
            ApiKey.DESCRIBE_CONFIGS: self.handle_describe_configs_request,
            ApiKey.BROKER_REGISTRATION: self.handle_broker_registration_request,
            ApiKey.BROKER_HEARTBEAT: self.handle_broker_heartbeat_request,
            ApiKey.ALTER_PARTITION: self.handle_alter_partition_request,
        }

    def handle(self, request: Request) -> None:
        handler = self.handlers.get(request.api_key)
        if handler is None and request.api_key != ApiKey.API_VERSIONS:
            self.request_channel.close_connection(
                request, f"API key {request.api_key} is not a controller API")
            return
        if request.body is None or (handler is None):
            super().handle(request)
            return
        low, high = self.supported_versions(request.api_key)
        if not low <= request.api_version <= high:
            self.send_error_response(request, 35)
            return
        handler(request)

    def respond(self, request: Request, body: dict[str, Any]) -> None:
        message = codec.RESPONSES[request.api_key]
        self.request_channel.send_response(request, _fit(message.body, request.api_version, body))

    def handle_metadata_request(self, request: Request) -> None:
        """The whole image: every topic's partitions and every active broker."""
        c = self.controller
        with c.lock:
            active = c.active_brokers()
            brokers = [{"node_id": b.broker_id, "host": b.host, "port": b.port, "rack": None}
                       for b in sorted(c.brokers.values(), key=lambda b: b.broker_id)
                       if b.broker_id in active]
            topics = [{
                "error_code": NONE, "name": t.name, "topic_id": uuid.UUID(t.topic_id),
                "is_internal": False, "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
                "partitions": [{
                    "error_code": NONE, "partition_index": i, "leader_id": p.leader,
                    "leader_epoch": p.leader_epoch, "replica_nodes": list(p.replicas),
                    "isr_nodes": list(p.isr),
                    "offline_replicas": [r for r in p.replicas if r not in active]}
                    for i, p in enumerate(t.partitions)],
            } for t in c.replication.topics.values()]
        self.respond(request, {"throttle_time_ms": 0, "brokers": brokers,
                               "cluster_id": self.broker.config["cluster.id"],
                               "controller_id": c.node_id, "topics": topics,
                               "cluster_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED})

    def handle_create_topics_request(self, request: Request) -> None:
        assert request.body is not None
        body = request.body
        default_rf = self.broker.config["default.replication.factor"]
        default_partitions = self.broker.config["num.partitions"]
        results = []
        for t in body["topics"]:
            result: dict[str, Any] = {
                "name": t["name"], "topic_id": uuid.UUID(int=0), "error_code": NONE,
                "error_message": None, "num_partitions": -1, "replication_factor": -1,
                "configs": None}
            configs = {c["name"]: c["value"] for c in t["configs"] if c["value"] is not None}
            if t["assignments"]:
                result.update(error_code=INVALID_REQUEST,
                              error_message="manual replica assignments are not supported")
                results.append(result)
                continue
            partitions = t["num_partitions"] if t["num_partitions"] != -1 else default_partitions
            rf = t["replication_factor"] if t["replication_factor"] != -1 else default_rf
            if body.get("validate_only", False):
                result.update(num_partitions=partitions, replication_factor=rf)
                results.append(result)
                continue
            error, message, info = self.controller.create_topic(t["name"], partitions, rf,
                                                                configs)
            result.update(error_code=error, error_message=message)
            if info is not None:
                result.update(topic_id=uuid.UUID(info.topic_id), num_partitions=partitions,
                              replication_factor=rf)
            results.append(result)
        self.respond(request, {"throttle_time_ms": 0, "topics": results})

    def handle_delete_topics_request(self, request: Request) -> None:
        assert request.body is not None
        results = [{"name": name, "error_code": self.controller.delete_topic(name)}
                   for name in request.body["topic_names"]]
        self.respond(request, {"throttle_time_ms": 0, "responses": results})

    def handle_describe_configs_request(self, request: Request) -> None:
        """A topic's own configs (DYNAMIC_TOPIC_CONFIG): what brokers need to open its logs."""
        assert request.body is not None
        results = []
        for res in request.body["resources"]:
            info = self.controller.replication.topics.get(res["resource_name"])
            result: dict[str, Any] = {"error_code": NONE, "error_message": None,
                                      "resource_type": res["resource_type"],
                                      "resource_name": res["resource_name"], "configs": []}
            if info is None:
                result["error_code"] = UNKNOWN_TOPIC_OR_PARTITION
            else:
                result["configs"] = [
                    {"name": k, "value": v, "read_only": False, "is_default": False,
                     "config_source": 1, "is_sensitive": False, "synonyms": []}
                    for k, v in info.configs.items()]
            results.append(result)
        self.respond(request, {"throttle_time_ms": 0, "results": results})

    def handle_broker_registration_request(self, request: Request) -> None:
        assert request.body is not None
        body = request.body
        listener = body["listeners"][0] if body["listeners"] else None
        if listener is None:
            self.respond(request, {"throttle_time_ms": 0, "error_code": INVALID_REQUEST,
                                   "broker_epoch": -1})
            return
        epoch = self.controller.register_broker(body["broker_id"], listener["host"],
                                                listener["port"], str(body["incarnation_id"]))
        self.respond(request, {"throttle_time_ms": 0, "error_code": NONE, "broker_epoch": epoch})

    def handle_broker_heartbeat_request(self, request: Request) -> None:
        assert request.body is not None
        body = request.body
        error, fenced = self.controller.heartbeat(body["broker_id"], body["broker_epoch"],
                                                  body["want_shut_down"])
        self.respond(request, {"throttle_time_ms": 0, "error_code": error, "is_caught_up": True,
                               "is_fenced": fenced,
                               "should_shut_down": body["want_shut_down"] and error == NONE})

    def handle_alter_partition_request(self, request: Request) -> None:
        assert request.body is not None
        body = request.body
        topics = []
        for t in body["topics"]:
            parts = []
            for p in t["partitions"]:
                new_isr = ([b["broker_id"] for b in p["new_isr_with_epochs"]]
                           if "new_isr_with_epochs" in p else p["new_isr"])
                error, part = self.controller.alter_partition(
                    body["broker_id"], t["topic_id"], p["partition_index"], p["leader_epoch"],
                    new_isr, p["partition_epoch"])
                parts.append({"partition_index": p["partition_index"], "error_code": error,
                              "leader_id": part.leader if part else -1,
                              "leader_epoch": part.leader_epoch if part else -1,
                              "isr": list(part.isr) if part else [],
                              "leader_recovery_state": 0,
                              "partition_epoch": part.partition_epoch if part else -1})
            topics.append({"topic_id": t["topic_id"], "partitions": parts})
        self.respond(request, {"throttle_time_ms": 0, "error_code": NONE, "topics": topics})


class ControllerServer:
    """The controller process's server: the same request reactor as a broker, with
    :class:`ControllerApis` behind it (Kafka's ``ControllerServer``)."""

    def __init__(self, config: BrokerConfig | dict[str, Any] | None = None) -> None:
        self.config = config if isinstance(config, BrokerConfig) else BrokerConfig(config)
        self.broker_id = self.config["node.id"]
        self.cluster_id = self.config["cluster.id"]
        self.request_channel = RequestChannel(self.config["queued.max.requests"])
        self.faults = FaultInjector()
        self.controller = QuorumController(self.config)
        self.socket_server: SocketServer | None = None
        self._handlers: KafkaRequestHandlerPool | None = None

    @property
    def bootstrap_servers(self) -> str:
        assert self.socket_server is not None
        port = self.config.advertised_port or self.socket_server.bound_port
        return f"{self.config.advertised_host}:{port}"

    def start(self) -> ControllerServer:
        self.socket_server = SocketServer(self.config, self.request_channel, self.faults)
        self._handlers = KafkaRequestHandlerPool(self.request_channel, ControllerApis(self),
                                                 self.config["num.io.threads"])
        self._handlers.start()
        self.socket_server.startup()
        self.controller.start()
        log.info("controller %d listening on %s", self.broker_id, self.bootstrap_servers)
        return self

    def stop(self) -> None:
        assert self.socket_server is not None and self._handlers is not None
        self.socket_server.shutdown()
        self._handlers.shutdown()
        self.controller.shutdown()

    def __enter__(self) -> ControllerServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ControllerControlServer(ControlServer):
    """The controller's control socket (``--control-socket`` of a controller process): the
    faults of :class:`ControlServer`, plus ``{"op": "elect_leader", "topic": t, "partition": p,
    "broker": b}``, which moves a partition's leadership (librdkafka's mock cluster
    ``partition_set_leader``; :meth:`kafkacore.broker.Cluster.move_leader`)."""

    def __init__(self, server: ControllerServer, path: str) -> None:
        super().__init__(server.faults, path)
        self.controller = server.controller

    def handle(self, line: bytes) -> dict[str, Any]:
        try:
            request = json.loads(line)
            if isinstance(request, dict) and request.get("op") == "elect_leader":
                error = self.controller.elect_leader(str(request["topic"]),
                                                     int(request["partition"]),
                                                     int(request["broker"]))
                if error != NONE:
                    return {"ok": False, "error": "ValueError",
                            "message": f"cannot move the leader: error {error}"}
                return {"ok": True}
        except (ValueError, TypeError, KeyError) as exc:
            return {"ok": False, "error": type(exc).__name__, "message": str(exc)}
        return super().handle(line)
