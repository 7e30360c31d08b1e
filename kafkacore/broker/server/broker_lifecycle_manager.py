"""``BrokerLifecycleManager``: a broker's registration and heartbeats with the controller.

It registers the broker (BrokerRegistration: the controller answers with a broker epoch),
heartbeats every ``broker.heartbeat.interval.ms`` (BrokerHeartbeat: a broker that stops is fenced
after ``broker.session.timeout.ms``), and starts the
:class:`~kafkacore.broker.metadata.metadata_loader.MetadataLoader`, which fetches the controller's records
on its own thread and connection, so that applying a large change never delays a heartbeat.  It
holds the broker's other two connections to the controller: heartbeats on one, the requests
a broker sends on behalf of others (:class:`~kafkacore.broker.server.forwarding_manager.ForwardingManager`,
:class:`~kafkacore.broker.server.alter_partition_manager.AlterPartitionManager`) on the other.
See docs/broker/replication.rst.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable

from kafkacore.broker.config.kafka_config import BrokerConfig
from kafkacore.broker.metadata.metadata_loader import MetadataLoader
from kafkacore.broker.network.faults import FaultInjector
from kafkacore.broker.security.authentication import controller_sasl
from kafkacore.broker.server.node_to_controller_channel_manager import (
    NodeToControllerChannelManager,
)
from kafkacore.broker.server.raft_controller_node_provider import (
    RaftControllerNodeProvider,
    parse_bootstrap_servers,
)
from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
from kafkacore.broker.server_common.shutdownable_thread import ShutdownableThread
from kafkacore.errors import Errors
from kafkacore.protocol.api_keys import ApiKey

log = logging.getLogger(__name__)

#: Kafka's ``SecurityProtocol`` ids, as BrokerRegistration carries them.
SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


class BrokerLifecycleManager(ShutdownableThread):
    def __init__(self, config: BrokerConfig, broker_id: int, cluster_id: str, *,
                 advertised_address: Callable[[str | None], tuple[str, int]],
                 faults: FaultInjector,
                 metadata_loader: Callable[[InterBrokerClient], MetadataLoader]) -> None:
        """``advertised_address(listener)``: where the other brokers reach this one (the port
        bound, once the listeners are); ``metadata_loader(client)``: the broker's loader, given
        its own connection to the controller."""
        super().__init__(f"broker-{broker_id}-lifecycle")
        self.config = config
        self.broker_id = broker_id
        self.cluster_id = cluster_id
        self.advertised_address = advertised_address
        self.faults = faults
        #: the controllers (several in a quorum) and the one believed active, shared by the
        #: three connections below: on NOT_CONTROLLER or a dead connection they move on
        self.controllers = RaftControllerNodeProvider(
            parse_bootstrap_servers(config["controller.quorum.bootstrap.servers"]))
        self.interval_s = config["broker.heartbeat.interval.ms"] / 1000.0
        self.incarnation_id = uuid.uuid4()
        self.broker_epoch = -1
        self._stopping = threading.Event()
        timeout = config["replica.socket.timeout.ms"] / 1000.0
        name = f"broker-{broker_id}"
        # Heartbeats and image pulls on one connection; forwarded requests on another, so that a
        # slow CreateTopics never delays a heartbeat.
        # On the controller's listener, with the broker's credentials (controller.listener.names).
        sasl = controller_sasl(config)
        self._client = NodeToControllerChannelManager(self.controllers, name + "-heartbeat",
                                                      timeout, faults, sasl=sasl)
        self.controller_channel = NodeToControllerChannelManager(
            self.controllers, name + "-forward", timeout, faults, sasl=sasl)
        self.metadata_loader = metadata_loader(NodeToControllerChannelManager(
            self.controllers, name + "-metadata", timeout, faults, sasl=sasl))

    def start(self) -> None:
        super().start()
        self.metadata_loader.start()

    # -- the loop ---------------------------------------------------------------------------------

    def do_work(self) -> bool:
        """One heartbeat turn (supervised: see ShutdownableThread)."""
        if self._stopping.is_set():
            return False
        if self.faults.isolated:
            self._client.close()
            self.controller_channel.close()
            self._stopping.wait(0.1)
            return True
        try:
            if self.broker_epoch < 0:
                self._register()
            self._heartbeat()
        except OSError as exc:
            log.debug("broker %d: controller unreachable: %s", self.broker_id, exc)
        except Exception:
            log.exception("broker %d: lifecycle step failed", self.broker_id)
        self._stopping.wait(self.interval_s)
        return True

    def shutdown(self, timeout_s: float = 5.0) -> None:
        """Stop heartbeating, then ask for a controlled shutdown (a heartbeat with
        ``want_shut_down``): the controller moves this broker's leaderships away at once instead
        of after ``broker.session.timeout.ms``.  Best effort, bounded."""
        self.initiate_shutdown()
        self._stopping.set()
        self._client.close()
        self.metadata_loader.shutdown()
        self.join(5.0)
        if self.broker_epoch >= 0 and not self.faults.isolated:
            try:
                self.controller_channel.send(ApiKey.BROKER_HEARTBEAT, 0, {
                    "broker_id": self.broker_id, "broker_epoch": self.broker_epoch,
                    "current_metadata_offset": 0, "want_fence": False, "want_shut_down": True,
                }, timeout_s=5.0)
            except OSError as exc:
                log.info("broker %d: controlled shutdown not acknowledged: %s",
                         self.broker_id, exc)
        self.controller_channel.close()

    def _register(self) -> None:
        listener = self.config.inter_broker_listener
        host, port = self.advertised_address(listener.name)
        response = self._client.send(ApiKey.BROKER_REGISTRATION, 0, {
            "broker_id": self.broker_id, "cluster_id": self.cluster_id,
            "incarnation_id": self.incarnation_id,
            # The inter-broker listener's address: where the other brokers' replica fetchers
            # connect (inter.broker.listener.name).
            "listeners": [{"name": listener.name, "host": host, "port": port,
                           "security_protocol": SECURITY_PROTOCOL_IDS[listener.security_protocol]}],
            "features": [], "rack": None,
        })
        if response["error_code"] != Errors.NONE:
            raise ConnectionError(f"registration refused: error {response['error_code']}")
        self.broker_epoch = response["broker_epoch"]
        log.info("broker %d registered with the controller, broker epoch %d", self.broker_id,
                 self.broker_epoch)

    def _heartbeat(self) -> None:
        response = self._client.send(ApiKey.BROKER_HEARTBEAT, 0, {
            "broker_id": self.broker_id, "broker_epoch": self.broker_epoch,
            "current_metadata_offset": 0, "want_fence": False, "want_shut_down": False,
        })
        if response["error_code"] != Errors.NONE:
            # Fenced for good (the controller forgot us, or we are an old epoch): register again.
            log.info("broker %d: heartbeat refused (error %d), registering again",
                     self.broker_id, response["error_code"])
            self.broker_epoch = -1
