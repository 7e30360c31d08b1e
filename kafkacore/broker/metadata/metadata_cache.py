"""MetadataCache: the topics this broker knows (Kafka's ``MetadataCache``, fed here by itself).

In a Kafka cluster the controller owns the topics (their ids, partition counts and configs) and
every broker caches what it publishes.  This single broker is its own controller: each change is
a few records (``TopicRecord``, ``PartitionRecord``, ``ConfigRecord``, ``RemoveTopicRecord``)
appended to a :class:`~kafkacore.broker.metadata.metadata_log.MetadataLog` in the first log dir and
fsync'd before the change is published, so that a restart, even after ``kill -9``, keeps every
topic it ever acknowledged creating.  A change costs its own records, whatever the number of
topics; the whole state is written only as an occasional snapshot.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkacore.broker.config.config_resource import (
    RESOURCE_TYPE_BROKER,
    RESOURCE_TYPE_GROUP,
    RESOURCE_TYPE_TOPIC,
)
from kafkacore.broker.metadata.client_quota_control_manager import (
    ClientQuotaControlManager,
    Entity,
    client_quota_record,
)
from kafkacore.broker.metadata.metadata_log import MetadataLog, Record
from kafkacore.errors import InvalidTopicError

#: the metadata log's files in the first log dir: ``<name>.log`` and the snapshot ``<name>.json``
METADATA_LOG_NAME = "__kafkacore_metadata"

#: Kafka's ``Topic.validate``: at most 249 characters, ASCII letters, digits, '.', '_' and '-'.
MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")


def validate_topic_name(name: str | None) -> None:
    """Raise :class:`~kafkacore.errors.InvalidTopicError` unless Kafka accepts ``name``."""
    if not name:
        raise InvalidTopicError("topic name is empty")
    if name in (".", ".."):
        raise InvalidTopicError(f"topic name cannot be {name!r}")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidTopicError(f"topic name is longer than {MAX_NAME_LENGTH} characters")
    if not _LEGAL.match(name):
        raise InvalidTopicError(
            f"topic name {name!r} has characters other than ASCII letters, digits, '.', '_', '-'"
        )


@dataclass
class TopicMetadata:
    name: str
    topic_id: uuid.UUID
    partitions: int
    #: the topic's own configs (strings, as CreateTopics gives them); the rest are defaults
    configs: dict[str, str] = field(default_factory=dict)




def _config_changes(kind: int, name: str, old: dict[str, str],
                    new: dict[str, str]) -> list[Record]:
    """The ConfigRecords that turn ``old`` into ``new`` (a null value: back to the default)."""
    return [{"type": "ConfigRecord", "resource_type": kind, "resource_name": name, "name": key,
             "value": new.get(key)}
            for key in sorted(set(old) | set(new)) if old.get(key) != new.get(key)]


def _entity(record: Record) -> Entity:
    """A ClientQuotaRecord's entity."""
    return tuple(sorted((e["entity_type"], e["entity_name"]) for e in record["entity"]))


class MetadataCache:
    """The topics by name and by id.  Readers take no lock: a change is published (the dicts
    updated) only after its records are on disk."""

    def __init__(self, log_dir: str | Path) -> None:
        self.metadata_log = MetadataLog(log_dir, METADATA_LOG_NAME)
        #: guards changes (records and the dicts); reentrant, for :meth:`batch`
        # Lock order: after 3; held across batch() (one CreateTopics): no order 4-7 inside.
        self._lock = threading.RLock()
        self._topics: dict[str, TopicMetadata] = {}
        self._by_id: dict[uuid.UUID, str] = {}
        #: dynamic broker configs (ConfigRecords of BROKER resources): resource name ("" for
        #: the cluster-wide default, else a broker id) -> name -> value
        self._broker_configs: dict[str, dict[str, str]] = {}
        #: GROUP resources' configs (ConfigRecords of GROUP resources): group id -> name -> value
        self._group_configs: dict[str, dict[str, str]] = {}
        #: records of the open batch, not yet on disk, and the names they create
        self._pending: list[Record] = []
        self._pending_names: set[str] = set()
        self._batch_depth = 0
        snapshot, records = self.metadata_log.load()
        for t in (snapshot or {}).get("topics", []):
            topic = TopicMetadata(t["name"], uuid.UUID(t["id"]), t["partitions"], t["configs"])
            self._topics[topic.name] = topic
            self._by_id[topic.topic_id] = topic.name
        self._broker_configs = (snapshot or {}).get("broker_configs", {})
        self._group_configs = (snapshot or {}).get("group_configs", {})
        #: client quotas (ClientQuotaRecords), and who hears of a change (the quota managers)
        self.client_quotas = ClientQuotaControlManager()
        self.on_client_quotas: Callable[[dict[Entity, dict[str, float]]], None] | None = None
        for r in (snapshot or {}).get("client_quotas", []):
            self.client_quotas.replay(r)
        for record in records:
            self._replay(record)

    def get(self, name: str) -> TopicMetadata | None:
        return self._topics.get(name)

    def name_of(self, topic_id: uuid.UUID) -> str | None:
        return self._by_id.get(topic_id)

    def topics(self) -> list[TopicMetadata]:
        return sorted(self._topics.values(), key=lambda t: t.name)

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Changes made inside are appended as one batch, with one fsync, when the outermost
        ``batch`` ends (one CreateTopics request's topics); they are published then too."""
        with self._lock:
            self._batch_depth += 1
            try:
                yield
            finally:
                self._batch_depth -= 1
                if self._batch_depth == 0:
                    self._commit()

    def add_topic(
        self,
        name: str,
        partitions: int,
        configs: dict[str, str] | None = None,
        topic_id: uuid.UUID | None = None,
    ) -> tuple[TopicMetadata, bool]:
        """Add ``name`` (persisted before returning, or at the end of the open :meth:`batch`);
        (the topic, False) if it already existed."""
        with self._lock:
            existing = self._topics.get(name)
            if existing is not None:
                return existing, False
            if name in self._pending_names:
                return TopicMetadata(name, uuid.UUID(int=0), 0), False
            topic = TopicMetadata(name, topic_id or uuid.uuid4(), partitions, dict(configs or {}))
            tid = str(topic.topic_id)
            self._pending_names.add(name)
            self._change([{"type": "TopicRecord", "name": name, "topic_id": tid},
                          *({"type": "ConfigRecord", "resource_name": name, "name": k,
                             "value": v} for k, v in topic.configs.items()),
                          *({"type": "PartitionRecord", "topic_id": tid, "partition_id": p}
                            for p in range(partitions))])
            return topic, True

    def grow_topic(self, name: str, partitions: int) -> TopicMetadata | None:
        """Give ``name`` ``partitions`` partitions if it has fewer (persisted before returning;
        partitions are only ever added); None for an unknown topic."""
        with self._lock:
            topic = self._topics.get(name)
            if topic is not None and partitions > topic.partitions:
                tid = str(topic.topic_id)
                self._change([{"type": "PartitionRecord", "topic_id": tid, "partition_id": p}
                              for p in range(topic.partitions, partitions)])
            return topic

    def alter_topic_configs(self, name: str, configs: dict[str, str]) -> TopicMetadata | None:
        """Replace ``name``'s own configs (ConfigRecords, on disk before returning); None for an
        unknown topic."""
        with self._lock:
            topic = self._topics.get(name)
            if topic is not None:
                self._change(_config_changes(RESOURCE_TYPE_TOPIC, name, topic.configs, configs))
            return topic

    def broker_configs(self) -> dict[str, dict[str, str]]:
        """The dynamic broker configs: resource name ("" the default) -> name -> value."""
        with self._lock:
            return {k: dict(v) for k, v in self._broker_configs.items()}

    def alter_broker_configs(self, resource_name: str, configs: dict[str, str]) -> None:
        """Replace the dynamic configs of one broker resource (persisted before returning)."""
        with self._lock:
            self._change(_config_changes(RESOURCE_TYPE_BROKER, resource_name,
                                         self._broker_configs.get(resource_name, {}), configs))

    def group_configs(self, group_id: str) -> dict[str, str]:
        """A group's own configs (GROUP resource), a copy."""
        with self._lock:
            return dict(self._group_configs.get(group_id, {}))

    def alter_group_configs(self, group_id: str, configs: dict[str, str], *,
                            persist: bool = True) -> None:
        """Replace the configs of one group (persisted before returning; ``persist=False``:
        in memory only, for a broker of a cluster, whose metadata log is the controller's)."""
        with self._lock:
            if not persist:
                self._group_configs[group_id] = dict(configs)
                return
            self._change(_config_changes(RESOURCE_TYPE_GROUP, group_id,
                                         self._group_configs.get(group_id, {}), configs))

    def alter_client_quotas(self, entries: list[dict[str, Any]], validate_only: bool
                            ) -> list[dict[str, Any]]:
        """AlterClientQuotas on a broker alone: each entry's answer; the accepted changes
        persisted before returning."""
        with self._lock:
            scratch = ClientQuotaControlManager()  # published only once on disk
            scratch.quotas = {e: dict(v) for e, v in self.client_quotas.quotas.items()}
            results, records = scratch.alter(entries, validate_only)
            self._change(records)
            return results

    def describe_client_quotas(self, components: list[dict[str, Any]], strict: bool
                               ) -> list[dict[str, Any]]:
        """DescribeClientQuotas from this image (a bad filter raises InvalidRequestError)."""
        with self._lock:  # replays change the dicts
            return self.client_quotas.describe(components, strict)

    def apply_client_quota_records(self, records: list[Record]) -> None:
        """The controller's ClientQuotaRecords: those that change something, persisted."""
        with self._lock:
            self._change([r for r in records
                          if self.client_quotas.quotas.get(_entity(r), {}).get(r["key"])
                          != r["value"]])

    def replace_client_quotas(self, quotas: list[Record]) -> None:
        """Make the quotas those of ``quotas`` (records of every quota, from a whole image)."""
        with self._lock:
            wanted = {(_entity(r), r["key"]): r for r in quotas}
            gone = [client_quota_record(entity, key, None)
                    for entity, values in self.client_quotas.quotas.items() for key in values
                    if (entity, key) not in wanted]
            self.apply_client_quota_records(gone + list(wanted.values()))

    def remove_topic(self, name: str) -> TopicMetadata | None:
        with self._lock:
            topic = self._topics.get(name)
            if topic is not None:
                self._change([{"type": "RemoveTopicRecord", "topic_id": str(topic.topic_id)}])
            return topic

    # -- records -----------------------------------------------------------------------------------

    def _change(self, records: list[Record]) -> None:
        self._pending.extend(records)
        if self._batch_depth == 0:
            self._commit()

    def _commit(self) -> None:
        """Append the pending records (one write, one fsync), then publish them."""
        records, self._pending = self._pending, []
        self._pending_names.clear()
        if not records:
            return
        self.metadata_log.append(records)
        for record in records:
            self._replay(record)
        self.metadata_log.maybe_snapshot(self._snapshot)

    def _replay(self, r: Record) -> None:
        """Apply one record to the dicts (Kafka's ``MetadataDelta`` replay)."""
        kind = r["type"]
        if kind == "TopicRecord":
            topic = TopicMetadata(r["name"], uuid.UUID(r["topic_id"]), 0)
            self._topics[topic.name] = topic
            self._by_id[topic.topic_id] = topic.name
        elif kind == "PartitionRecord":
            topic = self._topics[self._by_id[uuid.UUID(r["topic_id"])]]
            topic.partitions = max(topic.partitions, r["partition_id"] + 1)
        elif kind == "ConfigRecord":
            if r.get("resource_type", RESOURCE_TYPE_TOPIC) == RESOURCE_TYPE_TOPIC:
                configs = self._topics[r["resource_name"]].configs
            elif r["resource_type"] == RESOURCE_TYPE_GROUP:
                configs = self._group_configs.setdefault(r["resource_name"], {})
            else:
                configs = self._broker_configs.setdefault(r["resource_name"], {})
            if r["value"] is None:  # back to the default
                configs.pop(r["name"], None)
            else:
                configs[r["name"]] = r["value"]
        elif kind == "RemoveTopicRecord":
            name = self._by_id.pop(uuid.UUID(r["topic_id"]))
            del self._topics[name]
        elif kind == "ClientQuotaRecord":
            self.client_quotas.replay(r)
            if self.on_client_quotas is not None:
                self.on_client_quotas(self.client_quotas.quotas)

    def _snapshot(self) -> dict[str, Any]:
        return {"topics": [{"name": t.name, "id": str(t.topic_id), "partitions": t.partitions,
                            "configs": t.configs} for t in self._topics.values()],
                "broker_configs": self._broker_configs,
                "group_configs": {g: c for g, c in self._group_configs.items() if c},
                "client_quotas": self.client_quotas.records()}
