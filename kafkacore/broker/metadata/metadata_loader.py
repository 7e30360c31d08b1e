"""``MetadataLoader``: a broker's copy of the controller's image, kept up to date by deltas.

Every ``broker.heartbeat.interval.ms``, on its own thread (a long apply never delays a
heartbeat), the broker fetches the controller's metadata records from its own offset
(a Fetch of ``__cluster_metadata``, as KRaft brokers fetch the metadata log), replays them into
its image (Kafka's ``MetadataDelta`` applied to a ``MetadataImage``) and publishes what changed:
new topics into the :class:`~kafkacore.broker.metadata.metadata_cache.MetadataCache` with their configs
(one batch), partition states to the :class:`~kafkacore.broker.server.replica_manager.ReplicaManager`,
deleted topics forgotten, the ACL records to the authorizer (Kafka's ``MetadataLoader``,
``BrokerMetadataPublisher`` and ``AclPublisher``).  A fetch with nothing new costs the same
however many topics there are.  A broker whose offset the controller no longer holds (behind
its last snapshot) takes the whole image once, by a Metadata request.  See docs/broker/replication.rst.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from typing import Any, Protocol

from kafkacore import errors
from kafkacore.broker.config.config_admin_manager import apply_broker_configs, apply_topic_configs
from kafkacore.broker.config.config_resource import RESOURCE_TYPE_BROKER, RESOURCE_TYPE_TOPIC
from kafkacore.broker.config.dynamic_broker_config import DynamicBrokerConfig
from kafkacore.broker.log import LogConfig, LogManager
from kafkacore.broker.metadata.client_quota_control_manager import client_quota_record
from kafkacore.broker.metadata.metadata_cache import MetadataCache
from kafkacore.broker.metadata.metadata_log import METADATA_TOPIC_ID
from kafkacore.broker.metadata.partition_state import PartitionState
from kafkacore.broker.security.authorizer.acl import (
    ACCESS_CONTROL_ENTRY_RECORD,
    REMOVE_ACCESS_CONTROL_ENTRY_RECORD,
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    acl_of_record,
)
from kafkacore.broker.security.authorizer.standard_authorizer import StandardAuthorizer
from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
from kafkacore.broker.server_common.shutdownable_thread import ShutdownableThread
from kafkacore.core.record_batch import iter_records
from kafkacore.errors import Errors, InvalidConfigError
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey

log = logging.getLogger(__name__)

METADATA_VERSION = 12
FETCH_VERSION = 16
#: what one metadata Fetch may bring back
FETCH_MAX_BYTES = 16 * 1024 * 1024
DESCRIBE_CONFIGS_VERSION = 2
DESCRIBE_ACLS_VERSION = 3
DESCRIBE_CLIENT_QUOTAS_VERSION = 1


Topics = dict[str, tuple[uuid.UUID, dict[int, PartitionState]]]


def _set_config(configs: dict[str, str], name: str, value: str | None) -> None:
    """A ConfigRecord's change: a value, or null for "back to the default"."""
    if value is None:
        configs.pop(name, None)
    else:
        configs[name] = value


def _check_partition_record(r: dict[str, Any]) -> None:
    """A PartitionRecord's fields have the types the replica manager relies on (ValueError)."""
    ints = (r["partition_id"], r["leader"], r["leader_epoch"], *r["replicas"], *r["isr"])
    if not all(type(v) is int for v in ints) or r["partition_id"] < 0:
        raise ValueError("a partition record with fields that are not broker ids and epochs")


class ImagePublisher(Protocol):
    """The replica manager as the loader publishes to it (the partitions part of Kafka's
    ``BrokerMetadataPublisher``): each partition's leader and ISR, and the partitions gone."""

    def apply_image(self, brokers: dict[int, tuple[str, int]], topics: Topics,
                    touched: set[str] | None = None) -> None: ...

    def drop_partition(self, key: tuple[str, int]) -> None: ...


class MetadataLoader:
    """Fetches the controller's records over ``client`` and publishes them: topics and their
    configs to ``metadata_cache`` and the logs (``log_manager``), partition states to
    ``replicas`` (the replica manager), the broker resources' configs to ``dynamic_config``,
    the ACLs to ``authorizer`` (None: authorization is off)."""

    def __init__(self, client: InterBrokerClient, broker_id: int, *, interval_ms: int,
                 metadata_cache: MetadataCache, log_manager: LogManager,
                 dynamic_config: DynamicBrokerConfig, replicas: ImagePublisher,
                 authorizer: StandardAuthorizer | None) -> None:
        self._client = client
        self.broker_id = broker_id
        self.metadata_cache = metadata_cache
        self.log_manager = log_manager
        self.dynamic_config = dynamic_config
        self.replicas = replicas
        self.authorizer = authorizer
        #: Set once the first image is applied: the broker then knows the cluster's leaders.
        self.image_received = threading.Event()
        # Lock order 3: images are applied under it (then ReplicaManager._lock).
        self._pull_lock = threading.Lock()
        # The image (guarded by _pull_lock): the next record to fetch, every topic's id and
        # partition states, the live brokers.  A topic's dict of partitions is replaced, never
        # changed, once published: the ReplicaManager holds the published ones.
        self._offset = 0
        self._topics: Topics = {}
        #: topics whose partitions changed in the image but are not yet applied to the replica
        #: manager (None: every topic); kept if applying them fails, so the next turn does
        self._unapplied: set[str] | None = set()
        self._names: dict[uuid.UUID, str] = {}
        self._brokers: dict[int, tuple[str, int]] = {}
        self._interval_s = interval_ms / 1000.0
        self._stopping = threading.Event()
        self._thread = ShutdownableThread(f"broker-{broker_id}-metadata-loader",
                                          work=self._pull_turn)

    def start(self) -> None:
        self._thread.start()

    def shutdown(self) -> None:
        self._stopping.set()
        self._thread.shutdown()
        self._client.close()

    def _pull_turn(self) -> bool:
        """One turn of the loader's thread (supervised: an error is logged, the next turn
        runs)."""
        if self._stopping.is_set():
            return False
        try:
            self.pull_metadata()
        except OSError as exc:
            log.debug("broker %d: controller unreachable: %s", self.broker_id, exc)
        self._stopping.wait(self._interval_s)
        return True

    def pull_metadata(self) -> None:
        """Fetch the controller's new records and apply them (callable from any thread)."""
        with self._pull_lock:
            records: list[dict[str, Any]] = []
            while True:
                error, batch, end = self._fetch()
                if error == Errors.OFFSET_OUT_OF_RANGE:
                    self._apply_image(end)  # then the records after it, if any
                    records = []
                    continue
                if error != Errors.NONE:
                    raise ConnectionError(f"metadata fetch refused by the controller: error "
                                          f"{error}")
                records.extend(batch)
                self._offset += len(batch)
                if not batch or self._offset >= end:
                    break
            if records or not self.image_received.is_set():
                self._apply_records(records)
        self.image_received.set()

    def handle_commit(self, records: list[dict[str, Any]]) -> None:
        """Apply one batch of committed controller records, as :meth:`pull_metadata` applies
        what one pull fetched (Kafka's ``MetadataLoader.handleCommit``): for a loader fed its
        records directly rather than pulling them from a controller.  A record it cannot
        apply is logged and skipped; the others are applied."""
        with self._pull_lock:
            self._apply_records(records)

    def _fetch(self) -> tuple[int, list[dict[str, Any]], int]:
        """(error, the records from our offset, the controller's end offset)."""
        response = self._client.send(ApiKey.FETCH, FETCH_VERSION, {
            "replica_state": {"replica_id": self.broker_id, "replica_epoch": -1},
            "max_wait_ms": 0, "min_bytes": 0, "max_bytes": FETCH_MAX_BYTES,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic_id": METADATA_TOPIC_ID, "partitions": [{
                "partition": 0, "current_leader_epoch": -1, "fetch_offset": self._offset,
                "last_fetched_epoch": -1, "log_start_offset": -1,
                "partition_max_bytes": FETCH_MAX_BYTES}]}],
            "forgotten_topics_data": [], "rack_id": ""})
        if response["error_code"] != Errors.NONE:
            return response["error_code"], [], -1
        part = response["responses"][0]["partitions"][0]
        if part["error_code"] != Errors.NONE:
            return part["error_code"], [], part["high_watermark"]
        records = []
        for r in iter_records(part["records"] or b""):
            if r.offset < self._offset:
                continue
            try:
                records.append(json.loads(r.value or b""))
            except (TypeError, ValueError) as exc:  # counted (the offset moves past it), skipped
                self._skip_record(r.value, exc)
                records.append({"type": "UndecodableRecord"})
        return Errors.NONE, records, part["high_watermark"]

    def _apply_records(self, records: list[dict[str, Any]]) -> None:
        """Replay ``records`` into the image (Kafka's ``MetadataDelta``), then publish what
        they changed."""
        new: dict[str, dict[str, str]] = {}  # topic -> its configs
        changed_topics: dict[str, dict[str, str]] = {}  # known topic -> its new configs
        changed_brokers: dict[str, dict[str, str]] = {}  # "" or our id -> its new configs
        removed: set[str] = set()
        grown: set[str] = set()
        quotas: list[dict[str, Any]] = []  # ClientQuotaRecords
        copied: set[str] = set()  # topics whose partitions dict is this delta's own copy
        brokers_changed = False  # a registration or fencing: every follower's leader is looked up again
        for r in records:
            try:
                kind = r["type"]
            except (KeyError, TypeError) as exc:
                self._skip_record(r, exc)
                continue
            try:
                brokers_changed |= self._replay(r, kind, new, changed_topics, changed_brokers,
                                                removed, grown, quotas, copied)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                self._skip_record(r, exc)
        self._quarantine_bad_configs(new, grown)
        self._publish(new, removed, grown, changed=None if brokers_changed else copied)
        self._apply_config_changes(
            {n: c for n, c in changed_topics.items() if n in self._topics}, changed_brokers)
        if quotas:
            self.metadata_cache.apply_client_quota_records(quotas)

    def _skip_record(self, record: Any, exc: BaseException) -> None:
        """A record this broker cannot apply (malformed, or naming what is not there): said
        once, at ERROR, and skipped; the records after it are applied (Kafka's loader counts
        such a record as a metadata load error and goes on)."""
        log.error("broker %d: cannot apply the metadata record %.300r (%s: %s); skipped",
                  self.broker_id, record, type(exc).__name__, exc)

    def _quarantine_bad_configs(self, new: dict[str, dict[str, str]], grown: set[str]) -> None:
        """A new topic whose configs this broker cannot parse (a controller that did not check
        them, or a setting this broker's version does not know) is left out of the image,
        said once at ERROR: it cannot get logs, and keeping it would fail every later
        pull's publication."""
        for name, configs in list(new.items()):
            try:
                LogConfig.from_properties(configs, base=self.log_manager.default_config)
            except InvalidConfigError as exc:
                log.error("broker %d: topic %s has configs this broker cannot apply (%s); it "
                          "is skipped", self.broker_id, name, exc)
                topic_id, _ = self._topics.pop(name)
                self._names.pop(topic_id, None)
                del new[name]
                grown.discard(name)

    def _replay(self, r: dict[str, Any], kind: str, new: dict[str, dict[str, str]],
                changed_topics: dict[str, dict[str, str]],
                changed_brokers: dict[str, dict[str, str]], removed: set[str], grown: set[str],
                quotas: list[dict[str, Any]], copied: set[str]) -> bool:
        """One record into the image and this pull's delta; True if the brokers changed."""
        if kind == "TopicRecord":
            name, topic_id = r["name"], uuid.UUID(r["topic_id"])
            old = self._topics.get(name)
            if old is not None and old[0] == topic_id:
                return False  # already in the image we took
            if old is not None:
                self._names.pop(old[0], None)
                removed.add(name)
            self._topics[name] = (topic_id, {})
            self._names[topic_id] = name
            new[name] = {}
            copied.add(name)
        elif kind == "ConfigRecord":
            name = r["resource_name"]
            if r.get("resource_type", RESOURCE_TYPE_TOPIC) == RESOURCE_TYPE_BROKER:
                if name in ("", str(self.broker_id)):
                    layer = changed_brokers.setdefault(
                        name, self.dynamic_config.dynamic(name))
                    _set_config(layer, r["name"], r["value"])
            elif name in new:
                _set_config(new[name], r["name"], r["value"])
            elif name in self._topics:  # AlterConfigs on a topic we have
                meta = self.metadata_cache.get(name)
                layer = changed_topics.setdefault(name, dict(meta.configs) if meta else {})
                _set_config(layer, r["name"], r["value"])
        elif kind in ("PartitionRecord", "PartitionChangeRecord"):
            name = self._names.get(uuid.UUID(r["topic_id"]))
            if name is None:
                return False
            _check_partition_record(r)  # before anything changes: a bad one changes nothing
            topic_id, parts = self._topics[name]
            if name not in copied:
                parts = dict(parts)
                self._topics[name] = (topic_id, parts)
                copied.add(name)
            if r["partition_id"] not in parts:
                grown.add(name)
            # The partition epoch too: AlterPartition is checked against it.
            parts[r["partition_id"]] = PartitionState(
                r["leader"], r["leader_epoch"], list(r["replicas"]), list(r["isr"]),
                r.get("partition_epoch", 0))
        elif kind == "RemoveTopicRecord":
            name = self._names.pop(uuid.UUID(r["topic_id"]), None)
            if name is not None:
                del self._topics[name]
                removed.add(name)
                new.pop(name, None)
                grown.discard(name)  # grown, then deleted, in the same records
        elif kind in ("RegisterBrokerRecord", "UnfenceBrokerRecord"):
            self._brokers[r["broker_id"]] = (r["host"], r["port"])
            return True
        elif kind == "FenceBrokerRecord":
            self._brokers.pop(r["broker_id"], None)
            return True
        elif kind == "ClientQuotaRecord":
            quotas.append(r)
        elif kind == ACCESS_CONTROL_ENTRY_RECORD and self.authorizer is not None:
            self.authorizer.add_acl(str(r["id"]), acl_of_record(r))  # Kafka's AclPublisher
        elif kind == REMOVE_ACCESS_CONTROL_ENTRY_RECORD and self.authorizer is not None:
            self.authorizer.remove_acl(str(r["id"]))
        return False

    def _publish(self, new: dict[str, dict[str, str]], removed: set[str],
                 grown: set[str], changed: set[str] | None = None) -> None:
        """Hand the image to the metadata cache and the replica manager; ``changed``: the
        topics whose partitions these records touched (None: the whole image, as at a start),
        so that a hundred new partitions cost the same among ten thousand as among none
        (Kafka's brokers apply a ``TopicsDelta``, not the image)."""
        # First, so that the topics stay to be applied if anything below fails (the records
        # are behind this broker's offset already: no later turn would name them again).
        if changed is None or self._unapplied is None:
            self._unapplied = None
        else:
            self._unapplied |= changed
        cache = self.metadata_cache
        for name in removed:  # deleted (or deleted and created again): its old logs go first
            meta = cache.get(name)
            if meta is not None and (name not in self._topics
                                     or meta.topic_id != self._topics[name][0]):
                self._delete_topic(name)
        with cache.batch():
            for name, configs in new.items():
                topic_id, parts = self._topics[name]
                cache.add_topic(name, len(parts), configs, topic_id)
            for name in grown - new.keys():
                cache.grow_topic(name, len(self._topics[name][1]))  # CreatePartitions
        try:
            self.replicas.apply_image(self._brokers, self._topics, self._unapplied)
        except Exception:
            # One topic that cannot be applied must not keep the others (and every later
            # pull) from being applied: again topic by topic, each failure said once and
            # skipped.  (Costs a pass over the image per topic: only when something failed.)
            touched = set(self._topics) if self._unapplied is None else set(self._unapplied)
            for name in sorted(touched & self._topics.keys()):
                try:
                    self.replicas.apply_image(self._brokers, self._topics, {name})
                except Exception as exc:
                    log.error("broker %d: cannot apply the partitions of topic %s (%s: %s); "
                              "skipped until the controller changes them", self.broker_id,
                              name, type(exc).__name__, exc)
        self._unapplied = set()

    def _apply_image(self, end_offset: int) -> None:
        """Take the controller's whole image (a Metadata request for every topic): for a
        broker behind the controller's last snapshot.  Records up to ``end_offset`` are in it;
        those after it are fetched next (replaying one the image holds changes nothing)."""
        body = codec.REQUESTS[ApiKey.METADATA].body.defaults(METADATA_VERSION)
        body.update(topics=None, allow_auto_topic_creation=False)
        response = self._client.send(ApiKey.METADATA, METADATA_VERSION, body)
        self._brokers = {b["node_id"]: (b["host"], b["port"]) for b in response["brokers"]}
        topics: Topics = {}
        for t in response["topics"]:
            topics[t["name"]] = (t["topic_id"], {p["partition_index"]: PartitionState(
                p["leader_id"], p["leader_epoch"], list(p["replica_nodes"]),
                list(p["isr_nodes"])) for p in t["partitions"]})
        cache = self.metadata_cache
        new = [name for name in topics if cache.get(name) is None or
               cache.get(name).topic_id != topics[name][0]]
        # The whole image: every topic's configs and this broker's dynamic configs.
        configs, broker_configs = self._describe_configs(list(topics))
        removed = {t.name for t in cache.topics() if t.name not in topics} | {
            name for name in new if cache.get(name) is not None}
        grown = {name for name, (_, parts) in topics.items()
                 if (meta := cache.get(name)) is not None and len(parts) > meta.partitions}
        self._topics = topics
        self._names = {topic_id: name for name, (topic_id, _) in topics.items()}
        self._offset = end_offset
        wanted = {name: configs.get(name, {}) for name in new}
        self._quarantine_bad_configs(wanted, grown)
        self._publish(wanted, removed, grown)
        self._apply_config_changes(configs, broker_configs)
        self.metadata_cache.replace_client_quotas(self._describe_client_quotas())
        if self.authorizer is not None:
            self._load_acls()

    def _load_acls(self) -> None:
        """Replace the authorizer's ACLs with the controller's, all of them in one DescribeAcls:
        the image's part for a broker behind the controller's snapshot (the ACL records after
        it are replayed next)."""
        response = self._client.send(ApiKey.DESCRIBE_ACLS, DESCRIBE_ACLS_VERSION, {
            "resource_type_filter": ResourceType.ANY, "resource_name_filter": None,
            "pattern_type_filter": PatternType.ANY, "principal_filter": None,
            "host_filter": None, "operation": AclOperation.ANY,
            "permission_type": AclPermissionType.ANY})
        if response["error_code"] != Errors.NONE:
            raise ConnectionError(f"DescribeAcls refused by the controller: error "
                                  f"{response['error_code']}")
        self.authorizer.load_snapshot([
            AclBinding(ResourcePattern(ResourceType(r["resource_type"]), r["resource_name"],
                                       PatternType(r["pattern_type"])),
                       AccessControlEntry(a["principal"], a["host"], AclOperation(a["operation"]),
                                          AclPermissionType(a["permission_type"])))
            for r in response["resources"] for a in r["acls"]])

    def _delete_topic(self, name: str) -> None:
        """Forget a topic the controller deleted: its partitions first, then its logs."""
        meta = self.metadata_cache.remove_topic(name)
        if meta is None:
            return
        for p in range(meta.partitions):
            self.replicas.drop_partition((name, p))
            self.log_manager.delete_log(name, p)

    def _describe_configs(self, names: list[str]
                          ) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, str]]]:
        """The dynamic configs the controller keeps: each topic's own, and those of the broker
        resources that concern this broker ("" and its id)."""
        mine = ("", str(self.broker_id))
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

    def _describe_client_quotas(self) -> list[dict[str, Any]]:
        """Every client quota the controller keeps, as ClientQuotaRecords."""
        response = self._client.send(ApiKey.DESCRIBE_CLIENT_QUOTAS, DESCRIBE_CLIENT_QUOTAS_VERSION,
                                     {"components": [], "strict": False})
        if response["error_code"] != Errors.NONE:
            raise ConnectionError(f"DescribeClientQuotas refused by the controller: error "
                                  f"{response['error_code']}")
        return [client_quota_record(tuple((e["entity_type"], e["entity_name"])
                                          for e in entry["entity"]), v["key"], v["value"])
                for entry in response["entries"] or () for v in entry["values"]]

    def _apply_config_changes(self, topics: dict[str, dict[str, str]],
                              brokers: dict[str, dict[str, str]]) -> None:
        """Configs changed by AlterConfigs take effect here: topics' in their logs, the broker
        resources' in this broker's defaults."""
        cache = self.metadata_cache
        for name, configs in topics.items():
            meta = cache.get(name)
            try:
                if meta is not None and meta.configs != configs:
                    apply_topic_configs(self, name, configs)
            except InvalidConfigError as exc:  # one topic's: the others still change
                log.error("broker %d: cannot apply topic %s's new configs %s (%s); skipped",
                          self.broker_id, name, configs, exc)
        for name, configs in brokers.items():
            try:
                if self.dynamic_config.dynamic(name) != configs:
                    apply_broker_configs(self, name, configs)
            except errors.KafkaError as exc:
                log.error("broker %d: cannot apply the dynamic configs %s of %r (%s); "
                          "skipped", self.broker_id, configs, name, exc)
