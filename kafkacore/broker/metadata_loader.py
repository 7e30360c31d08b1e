"""``MetadataLoader``: a broker's copy of the controller's image, pulled and applied.

After each heartbeat the broker pulls the whole image (a Metadata request for every topic) and
applies it: new topics into the :class:`~kafkacore.broker.metadata_cache.MetadataCache` with their
configs, partition states to the :class:`~kafkacore.broker.replica_manager.ReplicaManager`, and
deleted topics forgotten (Kafka's ``MetadataLoader`` and ``BrokerMetadataPublisher``, fed here by
a pull instead of the metadata log).  See docs/broker/replication.rst.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from kafkacore.broker.authorizer.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafkacore.broker.config_admin_manager import (
    RESOURCE_TYPE_BROKER,
    RESOURCE_TYPE_TOPIC,
    apply_broker_configs,
    apply_topic_configs,
)
from kafkacore.broker.inter_broker_client import InterBrokerClient
from kafkacore.broker.partition import PartitionState
from kafkacore.errors import Errors
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey

if TYPE_CHECKING:
    from kafkacore.broker.server import Broker

METADATA_VERSION = 12
DESCRIBE_CONFIGS_VERSION = 2
DESCRIBE_ACLS_VERSION = 3


class MetadataLoader:
    """Pulls the controller's image over ``client`` and applies it to ``broker``."""

    def __init__(self, broker: Broker, client: InterBrokerClient) -> None:
        self.broker = broker
        self._client = client
        #: Set once the first image is applied: the broker then knows the cluster's leaders.
        self.image_received = threading.Event()
        self._pull_lock = threading.Lock()

    def pull_metadata(self) -> None:
        """Fetch the controller's image and apply it (callable from any thread)."""
        with self._pull_lock:
            body = codec.REQUESTS[ApiKey.METADATA].body.defaults(METADATA_VERSION)
            body.update(topics=None, allow_auto_topic_creation=False)
            response = self._client.send(ApiKey.METADATA, METADATA_VERSION, body)
            self._apply(response)
            if self.broker.authorizer is not None:
                self._load_acls()
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
        configs, broker_configs = self._describe_configs(list(topics))
        for name in new:
            old = cache.get(name)
            if old is not None:  # deleted and created again meanwhile
                self._delete_topic(name)
            topic_id, parts = topics[name]
            cache.add_topic(name, len(parts), configs.get(name, {}), topic_id)
        for name, (_, parts) in topics.items():
            cache.grow_topic(name, len(parts))  # CreatePartitions added some
        self._apply_config_changes(configs, broker_configs)
        broker.replica_manager.apply_image(brokers, topics)
        for name in [t.name for t in cache.topics() if t.name not in topics]:
            self._delete_topic(name)

    def _load_acls(self) -> None:
        """Replace the authorizer's ACLs with the controller's (KRaft brokers replay the ACL
        records of the metadata log; we ask for all of them, as one DescribeAcls)."""
        response = self._client.send(ApiKey.DESCRIBE_ACLS, DESCRIBE_ACLS_VERSION, {
            "resource_type_filter": ResourceType.ANY, "resource_name_filter": None,
            "pattern_type_filter": PatternType.ANY, "principal_filter": None,
            "host_filter": None, "operation": AclOperation.ANY,
            "permission_type": AclPermissionType.ANY})
        if response["error_code"] != Errors.NONE:
            raise ConnectionError(f"DescribeAcls refused by the controller: error "
                                  f"{response['error_code']}")
        self.broker.authorizer.load_snapshot([
            AclBinding(ResourcePattern(ResourceType(r["resource_type"]), r["resource_name"],
                                       PatternType(r["pattern_type"])),
                       AccessControlEntry(a["principal"], a["host"], AclOperation(a["operation"]),
                                          AclPermissionType(a["permission_type"])))
            for r in response["resources"] for a in r["acls"]])

    def _delete_topic(self, name: str) -> None:
        """Forget a topic the controller deleted: its partitions first, then its logs."""
        broker = self.broker
        meta = broker.metadata_cache.remove_topic(name)
        if meta is None:
            return
        for p in range(meta.partitions):
            broker.replica_manager.drop_partition((name, p))
            broker.log_manager.delete_log(name, p)

    def _describe_configs(self, names: list[str]
                          ) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, str]]]:
        """The dynamic configs the controller keeps: each topic's own, and those of the broker
        resources that concern this broker ("" and its id)."""
        mine = ("", str(self.broker.broker_id))
        response = self._client.send(ApiKey.DESCRIBE_CONFIGS, DESCRIBE_CONFIGS_VERSION, {
            "resources": [{"resource_type": RESOURCE_TYPE_TOPIC, "resource_name": n,
                           "configuration_keys": None} for n in names] +
                         [{"resource_type": RESOURCE_TYPE_BROKER, "resource_name": n,
                           "configuration_keys": None} for n in mine],
            "include_synoyms": False,
        })
        topics: dict[str, dict[str, str]] = {}
        brokers: dict[str, dict[str, str]] = {}
        for r in response["results"]:
            if r["error_code"] != Errors.NONE:
                continue
            found = {c["name"]: c["value"] for c in r["configs"]}
            if r["resource_type"] == RESOURCE_TYPE_BROKER:
                brokers[r["resource_name"]] = found
            else:
                topics[r["resource_name"]] = found
        return topics, brokers

    def _apply_config_changes(self, topics: dict[str, dict[str, str]],
                              brokers: dict[str, dict[str, str]]) -> None:
        """Configs changed by AlterConfigs take effect here: topics' in their logs, the broker
        resources' in this broker's defaults."""
        cache = self.broker.metadata_cache
        for name, configs in topics.items():
            meta = cache.get(name)
            if meta is not None and meta.configs != configs:
                apply_topic_configs(self.broker, name, configs)
        for name, configs in brokers.items():
            if self.broker.dynamic_config.dynamic(name) != configs:
                apply_broker_configs(self.broker, name, configs)
