"""Small administrative helpers built on our own protocol code: create topics, describe them,
find and abort hanging transactions (what Kafka's ``kafka-transactions.sh find-hanging`` and
``abort`` do).

They open a short-lived :class:`~kafkacore.network.client.NetworkClient`, do one thing, and close
it.  They are meant for tests, tutorials and demos, not for managing a production cluster.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kafkacore import errors
from kafkacore.errors import Errors
from kafkacore.metadata import Cluster, Metadata
from kafkacore.network.client import NetworkClient, clock_ms
from kafkacore.protocol.api_keys import ApiKey


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
    result = {}
    for topic in response.response_body()["topics"]:
        code = topic["error_code"]
        if code and code != Errors.TOPIC_ALREADY_EXISTS:
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


# -- hanging transactions (Kafka's ``kafka-transactions.sh find-hanging`` and ``abort``) ----------

#: the tool's default ``--max-transaction-timeout``: a transaction open longer than any producer
#: may keep one (``transaction.max.timeout.ms``, 15 minutes by default) is a candidate
DEFAULT_MAX_TRANSACTION_TIMEOUT_MS = 15 * 60 * 1000
_COORDINATOR_TYPE_TRANSACTION = 1


@dataclass(frozen=True)
class HangingTransaction:
    """An open transaction in a partition that no coordinator will end: the fields
    :func:`abort_transaction` needs, and what ``find-hanging`` prints."""

    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    #: the epoch of the coordinator that last wrote a marker for the producer here (-1: none)
    coordinator_epoch: int
    #: the offset of the transaction's first batch in the partition
    start_offset: int
    #: when the producer last wrote to the partition (ms since the epoch)
    last_timestamp: int
    #: the producer's transactional id, if a coordinator still knows the producer id
    transactional_id: str | None = None


def find_hanging_transactions(
    bootstrap: str,
    topics: Iterable[str] | None = None,
    *,
    max_transaction_timeout_ms: int = DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
    timeout_ms: int = 10000,
) -> list[HangingTransaction]:
    """The transactions open in ``topics`` (every topic if None) that no coordinator will end,
    as ``kafka-transactions.sh find-hanging`` finds them.

    DescribeProducers at each partition's leader gives the producers with a transaction open
    there for longer than ``max_transaction_timeout_ms``; ListTransactions at every broker
    maps their producer ids to transactional ids, and DescribeTransactions at each id's
    coordinator says which partitions its transaction has.  A transaction is hanging when no
    coordinator knows its producer id, or when the coordinator's transaction does not have the
    partition (it ended, or it is another one).
    """
    deadline = clock_ms() + timeout_ms
    metadata = Metadata(allow_auto_topic_creation=False)
    if topics is None:
        metadata.all_topics = True
    else:
        for topic in topics:
            metadata.add_topic(topic)
    with NetworkClient(bootstrap, metadata, request_timeout_ms=timeout_ms) as client:
        cluster = refresh_metadata(client, deadline)
        wanted = sorted(metadata.topics() if topics is None else set(topics))
        by_leader: dict[int, dict[str, list[int]]] = {}
        for topic in wanted:
            for p in cluster.partitions_for_topic(topic):
                if p.leader is None:
                    raise errors.LeaderNotAvailableError(f"{topic}-{p.partition} has no leader")
                by_leader.setdefault(p.leader, {}).setdefault(topic, []).append(p.partition)
        now = int(time.time() * 1000)
        candidates: list[HangingTransaction] = []
        for leader, parts in sorted(by_leader.items()):
            body = _send(client, leader, ApiKey.DESCRIBE_PRODUCERS, {"topics": [
                {"name": t, "partition_indexes": sorted(ps)} for t, ps in parts.items()]},
                deadline)
            for t in body["topics"]:
                for p in t["partitions"]:
                    if p["error_code"]:
                        raise errors.for_code(p["error_code"])(
                            p.get("error_message") or f"{t['name']}-{p['partition_index']}")
                    candidates.extend(
                        HangingTransaction(t["name"], p["partition_index"], a["producer_id"],
                                           a["producer_epoch"], a["coordinator_epoch"],
                                           a["current_txn_start_offset"], a["last_timestamp"])
                        for a in p["active_producers"]
                        if a["current_txn_start_offset"] >= 0
                        and now - a["last_timestamp"] > max_transaction_timeout_ms)
        if not candidates:
            return []
        producer_ids = sorted({c.producer_id for c in candidates})
        transactional_ids: dict[int, str] = {}
        for node in cluster.nodes:
            body = _send(client, node.node_id, ApiKey.LIST_TRANSACTIONS, {
                "state_filters": [], "producer_id_filters": producer_ids,
                "duration_filter": -1}, deadline)
            _raise_for(body["error_code"], "ListTransactions")
            for listed in body["transaction_states"]:
                if listed["producer_id"] in producer_ids:
                    transactional_ids[listed["producer_id"]] = listed["transactional_id"]
        partitions_of: dict[str, set[tuple[str, int]]] = {}
        for txn_id in set(transactional_ids.values()):
            found = _send(client, cluster.nodes[0].node_id, ApiKey.FIND_COORDINATOR, {
                "key_type": _COORDINATOR_TYPE_TRANSACTION, "coordinator_keys": [txn_id]},
                deadline)
            [coordinator] = found["coordinators"]
            _raise_for(coordinator["error_code"], f"FindCoordinator {txn_id!r}")
            body = _send(client, coordinator["node_id"], ApiKey.DESCRIBE_TRANSACTIONS,
                         {"transactional_ids": [txn_id]}, deadline)
            [state] = body["transaction_states"]
            if state["error_code"] == Errors.TRANSACTIONAL_ID_NOT_FOUND:
                continue
            _raise_for(state["error_code"], f"DescribeTransactions {txn_id!r}")
            if state["producer_id"] in producer_ids:
                partitions_of[txn_id] = {(t["topic"], p) for t in state["topics"]
                                         for p in t["partitions"]}
    hanging = []
    for c in candidates:
        owner = transactional_ids.get(c.producer_id)
        if owner is None or (c.topic, c.partition) not in partitions_of.get(owner, set()):
            hanging.append(HangingTransaction(**{**c.__dict__, "transactional_id": owner}))
    return hanging


def abort_transaction(
    bootstrap: str,
    topic: str,
    partition: int,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    *,
    timeout_ms: int = 10000,
) -> None:
    """Abort a hanging transaction in one partition (``kafka-transactions.sh abort``): an
    ABORT marker written by the partition's leader, as a coordinator would (WriteTxnMarkers;
    the caller needs CLUSTER_ACTION).  The values come from :func:`find_hanging_transactions`.

    The records of the transaction become aborted, and the partition's last stable offset moves
    past them: ``read_committed`` consumers go on.  A marker with an older coordinator epoch
    than the partition's last one is refused (TRANSACTION_COORDINATOR_FENCED), as it must be.
    """
    deadline = clock_ms() + timeout_ms
    metadata = Metadata(allow_auto_topic_creation=False)
    metadata.add_topic(topic)
    with NetworkClient(bootstrap, metadata, request_timeout_ms=timeout_ms) as client:
        cluster = refresh_metadata(client, deadline)
        leader = cluster.leader_for(topic, partition)
        if leader is None:
            raise errors.UnknownTopicOrPartitionError(f"{topic}-{partition} has no leader")
        body = _send(client, leader, ApiKey.WRITE_TXN_MARKERS, {"markers": [{
            "producer_id": producer_id, "producer_epoch": producer_epoch,
            "transaction_result": False, "coordinator_epoch": coordinator_epoch,
            "topics": [{"name": topic, "partition_indexes": [partition]}]}]}, deadline)
    [marker] = body["markers"]
    [t] = marker["topics"]
    [p] = t["partitions"]
    _raise_for(p["error_code"], f"the ABORT marker in {topic}-{partition}")


def _send(client: NetworkClient, node: int, api: ApiKey, body: dict[str, object],
          deadline: int) -> dict[str, Any]:
    response = client.send_and_receive(node, api, body, max(deadline - clock_ms(), 1))
    return response.response_body()


def _raise_for(code: int, what: str) -> None:
    if code != Errors.NONE:
        raise errors.for_code(code)(what)
