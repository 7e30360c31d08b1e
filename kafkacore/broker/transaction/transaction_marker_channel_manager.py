"""COMMIT and ABORT markers to every partition of a transaction (Kafka's
``TransactionMarkerChannelManager`` and the leader's side of WriteTxnMarkers).

Once PrepareCommit or PrepareAbort is written, the coordinator hands the transaction to this
manager: a thread sends one WriteTxnMarkers request to the leader of each partition (grouped by
leader, over the inter-broker path; a partition this broker leads is appended to directly, by the
same code that answers WriteTxnMarkers), retries the partitions whose leader moved or lacked
replicas, and, once every partition has its marker, calls the coordinator back to write
CompleteCommit or CompleteAbort.  It gives up on a transaction only when this broker no longer
coordinates it (the new coordinator finishes it after loading the PrepareCommit/PrepareAbort).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafkacore import errors
from kafkacore.broker.group.group_metadata_manager import OFFSETS_TOPIC, GroupMetadataManager
from kafkacore.broker.log.end_transaction_marker import end_transaction_marker
from kafkacore.broker.metadata.metadata_cache import MetadataCache
from kafkacore.broker.network.faults import FaultInjector
from kafkacore.broker.server_common.coordinator_collaborators import Replicas
from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
from kafkacore.broker.server_common.shutdownable_thread import ShutdownableThread
from kafkacore.errors import Errors
from kafkacore.network.sasl import SaslMechanism
from kafkacore.protocol.api_keys import ApiKey

log = logging.getLogger(__name__)

WRITE_TXN_MARKERS_VERSION = 1
#: between rounds for partitions whose marker failed (Kafka's ``retry.backoff.ms`` default);
#: doubled for each round in a row that failed, up to :data:`MAX_RETRY_BACKOFF_S`
RETRY_BACKOFF_S = 0.1
MAX_RETRY_BACKOFF_S = 1.0
#: the longest the sender waits for new work: bounds how late a due retry is noticed
_POLL_S = 0.5
#: how long one round waits for the leaders' answers
REQUEST_TIMEOUT_MS = 30000

TopicPartition = tuple[str, int]
MarkersCallback = Callable[[dict[TopicPartition, int]], None]


def append_txn_markers(replicas: Replicas, group_manager: GroupMetadataManager,
                       markers: list[dict[str, Any]], callback: MarkersCallback) -> None:
    """The leader's side of WriteTxnMarkers (Kafka's ``handleWriteTxnMarkersRequest``): one
    control batch per marker and partition, appended as leader with acks=all; ``callback`` gets
    each (producer id, topic, partition)'s error once the ISR has them or they failed.
    ``group_manager`` settles the transactional offset commits a marker in
    ``__consumer_offsets`` ends."""
    rm = replicas
    now = int(time.time() * 1000)
    pending = {"count": 0}
    results: dict[Any, int] = {}
    # Lock order: leaf. Guards this call's fan-in count and results.
    lock = threading.Lock()
    batches: list[tuple[int, bool, dict[TopicPartition, tuple[dict[str, Any], bytes]]]] = []
    for m in markers:
        entries = {}
        for t in m["topics"]:
            for index in t["partition_indexes"]:
                response: dict[str, Any] = {"error_code": Errors.NONE, "base_offset": -1,
                                            "error_message": None}
                entries[(t["name"], index)] = (response, end_transaction_marker(
                    m["producer_id"], m["producer_epoch"], m["transaction_result"],
                    m["coordinator_epoch"], now))
        batches.append((m["producer_id"], m["transaction_result"], entries))
        pending["count"] += 1
    if not batches:
        callback({})
        return

    def done(pid: int, commit: bool, got: dict[TopicPartition, dict[str, Any]]) -> None:
        # The group coordinator's pending transactional offsets become committed (or are
        # dropped) once the marker is in their offsets partition.
        offsets_partitions = {p for (t, p), r in got.items()
                              if t == OFFSETS_TOPIC and r["error_code"] == Errors.NONE}
        if offsets_partitions:
            group_manager.handle_txn_completion(
                pid, offsets_partitions, commit)
        with lock:
            for tp, r in got.items():
                results[(pid, *tp)] = r["error_code"]
            pending["count"] -= 1
            finished = pending["count"] == 0
        if finished:
            callback(results)

    for pid, commit, entries in batches:
        rm.append_records(REQUEST_TIMEOUT_MS, -1, entries,
                          lambda got, pid=pid, commit=commit: done(pid, commit, got),
                          from_coordinator=True)


@dataclass
class TxnMarkerEntry:
    """One transaction's markers still to write."""

    transactional_id: str
    coordinator_epoch: int
    producer_id: int
    producer_epoch: int
    commit: bool
    partitions: set[TopicPartition]
    #: called (on the manager's thread) once every partition has its marker
    on_complete: Callable[[], None]
    attempts: int = field(default=0)


class TransactionMarkerChannelManager:
    def __init__(self, broker_id: int, *, metadata_cache: MetadataCache, replicas: Replicas,
                 group_manager: GroupMetadataManager,
                 still_coordinating: Callable[[TxnMarkerEntry], bool],
                 faults: FaultInjector | None = None,
                 inter_broker_sasl: Callable[[], SaslMechanism] | None = None) -> None:
        self.broker_id = broker_id
        self.metadata_cache = metadata_cache
        #: the replica manager: who leads a partition, and the appends of our own markers
        self.replicas = replicas
        self.group_manager = group_manager
        #: for the connections to the other leaders (InterBrokerClient)
        self.faults = faults
        self.inter_broker_sasl = inter_broker_sasl
        self.still_coordinating = still_coordinating
        self._queue: queue.Queue[TxnMarkerEntry | None] = queue.Queue()
        self._clients: dict[int, InterBrokerClient] = {}
        self._thread: ShutdownableThread | None = None
        # Entries waiting for their next round: (due, seq, entry), a heap only the sender
        # thread touches.  A failed round waits here, not in a sleep of the sender, so the
        # other transactions' markers go out meanwhile (Kafka retries through its queue too).
        self._retries: list[tuple[float, int, TxnMarkerEntry]] = []
        self._seq = itertools.count()

    def append_markers(self, markers: list[dict[str, Any]], callback: MarkersCallback) -> None:
        """WriteTxnMarkers to this broker, as its leader: see :func:`append_txn_markers`."""
        append_txn_markers(self.replicas, self.group_manager, markers, callback)

    @property
    def thread(self) -> ShutdownableThread | None:
        """The sender thread (supervised: a turn that raises is logged and the thread goes on)."""
        return self._thread

    def startup(self) -> None:
        self._thread = ShutdownableThread(f"txn-marker-sender-{self.broker_id}",
                                          work=self._run_once)
        self._thread.start()

    def shutdown(self) -> None:
        if self._thread is not None:
            self._thread.initiate_shutdown()
            self._queue.put(None)  # wakes a sender waiting for work
            self._thread.shutdown(timeout_s=5.0)
        for client in self._clients.values():
            client.close()

    def add_txn_markers(self, entry: TxnMarkerEntry) -> None:
        """Kafka's ``addTxnMarkersToSend``."""
        self._queue.put(entry)

    def _next_entry(self) -> TxnMarkerEntry | None:
        """A retry that is due, else a new entry (waiting, bounded, until the next retry is
        due); None when there is nothing yet or the manager is shutting down."""
        now = time.monotonic()
        if self._retries and self._retries[0][0] <= now:
            return heapq.heappop(self._retries)[2]
        wait = _POLL_S if not self._retries else min(_POLL_S, self._retries[0][0] - now)
        try:
            return self._queue.get(timeout=wait)
        except queue.Empty:
            return None

    def _run_once(self) -> None:
        """One turn of the sender: one round of one transaction's markers."""
        entry = self._next_entry()
        if entry is None:
            return
        try:
            self._send(entry)
        except Exception:
            log.exception("transaction %s: writing its markers failed",
                          entry.transactional_id)
            entry.attempts += 1
            self._retry_later(entry)
            return
        if not entry.partitions:
            try:
                entry.on_complete()
            except Exception:
                log.exception("transaction %s: completing it failed", entry.transactional_id)
        else:
            entry.attempts += 1
            self._retry_later(entry)

    def _retry_later(self, entry: TxnMarkerEntry) -> None:
        if not self.still_coordinating(entry):
            log.info("transaction %s: no longer its coordinator; its markers are left to "
                     "the new one", entry.transactional_id)
            return
        backoff = min(RETRY_BACKOFF_S * 2 ** min(entry.attempts - 1, 16), MAX_RETRY_BACKOFF_S)
        heapq.heappush(self._retries, (time.monotonic() + backoff, next(self._seq), entry))

    def _send(self, entry: TxnMarkerEntry) -> None:
        """One round: every partition's marker to its leader; the partitions done (or whose
        topic is gone) leave ``entry.partitions``."""
        by_leader: dict[int, list[TopicPartition]] = {}
        for tp in sorted(entry.partitions):
            leader = self._leader_of(tp)
            if leader == -2:  # the topic was deleted: nothing to mark
                entry.partitions.discard(tp)
            elif leader >= 0:
                by_leader.setdefault(leader, []).append(tp)
        for leader, tps in by_leader.items():
            results = self._write(leader, entry, tps)
            for tp in tps:
                error = results.get(tp, errors.UnknownServerError.errno)
                if error in (Errors.NONE, Errors.UNKNOWN_TOPIC_OR_PARTITION):
                    entry.partitions.discard(tp)
                else:
                    log.info("transaction %s: marker for %s-%d failed with %d",
                             entry.transactional_id, tp[0], tp[1], error)

    def _leader_of(self, tp: TopicPartition) -> int:
        """The partition's leader, -1 when unknown now, -2 when the topic is gone."""
        meta = self.metadata_cache.get(tp[0])
        if meta is None or not 0 <= tp[1] < meta.partitions:
            return -2
        rm = self.replicas
        if rm.standalone:
            return self.broker_id
        local = rm.partitions.get(tp)
        if local is not None and local.is_leader:
            return self.broker_id
        state = rm.image_topics.get(tp[0], {}).get(tp[1])
        return -1 if state is None else int(state.leader)

    def _write(self, leader: int, entry: TxnMarkerEntry,
               tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        by_topic: dict[str, list[int]] = {}
        for topic, index in tps:
            by_topic.setdefault(topic, []).append(index)
        marker = {"producer_id": entry.producer_id, "producer_epoch": entry.producer_epoch,
                  "transaction_result": entry.commit, "coordinator_epoch": entry.coordinator_epoch,
                  "topics": [{"name": t, "partition_indexes": p} for t, p in by_topic.items()],
                  "transaction_version": 0}
        if leader == self.broker_id:
            done = threading.Event()
            got: dict[Any, int] = {}

            def answer(results: dict[Any, int]) -> None:
                got.update(results)
                done.set()

            self.append_markers([marker], answer)
            if not done.wait(REQUEST_TIMEOUT_MS / 1000.0 + 5):
                return {}
            return {(t, p): e for (_pid, t, p), e in got.items()}
        address = self.replicas.brokers.get(leader)
        if address is None:
            return {}
        client = self._clients.get(leader)
        if client is None or (client.host, client.port) != tuple(address):
            if client is not None:
                client.close()
            client = InterBrokerClient(address[0], address[1],
                                       f"txn-marker-sender-{self.broker_id}",
                                       REQUEST_TIMEOUT_MS / 1000.0 + 5, self.faults,
                                       sasl=self.inter_broker_sasl)
            self._clients[leader] = client
        try:
            response = client.send(ApiKey.WRITE_TXN_MARKERS, WRITE_TXN_MARKERS_VERSION,
                                   {"markers": [marker]})
        except OSError as exc:
            log.info("transaction %s: broker %d unreachable for its markers: %s",
                     entry.transactional_id, leader, exc)
            return {}
        return {(t["name"], p["partition_index"]): p["error_code"]
                for m in response["markers"] for t in m["topics"] for p in t["partitions"]}
