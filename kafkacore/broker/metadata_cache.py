"""MetadataCache: the topics this broker knows (Kafka's ``MetadataCache``, fed here by itself).

In a Kafka cluster the controller owns the topics (their ids, partition counts and configs) and
every broker caches what it publishes.  This single broker is its own controller: it keeps the
topics in a small JSON file in the first log dir, rewritten atomically (temporary file, fsync,
rename, fsync of the directory) on every change, so that a restart, even after ``kill -9``, keeps
every topic it ever acknowledged creating.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from kafkacore.broker.files import replace_atomically
from kafkacore.errors import InvalidTopicError, KafkaStorageError

METADATA_FILE = "__kafkacore_metadata.json"

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


class MetadataCache:
    def __init__(self, log_dir: str | Path) -> None:
        self.path = Path(log_dir) / METADATA_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._topics: dict[str, TopicMetadata] = {}
        self._by_id: dict[uuid.UUID, str] = {}
        #: dynamic broker configs (Kafka's ConfigRecords of BROKER resources): resource name
        #: ("" for the cluster-wide default, else a broker id) -> name -> value
        self._broker_configs: dict[str, dict[str, str]] = {}
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            data = {"topics": []}
        except ValueError as exc:
            raise KafkaStorageError(f"{self.path} is damaged: {exc}") from None
        for t in data["topics"]:
            self._put(TopicMetadata(t["name"], uuid.UUID(t["id"]), t["partitions"], t["configs"]))
        self._broker_configs = data.get("broker_configs", {})

    def _put(self, topic: TopicMetadata) -> None:
        self._topics[topic.name] = topic
        self._by_id[topic.topic_id] = topic.name

    def get(self, name: str) -> TopicMetadata | None:
        return self._topics.get(name)

    def name_of(self, topic_id: uuid.UUID) -> str | None:
        return self._by_id.get(topic_id)

    def topics(self) -> list[TopicMetadata]:
        return sorted(self._topics.values(), key=lambda t: t.name)

    def add_topic(
        self,
        name: str,
        partitions: int,
        configs: dict[str, str] | None = None,
        topic_id: uuid.UUID | None = None,
    ) -> tuple[TopicMetadata, bool]:
        """Add ``name`` (persisted before returning); (the topic, False) if it already existed."""
        with self._lock:
            existing = self._topics.get(name)
            if existing is not None:
                return existing, False
            topic = TopicMetadata(name, topic_id or uuid.uuid4(), partitions, dict(configs or {}))
            self._put(topic)
            self._write()
            return topic, True

    def grow_topic(self, name: str, partitions: int) -> TopicMetadata | None:
        """Give ``name`` ``partitions`` partitions if it has fewer (persisted before returning;
        partitions are only ever added); None for an unknown topic."""
        with self._lock:
            topic = self._topics.get(name)
            if topic is not None and partitions > topic.partitions:
                topic.partitions = partitions
                self._write()
            return topic

    def alter_topic_configs(self, name: str, configs: dict[str, str]) -> TopicMetadata | None:
        """Replace ``name``'s own configs (persisted before returning); None for an unknown
        topic."""
        with self._lock:
            topic = self._topics.get(name)
            if topic is not None:
                topic.configs = dict(configs)
                self._write()
            return topic

    def broker_configs(self) -> dict[str, dict[str, str]]:
        """The dynamic broker configs: resource name ("" the default) -> name -> value."""
        with self._lock:
            return {k: dict(v) for k, v in self._broker_configs.items()}

    def alter_broker_configs(self, resource_name: str, configs: dict[str, str]) -> None:
        """Replace the dynamic configs of one broker resource (persisted before returning)."""
        with self._lock:
            if configs:
                self._broker_configs[resource_name] = dict(configs)
            else:
                self._broker_configs.pop(resource_name, None)
            self._write()

    def remove_topic(self, name: str) -> TopicMetadata | None:
        with self._lock:
            topic = self._topics.pop(name, None)
            if topic is not None:
                self._by_id.pop(topic.topic_id, None)
                self._write()
            return topic

    def _write(self) -> None:
        data = {
            "topics": [
                {"name": t.name, "id": str(t.topic_id), "partitions": t.partitions,
                 "configs": t.configs}
                for t in self.topics()
            ],
            "broker_configs": self._broker_configs,
        }
        replace_atomically(self.path, json.dumps(data, indent=1).encode())
