"""``BrokerLifecycleManager``: a broker's side of the controller (Kafka's
``BrokerLifecycleManager`` and the metadata loader).

It registers the broker (BrokerRegistration: the controller answers with a broker epoch),
heartbeats every ``broker.heartbeat.interval.ms`` (BrokerHeartbeat: a broker that stops is fenced
after ``broker.session.timeout.ms``), and after each heartbeat pulls the controller's image (a
Metadata request for every topic) and hands it to the
:class:`~kafkacore.broker.replica_manager.ReplicaManager`.  It also carries the requests a broker
forwards to the controller: CreateTopics, DeleteTopics, and the leaders' AlterPartition.
See docs/broker/replication.rst.
"""

from __future__ import annotations

import logging
import threading
import uuid
from typing import TYPE_CHECKING, Any

from kafkacore import errors
from kafkacore.broker.inter_broker_client import InterBrokerClient
from kafkacore.broker.partition import Partition, PartitionState
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey

if TYPE_CHECKING:
    from kafkacore.broker.server import Broker

log = logging.getLogger(__name__)

NONE = 0
METADATA_VERSION = 12
DESCRIBE_CONFIGS_VERSION = 2
CONFIG_SOURCE_TOPIC = 1
#: Kafka's ``SecurityProtocol`` ids, as BrokerRegistration carries them.
SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


class BrokerLifecycleManager(threading.Thread):
    def __init__(self, broker: Broker) -> None:
        super().__init__(name=f"broker-{broker.broker_id}-lifecycle", daemon=True)
        self.broker = broker
        config = broker.config
        address = config["controller.quorum.bootstrap.servers"].split(",")[0].strip()
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise errors.ConfigError("controller.quorum.bootstrap.servers: expected host:port, "
                                     f"got {address!r}")
        self.controller_address = (host, int(port))
        self.interval_s = config["broker.heartbeat.interval.ms"] / 1000.0
        self.incarnation_id = uuid.uuid4()
        self.broker_epoch = -1
        self.image_received = threading.Event()
        self._stopping = threading.Event()
        timeout = config["replica.socket.timeout.ms"] / 1000.0
        name = f"broker-{broker.broker_id}"
        faults = broker.faults
        # Heartbeats and image pulls on one connection; forwarded requests on another, so that a
        # slow CreateTopics never delays a heartbeat.
        self._client = InterBrokerClient(host, int(port), name + "-heartbeat", timeout, faults)
        self._forward_client = InterBrokerClient(host, int(port), name + "-forward", timeout,
                                                 faults)
        self._pull_lock = threading.Lock()

    # -- the loop ---------------------------------------------------------------------------------

    def run(self) -> None:
        while not self._stopping.is_set():
            if self.broker.faults.isolated:
                self._client.close()
                self._forward_client.close()
                self._stopping.wait(0.1)
                continue
            try:
                if self.broker_epoch < 0:
                    self._register()
                self._heartbeat()
                self.pull_metadata()
            except OSError as exc:
                log.debug("broker %d: controller unreachable: %s", self.broker.broker_id, exc)
            except Exception:
                log.exception("broker %d: lifecycle step failed", self.broker.broker_id)
            self._stopping.wait(self.interval_s)

    def shutdown(self) -> None:
        """Stop heartbeating, then ask for a controlled shutdown (a heartbeat with
        ``want_shut_down``): the controller moves this broker's leaderships away at once instead
        of after ``broker.session.timeout.ms``.  Best effort, bounded."""
        self._stopping.set()
        self._client.close()
        self.join(5.0)
        if self.broker_epoch >= 0 and not self.broker.faults.isolated:
            try:
                self._forward_client.send(ApiKey.BROKER_HEARTBEAT, 0, {
                    "broker_id": self.broker.broker_id, "broker_epoch": self.broker_epoch,
                    "current_metadata_offset": 0, "want_fence": False, "want_shut_down": True,
                }, timeout_s=5.0)
            except OSError as exc:
                log.info("broker %d: controlled shutdown not acknowledged: %s",
                         self.broker.broker_id, exc)
        self._forward_client.close()

    def _register(self) -> None:
        b = self.broker
        listener = b.config.inter_broker_listener
        host, port = b.advertised_address(listener.name)
        response = self._client.send(ApiKey.BROKER_REGISTRATION, 0, {
            "broker_id": b.broker_id, "cluster_id": b.cluster_id,
            "incarnation_id": self.incarnation_id,
            # The inter-broker listener's address: where the other brokers' replica fetchers
            # connect (inter.broker.listener.name).
            "listeners": [{"name": listener.name, "host": host, "port": port,
                           "security_protocol": SECURITY_PROTOCOL_IDS[listener.security_protocol]}],
            "features": [], "rack": None,
        })
        if response["error_code"] != NONE:
            raise ConnectionError(f"registration refused: error {response['error_code']}")
        self.broker_epoch = response["broker_epoch"]
        log.info("broker %d registered with the controller, broker epoch %d", b.broker_id,
                 self.broker_epoch)

    def _heartbeat(self) -> None:
        response = self._client.send(ApiKey.BROKER_HEARTBEAT, 0, {
            "broker_id": self.broker.broker_id, "broker_epoch": self.broker_epoch,
            "current_metadata_offset": 0, "want_fence": False, "want_shut_down": False,
        })
        if response["error_code"] != NONE:
            # Fenced for good (the controller forgot us, or we are an old epoch): register again.
            log.info("broker %d: heartbeat refused (error %d), registering again",
                     self.broker.broker_id, response["error_code"])
            self.broker_epoch = -1

    # -- the image -------------------------------------------------------------------------------

    def pull_metadata(self) -> None:
        """Fetch the controller's image and apply it (callable from any thread)."""
        with self._pull_lock:
            body = codec.REQUESTS[ApiKey.METADATA].body.defaults(METADATA_VERSION)
            body.update(topics=None, allow_auto_topic_creation=False)
            response = self._client.send(ApiKey.METADATA, METADATA_VERSION, body)
            self._apply(response)
        self.image_received.set()

    def _apply(self, response: dict[str, Any]) -> None:
        broker = self.broker
        cache = broker.metadata_cache
        brokers = {b["node_id"]: (b["host"], b["port"]) for b in response["brokers"]}
        topics: dict[str, tuple[Any, dict[int, PartitionState]]] = {}
        for t in response["topics"]:
            parts = {p["partition_index"]: PartitionState(
                p["leader_id"], p["leader_epoch"], list(p["replica_nodes"]),
                list(p["isr_nodes"])) for p in t["partitions"]}
            topics[t["name"]] = (t["topic_id"], parts)
        new = [name for name in topics if cache.get(name) is None or
               cache.get(name).topic_id != topics[name][0]]
        configs = self._describe_configs(new) if new else {}
        for name in new:
            old = cache.get(name)
            if old is not None:  # deleted and created again meanwhile
                self._delete_topic(name)
            topic_id, parts = topics[name]
            cache.add_topic(name, len(parts), configs.get(name, {}), topic_id)
        broker.replica_manager.apply_image(brokers, topics)
        for name in [t.name for t in cache.topics() if t.name not in topics]:
            self._delete_topic(name)

    def _delete_topic(self, name: str) -> None:
        """Forget a topic the controller deleted: its partitions first, then its logs."""
        broker = self.broker
        meta = broker.metadata_cache.remove_topic(name)
        if meta is None:
            return
        for p in range(meta.partitions):
            broker.replica_manager.drop_partition((name, p))
            broker.log_manager.delete_log(name, p)

    def _describe_configs(self, names: list[str]) -> dict[str, dict[str, str]]:
        response = self._client.send(ApiKey.DESCRIBE_CONFIGS, DESCRIBE_CONFIGS_VERSION, {
            "resources": [{"resource_type": 2, "resource_name": n, "configuration_keys": None}
                          for n in names],
            "include_synoyms": False,
        })
        return {r["resource_name"]: {c["name"]: c["value"] for c in r["configs"]
                                     if c["config_source"] == CONFIG_SOURCE_TOPIC}
                for r in response["results"] if r["error_code"] == NONE}

    # -- forwarding --------------------------------------------------------------------------------

    def forward(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        """Send a client's request to the controller as it came (Kafka forwards it in an
        Envelope), then refresh the image so this broker answers with the result at once."""
        response = self._forward_client.send(api_key, version, body)
        self.pull_metadata()
        return response

    def alter_partition(self, partition: Partition, new_isr: list[int]) -> tuple[int, int,
                                                                                 list[int], int]:
        response = self._forward_client.send(ApiKey.ALTER_PARTITION, 3, {
            "broker_id": self.broker.broker_id, "broker_epoch": self.broker_epoch,
            "topics": [{"topic_id": partition.topic_id, "partitions": [{
                "partition_index": partition.index, "leader_epoch": partition.leader_epoch,
                "new_isr_with_epochs": [{"broker_id": r, "broker_epoch": -1} for r in new_isr],
                "leader_recovery_state": 0, "partition_epoch": partition.partition_epoch}]}],
        })
        if response["error_code"] != NONE:
            return response["error_code"], -1, [], -1
        p = response["topics"][0]["partitions"][0]
        return p["error_code"], p["leader_epoch"], list(p["isr"]), p["partition_epoch"]
