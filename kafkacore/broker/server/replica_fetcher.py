"""``ReplicaFetcherThread``: a follower copying its leader's log (Kafka's ``ReplicaFetcherThread``
and ``ReplicaFetcherManager``).

One thread per source broker fetches every partition this broker follows there.  Before fetching
a partition under a new leader epoch it asks the leader where its own latest epoch ends
(OffsetForLeaderEpoch) and truncates its log there, so that whatever an old leader wrote and the
new one never had is removed before the follower appends the new leader's batches.  The fetch
offset it sends is its log end offset: that is how the leader learns how far it got.
See docs/broker/replication.rst.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from kafkacore import errors
from kafkacore.broker.config.kafka_config import BrokerConfig
from kafkacore.broker.network.faults import FaultInjector
from kafkacore.broker.server.fetch_session_handler import FetchSessionHandler
from kafkacore.broker.server.partition import Partition
from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
from kafkacore.broker.server_common.shutdownable_thread import ShutdownableThread
from kafkacore.errors import Errors
from kafkacore.network.sasl import SaslMechanism
from kafkacore.protocol.api_keys import ApiKey

log = logging.getLogger(__name__)

FETCH_VERSION = 16
OFFSET_FOR_LEADER_EPOCH_VERSION = 4
#: top-level errors that only end the fetch session: the next fetch, a full one, goes at once
SESSION_ERRORS = (Errors.FETCH_SESSION_ID_NOT_FOUND, Errors.INVALID_FETCH_SESSION_EPOCH,
                  Errors.FETCH_SESSION_TOPIC_ID_ERROR)


def _by_topic(items: Any) -> list[dict[str, Any]]:
    """``[((topic id, index), entry), ...]`` as a request's ``{"topic_id", "partitions"}``."""
    grouped: dict[Any, list[Any]] = {}
    for key, entry in items:
        grouped.setdefault(key[0], []).append(entry)
    return [{"topic_id": topic_id, "partitions": entries}
            for topic_id, entries in grouped.items()]


class FollowerContext(Protocol):
    """What a follower's fetchers use of the :class:`ReplicaManager` that starts them: this
    broker's id and settings, the leaders' addresses, what their connections obey and
    authenticate with, and the broker's registration (its epoch rides on each fetch)."""

    @property
    def broker_id(self) -> int: ...

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def brokers(self) -> Mapping[int, tuple[str, int]]: ...

    @property
    def faults(self) -> FaultInjector: ...

    @property
    def inter_broker_sasl(self) -> Callable[[], SaslMechanism] | None: ...

    def lifecycle(self) -> Any:
        """The ``BrokerLifecycleManager`` (its ``broker_epoch``), None before it joins."""


class ReplicaFetcherThread(ShutdownableThread):
    def __init__(self, replica_manager: FollowerContext, source_broker_id: int) -> None:
        super().__init__(f"ReplicaFetcherThread-{replica_manager.broker_id}-{source_broker_id}")
        self.rm = replica_manager
        self.source_broker_id = source_broker_id
        self.config = replica_manager.config
        # Lock order: leaf (after ReplicaFetcherManager._lock). Guards _partitions.
        self._lock = threading.Lock()
        #: partitions followed here -> True while they must truncate before fetching
        self._partitions: dict[tuple[str, int], tuple[Partition, bool]] = {}
        self._stopping = threading.Event()
        self._client: InterBrokerClient | None = None
        self._address: tuple[str, int] | None = None
        #: the incremental fetch session with the leader (used by this thread only)
        self.session = FetchSessionHandler(source_broker_id)

    def add_partitions(self, partitions: list[Partition]) -> None:
        with self._lock:
            for p in partitions:
                self._partitions[p.key] = (p, True)

    def remove_partitions(self, keys: list[tuple[str, int]]) -> None:
        with self._lock:
            for key in keys:
                self._partitions.pop(key, None)

    def partition_count(self) -> int:
        with self._lock:
            return len(self._partitions)

    def shutdown(self, timeout_s: float = 5.0) -> None:
        self.initiate_shutdown()
        self._stopping.set()
        if self._client is not None:
            self._client.close()
        self.join(timeout_s)

    def _connect(self) -> InterBrokerClient | None:
        address = self.rm.brokers.get(self.source_broker_id)
        if address is None:
            return None
        if self._client is None or self._address != address:
            if self._client is not None:
                self._client.close()
            self._address = address
            self._client = InterBrokerClient(
                address[0], address[1], f"replica-fetcher-{self.rm.broker_id}",
                self.config["replica.socket.timeout.ms"] / 1000.0, self.rm.faults,
                sasl=self.rm.inter_broker_sasl)
        return self._client

    def _backoff(self) -> None:
        self._stopping.wait(self.config["replica.fetch.backoff.ms"] / 1000.0)

    def do_work(self) -> bool:
        """One fetch (or truncation) turn; supervised, so an error in it is logged and the
        next turn runs (ShutdownableThread)."""
        if self._stopping.is_set():
            return False
        if self.rm.faults.isolated:
            if self._client is not None:
                self._client.close()
            self._stopping.wait(0.1)
            return True
        client = self._connect()
        with self._lock:
            snapshot = dict(self._partitions)
        if client is None or not snapshot:
            self._stopping.wait(0.05)
            return True
        try:
            truncating = [p for p, t in snapshot.values() if t]
            if truncating:
                self._truncate_to_epoch_end_offsets(client, truncating)
                return True
            self._fetch(client, [p for p, _ in snapshot.values()])
        except OSError as exc:
            if not self._stopping.is_set():
                log.debug("%s: %s", self.name, exc)
                self._backoff()
        except Exception:
            log.exception("%s failed", self.name)
            self._backoff()
        return True

    def _truncate_to_epoch_end_offsets(self, client: InterBrokerClient,
                                       partitions: list[Partition]) -> None:
        """Kafka's ``truncateToEpochEndOffsets`` (KIP-101/KIP-279)."""
        by_topic: dict[str, list[Partition]] = {}
        for p in partitions:
            by_topic.setdefault(p.topic, []).append(p)
        epochs = {p.key: p.leader_epoch for p in partitions}  # the epochs this answer is for
        body = {"replica_id": self.rm.broker_id, "topics": [
            {"topic": topic, "partitions": [
                {"partition": p.index, "current_leader_epoch": epochs[p.key],
                 "leader_epoch": p.epoch_cache.latest_epoch if p.epoch_cache else -1}
                for p in parts]}
            for topic, parts in by_topic.items()]}
        response = client.send(ApiKey.OFFSET_FOR_LEADER_EPOCH, OFFSET_FOR_LEADER_EPOCH_VERSION,
                               body)
        retry = False
        for t in response["topics"]:
            for r in t["partitions"]:
                key = (t["topic"], r["partition"])
                with self._lock:
                    entry = self._partitions.get(key)
                if entry is None:
                    continue
                partition = entry[0]
                if r["error_code"] != Errors.NONE:
                    retry = True  # the leader does not know it leads yet: ask again soon
                    continue
                lg = partition.log
                leader_epoch, end_offset = r["leader_epoch"], r["end_offset"]
                if end_offset < 0:
                    # No common epoch: keep what is below our high watermark (Kafka's fallback).
                    target = lg.high_watermark
                else:
                    _, own_end = partition.end_offset_for_epoch(leader_epoch)
                    target = min(end_offset, own_end if own_end >= 0 else end_offset)
                if target < lg.log_end_offset:
                    log.info("broker %d: truncating %s-%d from %d to %d (leader epoch %d ends "
                             "at %d on the leader)", self.rm.broker_id, partition.topic,
                             partition.index, lg.log_end_offset, target, leader_epoch,
                             end_offset)
                    try:
                        partition.truncate_as_follower(target, epochs[key])
                    except (errors.NotLeaderOrFollowerError, errors.FencedLeaderEpochError):
                        continue  # its role changed meanwhile: the new role decides
                with self._lock:
                    if self._partitions.get(key, (None,))[0] is partition:
                        self._partitions[key] = (partition, False)
        if retry:
            self._stopping.wait(0.05)

    def _fetch(self, client: InterBrokerClient, partitions: list[Partition]) -> None:
        max_bytes = self.config["replica.fetch.max.bytes"]
        epochs = {p.key: p.leader_epoch for p in partitions}  # the epochs this fetch is under
        # Every partition as this fetch would name it; the session handler keeps those the
        # leader's session already has, unchanged, out of the request.
        wanted = {(p.topic_id, p.index): {
            "partition": p.index, "current_leader_epoch": epochs[p.key],
            "fetch_offset": p.log.log_end_offset,
            "last_fetched_epoch": p.epoch_cache.latest_epoch if p.epoch_cache else -1,
            "log_start_offset": p.log.log_start_offset, "partition_max_bytes": max_bytes}
            for p in partitions}
        request = self.session.build(wanted)
        body = {
            "replica_state": {"replica_id": self.rm.broker_id,
                              "replica_epoch": self.rm.lifecycle().broker_epoch},
            "max_wait_ms": self.config["replica.fetch.wait.max.ms"],
            "min_bytes": 1, "max_bytes": max(max_bytes, 10 * 1024 * 1024),
            "isolation_level": 0, "session_id": request.session_id,
            "session_epoch": request.epoch,
            "topics": _by_topic(request.to_send.items()),
            "forgotten_topics_data": _by_topic((k, k[1]) for k in request.to_forget),
            "rack_id": "",
        }
        wait_s = self.config["replica.fetch.wait.max.ms"] / 1000.0
        try:
            response = client.send(ApiKey.FETCH, FETCH_VERSION, body, timeout_s=wait_s
                                   + self.config["replica.socket.timeout.ms"] / 1000)
        except BaseException:
            self.session.handle_error()
            raise
        answered = {(t["topic_id"], r["partition_index"]) for t in response["responses"]
                    for r in t["partitions"]}
        if not self.session.handle_response(request, response, answered):
            # Refused; the next fetch is full.  After a session error (or an answer that did
            # not match the session) it goes at once, after any other error once backed off.
            if response["error_code"] not in (Errors.NONE, *SESSION_ERRORS):
                self._backoff()
            return
        # Found by (topic id, index) in one lookup: a scan per answer was quadratic in the
        # partitions fetched, half a follower's time at 3,000 of them.
        by_id = {(p.topic_id, p.index): p for p in partitions}
        errored = False
        for t in response["responses"]:
            for r in t["partitions"]:
                partition = by_id.get((t["topic_id"], r["partition_index"]))
                if partition is None:
                    continue
                with self._lock:  # removed (role change) while we fetched: drop the data
                    current = self._partitions.get(partition.key)
                if current is None or current[0] is not partition or current[1]:
                    continue
                if r["error_code"] == Errors.OFFSET_OUT_OF_RANGE:
                    with self._lock:
                        self._partitions[partition.key] = (partition, True)
                    errored = True
                    continue
                if r["error_code"] != Errors.NONE:
                    errored = True
                    continue
                records = r["records"]
                if records and partition.log.log_end_offset != int.from_bytes(
                        records[:8], "big"):
                    continue  # the log moved meanwhile (truncation): fetch again
                try:
                    partition.append_records_to_follower(
                        records, r["high_watermark"], epochs[partition.key],
                        r.get("log_start_offset", -1))
                except (errors.NotLeaderOrFollowerError, errors.FencedLeaderEpochError):
                    continue  # its role changed while we fetched: the data is not ours
        if errored:
            self._stopping.wait(0.1)


class ReplicaFetcherManager:
    """One :class:`ReplicaFetcherThread` per leader this broker follows partitions on."""

    def __init__(self, replica_manager: FollowerContext) -> None:
        self.rm = replica_manager
        # Lock order: before ReplicaFetcherThread._lock. Guards _threads.
        self._lock = threading.Lock()
        self._threads: dict[int, ReplicaFetcherThread] = {}

    def add_partitions(self, leaders: dict[Partition, int]) -> None:
        with self._lock:
            for partition, leader in leaders.items():
                thread = self._threads.get(leader)
                if thread is None:
                    thread = self._threads[leader] = ReplicaFetcherThread(self.rm, leader)
                    thread.start()
                thread.add_partitions([partition])

    def remove_partitions(self, keys: list[tuple[str, int]]) -> None:
        with self._lock:
            for thread in self._threads.values():
                thread.remove_partitions(keys)

    def fetcher_for(self, key: tuple[str, int]) -> int | None:
        """The broker this one fetches ``key`` from, or None (Kafka's ``getFetcher``)."""
        with self._lock:
            for source, thread in self._threads.items():
                with thread._lock:  # noqa: SLF001 - the manager owns its threads
                    if key in thread._partitions:  # noqa: SLF001
                        return source
        return None

    def shutdown(self) -> None:
        with self._lock:
            threads = list(self._threads.values())
            self._threads.clear()
        for t in threads:
            t.shutdown()
