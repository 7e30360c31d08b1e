"""Produce: appends through the :class:`~kafkacore.broker.server.replica_manager.ReplicaManager`.

Authorization (WRITE on the transactional id, then on each topic), the producer's byte-rate
quota, and for a transactional producer the coordinator's check that each partition is in its
transaction (KIP-890) come first; with acks=all the answer waits in the produce purgatory until
the ISR has the batches.  See docs/broker/apis.rst and docs/broker/replication.rst.
"""

from __future__ import annotations

from typing import Any

from kafkacore.broker.network.request_channel import Request
from kafkacore.broker.security.authorizer.acl import AclOperation, ResourceType
from kafkacore.broker.server.apis.base import KafkaApisBase, body_of
from kafkacore.broker.server.replica_manager import ADMIN_CLIENT_ID
from kafkacore.broker.transaction.add_partitions_to_txn_manager import has_transactional_records
from kafkacore.errors import Errors


class ProduceApis(KafkaApisBase):
    """Kafka's ``handleProduceRequest``."""

    def handle_produce_request(self, request: Request) -> None:
        """Append through the :class:`~kafkacore.broker.server.replica_manager.ReplicaManager`; with
        acks=all the answer waits in the produce purgatory until the ISR has the batches."""
        body = body_of(request)
        acks = body["acks"]
        transactional_id = body.get("transactional_id")
        # Kafka: WRITE on the transactional id (if any) for the whole request, then WRITE on
        # each topic.
        # A transactional batch needs a transactional id (Kafka's ``hasTransactionalRecords``
        # check): without one no coordinator would ever end the transaction it opens.
        refused = Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED if (
            has_transactional_records(body) if transactional_id is None
            else not self.authorize(request, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                                    transactional_id)) else Errors.NONE
        # Kafka: an authorized partition of a request with acks other than 0, 1, -1 is answered
        # INVALID_REQUIRED_ACKS (ReplicaManager's check, after the authorization).
        bad_acks = Errors.NONE if acks in (0, 1, -1) else Errors.INVALID_REQUIRED_ACKS
        #: (topic, partition) -> (its answer, its records) to append, or its answer with an
        #: error; a partition named twice is answered by its first entry
        valid: dict[tuple[str, int], tuple[dict[str, Any], Any]] = {}
        invalid: dict[tuple[str, int], dict[str, Any]] = {}
        order: list[tuple[str, list[tuple[str, int]]]] = []
        for topic in body["topic_data"]:
            name = topic["name"]
            keys = []
            topic_refused = refused or (
                bad_acks if self.authorize_topic(request, AclOperation.WRITE, name)
                else Errors.TOPIC_AUTHORIZATION_FAILED)
            for pd in topic["partition_data"]:
                key = (name, pd["index"])
                keys.append(key)
                if key in valid or key in invalid:
                    continue
                response: dict[str, Any] = {
                    "index": pd["index"], "error_code": topic_refused, "base_offset": -1,
                    "log_append_time_ms": -1, "log_start_offset": -1, "record_errors": [],
                    "error_message": None,
                }
                if topic_refused:
                    invalid[key] = response
                elif pd["records"] is None:
                    response.update(error_code=Errors.CORRUPT_MESSAGE, error_message="null records")
                    invalid[key] = response
                else:
                    valid[key] = (response, pd["records"])
            order.append((name, keys))

        def respond(results: dict[tuple[str, int], dict[str, Any]]) -> None:
            if invalid:
                results = {**invalid, **results}
            responses = [{"name": name, "partition_responses": list(map(results.__getitem__, keys))}
                         for name, keys in order]
            if acks == 0:
                # acks=0: the producer reads no answer, so none is sent (Kafka closes the
                # connection instead when the append failed, so the producer notices).
                if any(p["error_code"] != Errors.NONE for t in responses
                       for p in t["partition_responses"]):
                    self.request_channel.close_connection(request, "acks=0 produce failed")
                else:
                    self.request_channel.send_no_response(request)
                return
            self.respond(request, {"responses": responses, "throttle_time_ms": throttle_ms})

        # Kafka records a Produce's whole request size against the producer's byte rate.
        throttle_ms = request.throttle_time_ms = self.quotas.produce.record_request(
            request.principal, request.header.get("client_id") or "", request.size)
        timeout_ms = body.get("timeout_ms", 30000)
        # Kafka: only its own admin client id may write to the internal topics.
        internal = request.header.get("client_id") == ADMIN_CLIENT_ID
        if transactional_id is None or not valid:
            self.replica_manager.append_records(timeout_ms, acks, valid, respond,
                                                       internal_topics_allowed=internal)
            return

        def verified(failed: dict[tuple[str, int], int]) -> None:
            for key, error in failed.items():
                invalid[key] = valid.pop(key)[0]
                invalid[key]["error_code"] = error
            self.replica_manager.append_records(timeout_ms, acks, valid, respond,
                                                       internal_topics_allowed=internal)

        # KIP-890: the coordinator confirms the partitions of a transaction's first batches
        # (part 1); from v12 (transaction version 2, part 2) it adds them to the transaction.
        self.transaction_coordinator.add_partitions_manager.verify(
            transactional_id, valid, verified, add=request.api_version >= 12)


__all__ = ["ProduceApis"]
