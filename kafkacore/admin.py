"""Small administrative helpers built on our own protocol code: create topics, describe them.

They open a short-lived :class:`~kafkacore.network.client.NetworkClient`, do one thing, and close
it.  They are meant for tests, tutorials and demos, not for managing a production cluster.
"""

from __future__ import annotations

from collections.abc import Mapping

from kafkacore import errors
from kafkacore.metadata import Cluster, Metadata
from kafkacore.network.client import NetworkClient, clock_ms
from kafkacore.protocol.api_keys import ApiKey

TOPIC_ALREADY_EXISTS = 36


def create_topics(
    bootstrap: str,
    topics: Mapping[str, int],
    *,
    replication_factor: int = 1,
    timeout_ms: int = 10000,
    configs: Mapping[str, str] | None = None,
) -> dict[str, int]:
    """Create each ``name: num_partitions`` topic; returns name -> error code (0 = created).

    A topic that already exists is not an error (its code, 36, is in the result); any other
    error raises its :mod:`kafkacore.errors` class.  The request goes to the controller when the
    cluster names one, else to any broker.
    """
    if not topics:
        return {}
    for name, partitions in topics.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"topic names must be non-empty str, got {name!r}")
        if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1:
            raise ValueError(f"{name}: num_partitions must be an int >= 1, got {partitions!r}")
    body = {
        "topics": [
            {
                "name": name,
                "num_partitions": partitions,
                "replication_factor": replication_factor,
                "assignments": [],
                "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
            }
            for name, partitions in topics.items()
        ],
        "timeout_ms": timeout_ms,
        "validate_only": False,
    }
    deadline = clock_ms() + timeout_ms
    with NetworkClient(bootstrap, Metadata(), request_timeout_ms=timeout_ms) as client:
        cluster = refresh_metadata(client, deadline)
        node = cluster.controller_id if cluster.node(cluster.controller_id or -1) else None
        if node is None:
            node = cluster.nodes[0].node_id
        response = client.send_and_receive(
            node, ApiKey.CREATE_TOPICS, body, max(deadline - clock_ms(), 1)
        )
    if response.error is not None:
        raise response.error
    assert response.body is not None
    result = {}
    for topic in response.body["topics"]:
        code = topic["error_code"]
        if code and code != TOPIC_ALREADY_EXISTS:
            raise errors.for_code(code)(topic.get("error_message") or f"topic {topic['name']!r}")
        result[topic["name"]] = code
    return result


def describe_cluster(
    bootstrap: str, topics: list[str] | tuple[str, ...] = (), *, timeout_ms: int = 10000
) -> Cluster:
    """A metadata snapshot of the brokers and of ``topics`` (no topic is created)."""
    metadata = Metadata(allow_auto_topic_creation=False)
    for topic in topics:
        metadata.add_topic(topic)
    deadline = clock_ms() + timeout_ms
    with NetworkClient(bootstrap, metadata, request_timeout_ms=timeout_ms) as client:
        return refresh_metadata(client, deadline)


def list_partitions(bootstrap: str, topic: str, *, timeout_ms: int = 10000) -> list[int]:
    """The partition numbers of ``topic`` (empty if the broker does not know it)."""
    cluster = describe_cluster(bootstrap, [topic], timeout_ms=timeout_ms)
    return [p.partition for p in cluster.partitions_for_topic(topic)]


def refresh_metadata(client: NetworkClient, deadline: int) -> Cluster:
    """Poll ``client`` until its metadata holds a real (not bootstrap) cluster, by ``deadline``
    (:func:`~kafkacore.network.client.clock_ms`); raises ``KafkaTimeoutError`` after it."""
    metadata = client.metadata
    version = metadata.request_update()
    while metadata.version <= version or metadata.fetch().is_bootstrap:
        remaining = deadline - clock_ms()
        if remaining <= 0:
            raise errors.KafkaTimeoutError("no metadata from the cluster in time")
        client.poll(min(remaining, 100))
    return metadata.fetch()
