"""``ControllerServer``: the controller process (and its control socket)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from kafkacore.broker.config.kafka_config import BrokerConfig
from kafkacore.broker.controller.controller_apis import ControllerApis
from kafkacore.broker.controller.quorum_controller import QuorumController
from kafkacore.broker.network.faults import ControlServer, FaultInjector
from kafkacore.broker.network.kafka_request_handler import KafkaRequestHandlerPool
from kafkacore.broker.network.request_channel import RequestChannel
from kafkacore.broker.network.socket_server import SocketServer
from kafkacore.broker.security.authorizer.standard_authorizer import ACLS_FILE, StandardAuthorizer
from kafkacore.errors import Errors, IllegalStateError

log = logging.getLogger(__name__)


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
        #: The controller's own authorizer (authorizer.class.name; None: it answers anyone).
        self.authorizer = StandardAuthorizer.from_config(self.config)
        #: The cluster's ACLs (Kafka's ``AclControlManager``): changed by the CreateAcls and
        #: DeleteAcls brokers forward, read by every broker's metadata pull.  With an
        #: authorizer, the same list decides who may talk to the controller.
        self.acls = self.authorizer or StandardAuthorizer(
            path=Path(self.config.log_dirs[0]) / ACLS_FILE)
        self.socket_server: SocketServer | None = None
        self._handlers: KafkaRequestHandlerPool | None = None

    @property
    def bootstrap_servers(self) -> str:
        if self.socket_server is None:
            raise IllegalStateError("the controller has not started")
        port = self.config.advertised_port or self.socket_server.bound_port
        return f"{self.config.advertised_host}:{port}"

    def start(self) -> ControllerServer:
        self.socket_server = SocketServer(self.config, self.request_channel, self.faults)
        apis = ControllerApis(self.request_channel, self.config, self.controller,
                              self.authorizer, self.acls)
        self._handlers = KafkaRequestHandlerPool(self.request_channel, apis,
                                                 self.config["num.io.threads"])
        self._handlers.start()
        self.socket_server.startup()
        self.controller.start()
        log.info("controller %d listening on %s", self.broker_id, self.bootstrap_servers)
        return self

    def stop(self) -> None:
        if self.socket_server is None or self._handlers is None:
            raise IllegalStateError("the controller has not started")
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
    ``partition_set_leader``; :meth:`kafkacore.testing.cluster.Cluster.move_leader`)."""

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
                if error != Errors.NONE:
                    return {"ok": False, "error": "ValueError",
                            "message": f"cannot move the leader: error {error}"}
                return {"ok": True}
        except (ValueError, TypeError, KeyError) as exc:
            return {"ok": False, "error": type(exc).__name__, "message": str(exc)}
        return super().handle(line)
