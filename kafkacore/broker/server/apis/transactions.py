"""InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit, WriteTxnMarkers,
DescribeProducers, DescribeTransactions and ListTransactions: producer ids and transactions.

The work is the transaction coordinator's (:mod:`kafkacore.broker.transaction`), the group
coordinator's for a transaction's offsets, and the partitions' leaders' for the markers; here:
Kafka's authorization checks and the wire shape.  See docs/broker/transactions.rst.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from kafkacore.broker.group.group_coordinator import OffsetAndMetadata
from kafkacore.broker.group.group_metadata_manager import OFFSETS_TOPIC
from kafkacore.broker.network.request_channel import Request
from kafkacore.broker.security.authorizer.acl import AclOperation, ResourceType
from kafkacore.broker.server.apis.base import KafkaApisBase, body_of
from kafkacore.broker.transaction.add_partitions_to_txn_manager import txn_offset_commit_error
from kafkacore.errors import BrokerResponseError, Errors


class TransactionApis(KafkaApisBase):
    """Kafka's ``handleInitProducerIdRequest``, ``handleAddPartitionsToTxnRequest``,
    ``handleAddOffsetsToTxnRequest``, ``handleEndTxnRequest``, ``handleTxnOffsetCommitRequest``,
    ``handleWriteTxnMarkersRequest``, ``handleDescribeProducersRequest``,
    ``handleDescribeTransactionsRequest`` and ``handleListTransactionsRequest``."""

    # -- InitProducerId --------------------------------------------------------------------------

    def handle_init_producer_id_request(self, request: Request) -> None:
        """An idempotent producer's id (a broker alone reserves blocks of ids on disk, a broker
        of a cluster takes them from the controller: docs/broker/controller.rst); with a
        transactional id, the transaction coordinator's answer (see
        docs/broker/transactions.rst)."""
        body = body_of(request)
        response = {"throttle_time_ms": 0, "error_code": Errors.NONE, "producer_id": -1,
                    "producer_epoch": -1}
        refused = self.init_producer_id_refused(request, body["transactional_id"])
        if refused:
            response["error_code"] = refused
        elif body["transactional_id"] is not None:
            def send_response(error: int, producer_id: int, producer_epoch: int) -> None:
                self.respond(request, {**response, "error_code": error,
                                       "producer_id": producer_id,
                                       "producer_epoch": producer_epoch})

            self.transaction_coordinator.handle_init_producer_id(
                body["transactional_id"], body["transaction_timeout_ms"],
                body.get("producer_id", -1), body.get("producer_epoch", -1), send_response)
            return
        elif (body.get("producer_id", -1) == -1) != (body.get("producer_epoch", -1) == -1):
            # An id without an epoch, or the reverse.
            response["error_code"] = Errors.INVALID_REQUEST
        else:
            # Without a transactional id, Kafka hands out a new producer id whatever id and
            # epoch were sent: nothing proves the asker owns them, and bumping the epoch of
            # someone else's id would fence that producer (Java's idempotent producer bumps
            # its epoch by itself).
            try:
                response.update(producer_id=self.producer_id_manager.generate_producer_id(),
                                producer_epoch=0)
            except BrokerResponseError as exc:  # no block from the controller yet: retriable
                response["error_code"] = exc.errno
        self.respond(request, response)

    def init_producer_id_refused(self, request: Request, transactional_id: str | None) -> int:
        """Kafka's checks: WRITE on the transactional id; without one, IDEMPOTENT_WRITE on the
        cluster or WRITE on at least one topic.  The error code, or NONE."""
        if transactional_id is not None:
            return Errors.NONE if self.authorize(request, AclOperation.WRITE,
                                          ResourceType.TRANSACTIONAL_ID, transactional_id) \
                else Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        if self.authorize(request, AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER):
            return Errors.NONE
        if self.authorizer is not None and self.authorizer.authorize_by_resource_type(
                request.principal, request.client_address[0], AclOperation.WRITE,
                ResourceType.TOPIC):
            return Errors.NONE
        return Errors.CLUSTER_AUTHORIZATION_FAILED

    # -- transactions: AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, WriteTxnMarkers ---------------

    def handle_add_partitions_to_txn_request(self, request: Request) -> None:
        """v0-3 (clients): one transaction; v4+ (brokers, KIP-890): several, each perhaps only
        verified.  Unknown (or unauthorized) partitions fail the transaction's request, the
        others then answer OPERATION_NOT_ATTEMPTED, as Kafka."""
        body, version = body_of(request), request.api_version
        if version >= 4 and not self.authorize(request, AclOperation.CLUSTER_ACTION,
                                               ResourceType.CLUSTER):
            self.respond(request, {"throttle_time_ms": 0,
                                   "error_code": Errors.CLUSTER_AUTHORIZATION_FAILED,
                                   "results_by_transaction": []})
            return
        if version < 4:
            transactions = [{"transactional_id": body["v3_and_below_transactional_id"],
                             "producer_id": body["v3_and_below_producer_id"],
                             "producer_epoch": body["v3_and_below_producer_epoch"],
                             "verify_only": False, "topics": body["v3_and_below_topics"]}]
        else:
            transactions = body["transactions"]
        results: list[Any] = [None] * len(transactions)
        remaining = [len(transactions)]
        # Lock order: leaf. Guards this request's fan-in count and results.
        lock = threading.Lock()

        def finish(i: int, topic_results: list[dict[str, Any]]) -> None:
            with lock:
                results[i] = topic_results
                remaining[0] -= 1
                if remaining[0]:
                    return
            if version < 4:
                self.respond(request, {"throttle_time_ms": 0,
                                       "results_by_topic_v3_and_below": results[0]})
            else:
                self.respond(request, {"throttle_time_ms": 0, "error_code": Errors.NONE,
                                       "results_by_transaction": [
                                           {"transactional_id": t["transactional_id"],
                                            "topic_results": r}
                                           for t, r in zip(transactions, results, strict=True)]})

        if not transactions:
            self.respond(request, {"throttle_time_ms": 0, "error_code": Errors.NONE,
                                   "results_by_transaction": []})
            return
        for i, txn in enumerate(transactions):
            partitions = {(t["name"], p) for t in txn["topics"] for p in t["partitions"]}
            unknown = {tp for tp in partitions if not self.partition_exists(*tp)}
            refused = {tp for tp in partitions
                       if not self.authorize_topic(request, AclOperation.WRITE, tp[0])}

            def topic_results(error_of: Callable[[tuple[str, int]], int],
                              txn: dict[str, Any] = txn) -> list[dict[str, Any]]:
                return [{"name": t["name"], "results_by_partition": [
                    {"partition_index": p, "partition_error_code": error_of((t["name"], p))}
                    for p in t["partitions"]]} for t in txn["topics"]]

            if version < 4 and not self.authorize(request, AclOperation.WRITE,
                                                  ResourceType.TRANSACTIONAL_ID,
                                                  txn["transactional_id"]):
                finish(i, topic_results(lambda tp: Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
                continue
            if refused or unknown:
                finish(i, topic_results(
                    lambda tp, refused=refused, unknown=unknown: Errors.TOPIC_AUTHORIZATION_FAILED
                    if tp in refused else Errors.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown
                    else Errors.OPERATION_NOT_ATTEMPTED))
                continue
            self.transaction_coordinator.handle_add_partitions(
                txn["transactional_id"], txn["producer_id"], txn["producer_epoch"], partitions,
                lambda error, i=i, topic_results=topic_results: finish(
                    i, topic_results(lambda tp: error)),
                verify_only=txn.get("verify_only", False))

    def handle_add_offsets_to_txn_request(self, request: Request) -> None:
        """The group's ``__consumer_offsets`` partition joins the transaction, so that its
        offsets get the transaction's marker."""
        body = body_of(request)
        refused = self._transactional_id_refused(request, body["transactional_id"])
        if not refused and not self.authorize(request, AclOperation.READ, ResourceType.GROUP,
                                              body["group_id"]):
            refused = Errors.GROUP_AUTHORIZATION_FAILED
        if refused:
            self.respond(request, {"throttle_time_ms": 0, "error_code": refused})
            return
        partition = self.group_coordinator.group_manager.partition_for(body["group_id"])
        self.transaction_coordinator.handle_add_partitions(
            body["transactional_id"], body["producer_id"], body["producer_epoch"],
            {(OFFSETS_TOPIC, partition)},
            lambda error: self.respond(request, {"throttle_time_ms": 0, "error_code": error}))

    def _transactional_id_refused(self, request: Request, transactional_id: str) -> int:
        """Kafka's check of the transactional requests: WRITE on the transactional id."""
        if self.authorize(request, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                          transactional_id):
            return Errors.NONE
        return Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED

    def handle_end_txn_request(self, request: Request) -> None:
        body = body_of(request)
        refused = self._transactional_id_refused(request, body["transactional_id"])
        if refused:
            self.respond(request, {"throttle_time_ms": 0, "error_code": refused,
                                   "producer_id": -1, "producer_epoch": -1})
            return
        # v5 is transaction version 2 (KIP-890 part 2): the epoch is bumped at every
        # transaction's end, and the answer says which producer id and epoch come next.
        self.transaction_coordinator.handle_end_transaction(
            body["transactional_id"], body["producer_id"], body["producer_epoch"],
            body["committed"],
            lambda error, producer_id, epoch: self.respond(request, {
                "throttle_time_ms": 0, "error_code": error,
                "producer_id": producer_id, "producer_epoch": epoch}),
            bump_epoch=request.api_version >= 5)

    def handle_txn_offset_commit_request(self, request: Request) -> None:
        """A transaction's offsets: written to the group's offsets partition as the producer's
        transactional batch, visible once the transaction commits."""
        body = body_of(request)
        offsets = {}
        unknown: dict[tuple[str, int], int] = {}
        refused = self._transactional_id_refused(request, body["transactional_id"])
        if not refused and not self.authorize(request, AclOperation.READ, ResourceType.GROUP,
                                              body["group_id"]):
            refused = Errors.GROUP_AUTHORIZATION_FAILED
        for t in body["topics"]:
            for p in t["partitions"]:
                tp = (t["name"], p["partition_index"])
                if refused:
                    unknown[tp] = refused
                    continue
                if not self.authorize_topic(request, AclOperation.READ, tp[0]):
                    unknown[tp] = Errors.TOPIC_AUTHORIZATION_FAILED
                    continue
                if not self.partition_exists(*tp):
                    unknown[tp] = Errors.UNKNOWN_TOPIC_OR_PARTITION
                    continue
                offsets[tp] = OffsetAndMetadata(p["committed_offset"],
                                                p.get("committed_leader_epoch", -1),
                                                p["committed_metadata"], -1)

        def send_response(errors: dict[tuple[str, int], int]) -> None:
            errors = {**errors, **unknown}
            self.respond(request, {"throttle_time_ms": 0, "topics": [
                {"name": t["name"], "partitions": [
                    {"partition_index": p["partition_index"],
                     "error_code": errors.get((t["name"], p["partition_index"]), Errors.NONE)}
                    for p in t["partitions"]]}
                for t in body["topics"]]})

        def commit() -> None:
            self.group_coordinator.handle_commit_offsets(
                body["group_id"], body.get("generation_id", -1), offsets,
                member_id=body.get("member_id", ""), response_callback=send_response,
                producer=(body["producer_id"], body["producer_epoch"]),
                group_instance_id=body.get("group_instance_id"))

        if not offsets:
            commit()
            return

        # The coordinator confirms that the group's offsets partition is in the producer's
        # transaction before anything is written (KIP-890 part 1; v5, transaction version 2:
        # no AddOffsetsToTxn came before, and the partition joins the transaction here).  An
        # unknown producer's commit would otherwise hold the group's offsets unstable forever.
        def added(results: dict[tuple[str, int], int]) -> None:
            error = next(iter(results.values()), Errors.NONE)
            if error == Errors.NONE:
                commit()
            else:
                send_response(dict.fromkeys(offsets, txn_offset_commit_error(error)))

        partition = self.group_coordinator.group_manager.partition_for(body["group_id"])
        manager = self.transaction_coordinator.add_partitions_manager
        tp = (OFFSETS_TOPIC, partition)
        add = request.api_version >= 5
        if not add and manager.in_transaction(tp, body["producer_id"], body["producer_epoch"]):
            commit()
            return
        manager.ask_coordinator(body["transactional_id"], body["producer_id"],
                                body["producer_epoch"], [tp], added, add=add)

    def handle_write_txn_markers_request(self, request: Request) -> None:
        """A transaction coordinator's markers for the partitions this broker leads (only
        brokers may send them: CLUSTER_ACTION)."""
        body = body_of(request)
        markers = body["markers"]
        allowed = self.authorize(request, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER)

        def send_response(results: dict[tuple[int, str, int], int]) -> None:
            self.respond(request, {"markers": [
                {"producer_id": m["producer_id"], "topics": [
                    {"name": t["name"], "partitions": [
                        {"partition_index": p, "error_code": results.get(
                            (m["producer_id"], t["name"], p), Errors.UNKNOWN_SERVER_ERROR)}
                        for p in t["partition_indexes"]]}
                    for t in m["topics"]]}
                for m in markers]})

        if not allowed:
            send_response({(m["producer_id"], t["name"], p): Errors.CLUSTER_AUTHORIZATION_FAILED
                           for m in markers for t in m["topics"]
                           for p in t["partition_indexes"]})
            return
        self.transaction_coordinator.marker_manager.append_markers(markers, send_response)

    # -- the transaction admin calls: DescribeProducers, DescribeTransactions, ListTransactions

    def handle_describe_producers_request(self, request: Request) -> None:
        """The producers a partition's leader knows (its producer state): the tools look for
        hanging transactions with it."""
        body = body_of(request)
        topics = []
        for t in body["topics"]:
            parts = []
            for index in t["partition_indexes"]:
                part: dict[str, Any] = {"partition_index": index, "error_code": Errors.NONE,
                                        "error_message": None, "active_producers": []}
                parts.append(part)
                if not self.authorize_topic(request, AclOperation.READ, t["name"]):
                    part["error_code"] = Errors.TOPIC_AUTHORIZATION_FAILED
                    continue
                partition, error = self.replica_manager.leader_partition_or_error(
                    t["name"], index)
                if partition is None:
                    part["error_code"] = error
                    continue
                part["active_producers"] = [
                    {"producer_id": e.producer_id, "producer_epoch": e.producer_epoch,
                     "last_sequence": e.last_seq, "last_timestamp": e.last_timestamp,
                     "coordinator_epoch": e.coordinator_epoch,
                     "current_txn_start_offset": e.current_txn_first_offset}
                    for e in partition.log.producer_state.active_producers()]
            topics.append({"name": t["name"], "partitions": parts})
        self.respond(request, {"throttle_time_ms": 0, "topics": topics})

    def handle_describe_transactions_request(self, request: Request) -> None:
        body = body_of(request)
        coordinator = self.transaction_coordinator
        states = []
        for txn_id in body["transactional_ids"]:
            if self.authorize(request, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID,
                              txn_id):
                states.append(coordinator.handle_describe_transactions(txn_id))
            else:
                states.append({**coordinator.handle_describe_transactions(""),
                               "transactional_id": txn_id,
                               "error_code": Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED})
        self.respond(request, {"throttle_time_ms": 0, "transaction_states": states})

    def handle_list_transactions_request(self, request: Request) -> None:
        body = body_of(request)
        error, unknown, found = self.transaction_coordinator.handle_list_transactions(
            body["state_filters"], body["producer_id_filters"], body.get("duration_filter", -1),
            body.get("transactional_id_pattern"))
        self.respond(request, {
            "throttle_time_ms": 0, "error_code": error, "unknown_state_filters": unknown,
            "transaction_states": [
                {"transactional_id": m.transactional_id, "producer_id": m.producer_id,
                 "transaction_state": m.state.state_name}
                for m in found if self.authorize(request, AclOperation.DESCRIBE,
                                                 ResourceType.TRANSACTIONAL_ID,
                                                 m.transactional_id)]})


__all__ = ["TransactionApis"]
