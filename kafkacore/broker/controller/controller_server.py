"""``ControllerServer``: the controller process (and its control socket)."""

from __future__ import annotations

import json
import logging
from typing import Any

from kafkacore.broker.config.kafka_config import BrokerConfig
from kafkacore.broker.controller.controller_apis import ControllerApis
from kafkacore.broker.controller.kafka_raft_manager import KafkaRaftManager, parse_voters
from kafkacore.broker.controller.quorum_controller import QuorumController
from kafkacore.broker.network.faults import ControlServer, FaultInjector
from kafkacore.broker.network.kafka_request_handler import KafkaRequestHandlerPool
from kafkacore.broker.network.request_channel import Request, RequestChannel
from kafkacore.broker.network.socket_server import SocketServer
from kafkacore.broker.security.authentication import controller_sasl
from kafkacore.broker.security.authorizer.standard_authorizer import StandardAuthorizer
from kafkacore.errors import ConfigError, Errors, IllegalStateError
from kafkacore.protocol.api_keys import ApiKey
from kafkacore.raft import RaftConfig

log = logging.getLogger(__name__)

#: what a quorum controller handles on handler threads of its own: Raft's messages (and every
#: Fetch, brokers' too, all quick reads), which a change waiting for its commit needs answered
#: while the other handler threads may all be waiting on the controller's lock
QUORUM_API_KEYS = frozenset({ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.END_QUORUM_EPOCH,
                             ApiKey.FETCH, ApiKey.FETCH_SNAPSHOT})
#: the handler threads of the quorum's requests
QUORUM_HANDLER_THREADS = 2


class QuorumRequestChannel(RequestChannel):
    """The controller's request channel when it is a voter of a quorum: the requests of
    ``QUORUM_API_KEYS`` go to ``quorum_channel``, a queue served by handlers of their own."""

    def __init__(self, queue_size: int) -> None:
        super().__init__(queue_size)
        self.quorum_channel = self.sharing_processors(queue_size)

    def send_request(self, request: Request, timeout_s: float | None = None) -> Any:
        if request.api_key in QUORUM_API_KEYS:
            return self.quorum_channel.send_request(request, timeout_s)
        return super().send_request(request, timeout_s)


class ControllerServer:
    """The controller process's server: the same request reactor as a broker, with
    :class:`ControllerApis` behind it (Kafka's ``ControllerServer``)."""

    def __init__(self, config: BrokerConfig | dict[str, Any] | None = None) -> None:
        self.config = config if isinstance(config, BrokerConfig) else BrokerConfig(config)
        self.broker_id = self.config["node.id"]
        self.cluster_id = self.config["cluster.id"]
        self.faults = FaultInjector()
        #: this controller's voter, when ``controller.quorum.voters`` names more than one
        #: controller (None: a lone controller, a quorum of one)
        self.raft = self._raft_manager()
        self.request_channel = RequestChannel(self.config["queued.max.requests"]) \
            if self.raft is None else QuorumRequestChannel(self.config["queued.max.requests"])
        #: The controller's own authorizer (authorizer.class.name; None: it answers anyone),
        #: fed the cluster's ACLs by the records the controller replays (its
        #: ``AclControlManager``, which the CreateAcls and DeleteAcls brokers forward change).
        self.authorizer = StandardAuthorizer.from_config(self.config)
        self.controller = QuorumController(self.config, self.raft, self.authorizer)
        self.socket_server: SocketServer | None = None
        self._handlers: KafkaRequestHandlerPool | None = None
        self._quorum_handlers: KafkaRequestHandlerPool | None = None

    def _raft_manager(self) -> KafkaRaftManager | None:
        try:
            voters = parse_voters(self.config["controller.quorum.voters"])
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        if len(voters) <= 1:
            return None
        c = self.config
        return KafkaRaftManager(
            self.broker_id, voters, c.log_dirs[0], cluster_id=self.cluster_id,
            config=RaftConfig(election_timeout_ms=c["controller.quorum.election.timeout.ms"],
                              fetch_timeout_ms=c["controller.quorum.fetch.timeout.ms"]),
            faults=self.faults, sasl=controller_sasl(c))

    @property
    def bootstrap_servers(self) -> str:
        if self.socket_server is None:
            raise IllegalStateError("the controller has not started")
        port = self.config.advertised_port or self.socket_server.bound_port
        return f"{self.config.advertised_host}:{port}"

    def listeners(self) -> list[tuple[str, str, int]]:
        """(name, host, port) of each listener, at the port bound where 0 was asked."""
        found = []
        for name, endpoint in self.config.advertised.items():
            port = endpoint.port
            if port == 0 and self.socket_server is not None:
                port = self.socket_server.bound_port_of(name)
            found.append((name, endpoint.host, port))
        return found

    def start(self) -> ControllerServer:
        self.socket_server = SocketServer(self.config, self.request_channel, self.faults)
        apis = ControllerApis(self.request_channel, self.config, self.controller,
                              self.authorizer, listeners=self.listeners)
        self._handlers = KafkaRequestHandlerPool(self.request_channel, apis,
                                                 self.config["num.io.threads"])
        self._handlers.start()
        if isinstance(self.request_channel, QuorumRequestChannel):
            self._quorum_handlers = KafkaRequestHandlerPool(
                self.request_channel.quorum_channel, apis, QUORUM_HANDLER_THREADS)
            self._quorum_handlers.start()
        self.socket_server.startup()
        if self.raft is not None:
            self.raft.start()
        self.controller.start()
        log.info("controller %d listening on %s", self.broker_id, self.bootstrap_servers)
        return self

    def stop(self) -> None:
        if self.socket_server is None or self._handlers is None:
            raise IllegalStateError("the controller has not started")
        if self.raft is not None:
            self.raft.shutdown()  # resigns first: the others elect without waiting it out
        self.socket_server.shutdown()
        self._handlers.shutdown()
        if self._quorum_handlers is not None:
            self._quorum_handlers.shutdown()
        self.controller.shutdown()

    def __enter__(self) -> ControllerServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ControllerControlServer(ControlServer):
    """The controller's control socket (``--control-socket`` of a controller process): the
    faults of :class:`ControlServer`, plus ``{"op": "elect_leader", "topic": t, "partition": p,
    "broker": b}``, which moves a partition's leadership (librdkafka's mock cluster
    ``partition_set_leader``; :meth:`kafkacore.testing.cluster.Cluster.move_leader`), and
    ``{"op": "quorum_status"}``, what this controller's voter knows (its epoch, the leader,
    whether it leads and acts, its end offset and high watermark, its log start and snapshots:
    :meth:`kafkacore.testing.cluster.Cluster.quorum_status`), and ``{"op": "metadata_image"}``,
    its image as the records a snapshot would hold and the offset it stands at
    (:meth:`kafkacore.testing.cluster.Cluster.metadata_image`)."""

    def __init__(self, server: ControllerServer, path: str) -> None:
        super().__init__(server.faults, path)
        self.controller = server.controller

    def handle(self, line: bytes) -> dict[str, Any]:
        try:
            request = json.loads(line)
            if isinstance(request, dict) and request.get("op") == "quorum_status":
                return {"ok": True, "status": self.quorum_status()}
            if isinstance(request, dict) and request.get("op") == "metadata_image":
                return {"ok": True, "image": self.metadata_image()}
            if isinstance(request, dict) and request.get("op") == "elect_leader":
                error = self.controller.elect_leader(str(request["topic"]),
                                                     int(request["partition"]),
                                                     int(request["broker"]))
                if error != Errors.NONE:
                    return {"ok": False, "error": "ValueError",
                            "message": f"cannot move the leader: error {error}"}
                return {"ok": True}
        except (ValueError, TypeError, KeyError) as exc:
            return {"ok": False, "error": type(exc).__name__, "message": str(exc)}
        return super().handle(line)

    def metadata_image(self) -> dict[str, Any]:
        c = self.controller
        with c.lock:
            return {"applied": c.applied_offset(), "records": c.snapshot_records()}

    def quorum_status(self) -> dict[str, Any]:
        raft = self.controller.raft
        if raft is None:  # a quorum of one: it always leads
            return {"node_id": self.controller.node_id, "epoch": self.controller.leader_epoch,
                    "leader_id": self.controller.node_id, "is_leader": True, "active": True}
        status = raft.status()
        return {"node_id": self.controller.node_id, "epoch": status.epoch,
                "leader_id": status.leader_id, "is_leader": status.is_leader,
                "active": self.controller.active_epoch >= 0,
                "end_offset": status.end_offset, "high_watermark": status.high_watermark,
                "state": status.state,
                "snapshots_loaded": self.controller.snapshots_loaded,
                "snapshots_written": self.controller.snapshots_written,
                **raft.statistics()}
