"""Before a leader appends a producer's first transactional batch to a partition, it asks the
transaction coordinator whether the partition is in the producer's transaction (KIP-890 part 1,
Kafka's ``AddPartitionsToTxnManager``; ``transaction.partition.verification.enable``).

Without this check, a batch that a producer sends after its transaction ended (a late retry, a
bug) would open a transaction in the partition that no coordinator knows of: no marker would ever
end it and the partition's LSO would stop there for good.  The question is AddPartitionsToTxn
v4 with ``verify_only``: asked of this broker's own coordinator directly, of another broker's by
a thread of this manager (a request handler never waits for another broker).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any, Protocol

from kafkacore import errors
from kafkacore.broker.log.log_validator import RECORD_BATCH_OVERHEAD, read_header
from kafkacore.broker.network.faults import FaultInjector
from kafkacore.broker.server_common.coordinator_collaborators import Replicas
from kafkacore.broker.server_common.inter_broker_client import InterBrokerClient
from kafkacore.broker.server_common.shutdownable_thread import ShutdownableThread
from kafkacore.broker.transaction.transaction_state_manager import (
    TRANSACTION_STATE_TOPIC,
    TransactionStateManager,
)
from kafkacore.errors import Errors
from kafkacore.network.sasl import SaslMechanism
from kafkacore.protocol.api_keys import ApiKey

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
VerifyCallback = Callable[[dict[TopicPartition, int]], None]

#: what a failed verification becomes in the Produce answer (Kafka's mapping): the producer's
#: own mistakes pass through, anything about the coordinator is retriable
PRODUCE_ERROR = {
    errors.InvalidTxnStateError.errno: errors.InvalidTxnStateError.errno,
    errors.InvalidProducerIdMappingError.errno: errors.InvalidProducerIdMappingError.errno,
    errors.ProducerFencedError.errno: errors.InvalidProducerEpochError.errno,
    errors.InvalidProducerEpochError.errno: errors.InvalidProducerEpochError.errno,
    errors.TransactionalIdAuthorizationFailedError.errno:
        errors.TransactionalIdAuthorizationFailedError.errno,
}
RETRIABLE = errors.NotEnoughReplicasError.errno
#: what a failed verification becomes in a TxnOffsetCommit answer (Kafka's group coordinator,
#: ``handleOperationException``): what the client retries after finding the coordinator again
TXN_OFFSET_COMMIT_ERROR: dict[int, int] = {
    Errors.PRODUCER_FENCED: Errors.INVALID_PRODUCER_EPOCH,
    Errors.NOT_ENOUGH_REPLICAS: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.UNKNOWN_TOPIC_OR_PARTITION: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.REQUEST_TIMED_OUT: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NETWORK_EXCEPTION: Errors.COORDINATOR_LOAD_IN_PROGRESS,
    Errors.NOT_LEADER_OR_FOLLOWER: Errors.NOT_COORDINATOR,
    Errors.KAFKA_STORAGE_ERROR: Errors.NOT_COORDINATOR,
}
REQUEST_TIMEOUT_S = 30.0


def has_transactional_records(produce_body: dict[str, Any]) -> bool:
    """Whether the first batch of any partition of a Produce is transactional (Kafka's
    ``RequestUtils.hasTransactionalRecords``)."""
    for topic in produce_body["topic_data"]:
        for pd in topic["partition_data"]:
            records = pd["records"]
            if records is not None and len(records) >= RECORD_BATCH_OVERHEAD \
                    and read_header(records, 0).is_transactional:
                return True
    return False


def txn_offset_commit_error(coordinator_error: int) -> int:
    return int(TXN_OFFSET_COMMIT_ERROR.get(coordinator_error, coordinator_error))


class AddPartitions(Protocol):
    """The transaction coordinator's ``handle_add_partitions``."""

    def __call__(self, transactional_id: str, producer_id: int, producer_epoch: int,
                 partitions: set[TopicPartition], callback: Callable[[int], None], *,
                 verify_only: bool = False) -> None: ...


class AddPartitionsToTxnManager:
    def __init__(self, broker_id: int, txn_manager: TransactionStateManager,
                 add_partitions: AddPartitions, *, replicas: Replicas,
                 faults: FaultInjector | None = None,
                 inter_broker_sasl: Callable[[], SaslMechanism] | None = None) -> None:
        self.broker_id = broker_id
        #: this broker's transaction coordinator: its state (which ids it coordinates) and its
        #: ``handle_add_partitions``, asked directly for the ids it coordinates
        self.txn_manager = txn_manager
        self.add_partitions = add_partitions
        #: the replica manager: the producers' open transactions, the coordinators' leaders
        self.replicas = replicas
        #: for the connections to the other coordinators (InterBrokerClient)
        self.faults = faults
        self.inter_broker_sasl = inter_broker_sasl
        self._queue: queue.Queue[tuple[int, str, int, int, list[TopicPartition],
                                       VerifyCallback, bool] | None] = queue.Queue()
        self._clients: dict[int, InterBrokerClient] = {}
        self._thread: ShutdownableThread | None = None

    def startup(self) -> None:
        self._thread = ShutdownableThread(f"add-partitions-to-txn-{self.broker_id}",
                                          work=self._run_once)
        self._thread.start()

    def shutdown(self) -> None:
        if self._thread is not None:
            self._thread.initiate_shutdown()
            self._queue.put(None)  # wakes the thread waiting for a request
            self._thread.shutdown(timeout_s=5.0)
        for client in self._clients.values():
            client.close()

    def needs_verification(self, entries: dict[TopicPartition, tuple[dict[str, Any], Any]]
                           ) -> dict[tuple[int, int], list[TopicPartition]]:
        """(producer id, epoch) -> the partitions where that producer's transactional batch
        would open a transaction (no transaction of it is open there yet)."""
        out: dict[tuple[int, int], list[TopicPartition]] = {}
        rm = self.replicas
        for tp, (_response, records) in entries.items():
            if records is None or len(records) < RECORD_BATCH_OVERHEAD:
                continue  # the append refuses it
            h = read_header(records, 0)
            if not (h.is_transactional and h.has_producer_id):
                continue
            partition = rm.get_partition(*tp)
            if partition is None or partition.log is None:
                continue
            if self.in_transaction(tp, h.producer_id, h.producer_epoch):
                continue
            # Kafka's maybeStartTransactionVerification: the lowest sequence being verified is
            # remembered, so that a later batch of the producer (a next request, sent while
            # this one is verified or retried after a retriable answer) cannot be written
            # before it and leave it out of sequence (ProducerAppendInfo checks it).
            with partition.lock:
                partition.log.producer_state.start_verification(
                    h.producer_id, h.producer_epoch, h.base_sequence)
            out.setdefault((h.producer_id, h.producer_epoch), []).append(tp)
        return out

    def _end_verification(self, producer_id: int, epoch: int,
                          failed: dict[TopicPartition, int]) -> None:
        """Forget the verifications the coordinator refused for good (a retriable answer keeps
        it: the batch comes again)."""
        for tp, error in failed.items():
            if error == RETRIABLE:
                continue
            partition = self.replicas.get_partition(*tp)
            if partition is None or partition.log is None:
                continue
            with partition.lock:
                partition.log.producer_state.end_verification(producer_id, epoch)

    def in_transaction(self, tp: TopicPartition, producer_id: int, epoch: int) -> bool:
        """Whether the producer (at this epoch) has a transaction open in this broker's
        replica of ``tp``: its coordinator has confirmed the partition already."""
        partition = self.replicas.get_partition(*tp)
        if partition is None or partition.log is None:
            return False
        entry = partition.log.producer_state.last_entry(producer_id)
        return entry is not None and entry.current_txn_first_offset >= 0 \
            and entry.producer_epoch == epoch

    def verify(self, transactional_id: str,
               entries: dict[TopicPartition, tuple[dict[str, Any], Any]],
               callback: VerifyCallback, *, add: bool = False) -> None:
        """``callback({partition: error})`` with the Produce error of each partition that
        failed (empty if every batch may be appended).  ``add`` (Produce v12, transaction
        version 2): the coordinator adds the partitions to the transaction instead of only
        checking that the producer did (KIP-890 part 2's server-side add)."""
        wanted = self.needs_verification(entries)
        if not wanted:
            callback({})
            return
        failed: dict[TopicPartition, int] = {}
        remaining = [len(wanted)]
        # Lock order: leaf. Guards this call's fan-in count and failures.
        lock = threading.Lock()

        def one_done(producer_id: int, epoch: int, results: dict[TopicPartition, int]) -> None:
            mine = {tp: PRODUCE_ERROR.get(e, RETRIABLE) for tp, e in results.items()
                    if e != Errors.NONE}
            self._end_verification(producer_id, epoch, mine)
            with lock:
                failed.update(mine)
                remaining[0] -= 1
                if remaining[0]:
                    return
            callback(failed)

        for (producer_id, epoch), tps in wanted.items():
            self.ask_coordinator(
                transactional_id, producer_id, epoch, tps,
                lambda results, pid=producer_id, e=epoch: one_done(pid, e, results), add=add)

    def ask_coordinator(self, transactional_id: str, producer_id: int, epoch: int,
                        tps: list[TopicPartition], done: VerifyCallback, *,
                        add: bool) -> None:
        """``done({partition: coordinator's error})``: the partitions verified (or, ``add``,
        added to the transaction) by the id's coordinator, this broker's own or another's."""
        error, _epoch, _metadata = self.txn_manager.get_transaction_state(
            transactional_id)
        if error == Errors.NONE:  # this broker coordinates the id: ask it directly
            self._verify_locally(transactional_id, producer_id, epoch, tps, done, add)
            return
        leader = self._coordinator_of(transactional_id)
        if leader < 0:
            done(dict.fromkeys(tps, RETRIABLE))
            return
        self._queue.put((leader, transactional_id, producer_id, epoch, tps, done, add))

    def _verify_locally(self, transactional_id: str, producer_id: int, epoch: int,
                        tps: list[TopicPartition], done: VerifyCallback, add: bool) -> None:
        if add:  # one write to the transaction log for them all, answered when it is written
            self.add_partitions(
                transactional_id, producer_id, epoch, set(tps),
                lambda e: done({tp: e for tp in tps}))
            return
        results: dict[TopicPartition, int] = {}
        for tp in tps:
            self.add_partitions(
                transactional_id, producer_id, epoch, {tp},
                lambda e, tp=tp: results.__setitem__(tp, e), verify_only=True)
        done(results)

    def _coordinator_of(self, transactional_id: str) -> int:
        rm = self.replicas
        p = self.txn_manager.partition_for(transactional_id)
        state = rm.image_topics.get(TRANSACTION_STATE_TOPIC, {}).get(p)
        return -1 if state is None else int(state.leader)

    def _run_once(self) -> bool | None:
        """One turn: one coordinator asked.  A question that fails is answered retriable (the
        producer retries); anything else that raises is ShutdownableThread's to log."""
        task = self._queue.get()
        if task is None:
            return False
        leader, transactional_id, producer_id, epoch, tps, done, add = task
        try:
            answer = self._ask(leader, transactional_id, producer_id, epoch, tps, add)
        except Exception:
            log.exception("verifying %s's partitions failed", transactional_id)
            answer = dict.fromkeys(tps, RETRIABLE)
        done(answer)
        return None

    def _ask(self, leader: int, transactional_id: str, producer_id: int, epoch: int,
             tps: list[TopicPartition], add: bool) -> dict[TopicPartition, int]:
        address = self.replicas.brokers.get(leader)
        if address is None:
            return dict.fromkeys(tps, RETRIABLE)
        client = self._clients.get(leader)
        if client is None or (client.host, client.port) != tuple(address):
            if client is not None:
                client.close()
            client = InterBrokerClient(address[0], address[1],
                                       f"add-partitions-to-txn-{self.broker_id}",
                                       REQUEST_TIMEOUT_S, self.faults,
                                       sasl=self.inter_broker_sasl)
            self._clients[leader] = client
        by_topic: dict[str, list[int]] = {}
        for topic, index in tps:
            by_topic.setdefault(topic, []).append(index)
        try:
            response = client.send(ApiKey.ADD_PARTITIONS_TO_TXN, 4, {"transactions": [
                {"transactional_id": transactional_id, "producer_id": producer_id,
                 "producer_epoch": epoch, "verify_only": not add,
                 "topics": [{"name": t, "partitions": p} for t, p in by_topic.items()]}]})
        except OSError as exc:
            log.info("coordinator %d unreachable to verify %s: %s", leader, transactional_id,
                     exc)
            return dict.fromkeys(tps, RETRIABLE)
        if response["error_code"] != Errors.NONE:
            return dict.fromkeys(tps, response["error_code"])
        return {(t["name"], p["partition_index"]): p["partition_error_code"]
                for r in response["results_by_transaction"] for t in r["topic_results"]
                for p in t["results_by_partition"]}
