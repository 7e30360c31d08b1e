"""The Sender thread: takes batches from the accumulator and sends them to the partition leaders.

One loop (``run_once``) does, in order (as Java's ``Sender.runOnce``):

1. with idempotence, make sure we have a producer id (InitProducerId), and start over under a
   new epoch the partitions whose sequences the broker and we no longer agree on (KIP-360);
   with transactions, send the transaction manager's next request to its coordinator instead
   (FindCoordinator first if need be; InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
   TxnOffsetCommit, EndTxn), one at a time, and send no data while one is in flight, as Java's
   ``maybeSendAndPollTransactionalRequest`` does;
2. ask the accumulator which leaders have a sendable batch (``ready``); ask for metadata for
   topics whose leader is unknown;
3. keep only the leaders the network client can send to now (connecting the others);
4. drain batches for those nodes, up to ``max.request.size`` per request;
5. fail batches that waited past ``delivery.timeout.ms``, queued or in flight;
6. send one ProduceRequest per node;
7. poll the network client: I/O, responses, callbacks — which complete batches (``_on_produce``).

Every field here belongs to the Sender thread, except ``_running``/``_force_close`` (plain flags
set by ``initiate_close``/``force_close`` from the main thread; a stale read costs one loop) and
the accumulator, which has its own locks.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from kafkacore.accumulator import RecordAccumulator
from kafkacore.errors import (
    ClusterAuthorizationFailedError,
    Errors,
    IllegalStateError,
    KafkaError,
    KafkaTimeoutError,
    NetworkError,
    TransactionAbortedError,
    TransactionalIdAuthorizationFailedError,
    for_code,
)
from kafkacore.metadata import Node, TopicPartition
from kafkacore.network.client import NetworkClient, clock_ms
from kafkacore.protocol.api_keys import TV1_MAX_VERSIONS, ApiKey

log = logging.getLogger("kafkacore")

#: InitProducerId errors no retry cures: the producer fails every batch with them.
_FATAL_INIT_ERRORS = frozenset({ClusterAuthorizationFailedError.errno,
                                TransactionalIdAuthorizationFailedError.errno})
# Errors that mean our view of the leaders is stale.
STALE_METADATA_ERRORS = frozenset(
    {
        Errors.NOT_LEADER_OR_FOLLOWER,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.LEADER_NOT_AVAILABLE,
        Errors.FENCED_LEADER_EPOCH,
    }
)


class Sender:
    """The loop on the producer's I/O thread."""

    def __init__(
        self,
        client: NetworkClient,
        metadata: Any,
        accumulator: RecordAccumulator,
        *,
        acks: int,
        max_request_size: int,
        request_timeout_ms: int,
        delivery_timeout_ms: int,
        retries: int,
        guarantee_message_order: bool,
        transaction_manager: Any = None,
        metrics: Any = None,
    ) -> None:
        self.client = client
        self.metadata = metadata
        self.accumulator = accumulator
        self.acks = acks
        self.max_request_size = max_request_size
        self.request_timeout_ms = request_timeout_ms
        self.delivery_timeout_ms = delivery_timeout_ms
        self.retries = retries
        self.guarantee_message_order = guarantee_message_order
        self.transaction_manager = transaction_manager
        self.metrics = metrics
        # tp -> batches sent and not yet answered (for in-flight expiry and ordering).
        self._in_flight: dict[tuple, list] = {}
        self._init_pid_in_flight = False
        self._init_pid_backoff_until = 0
        # A broker that answered an epoch bump (InitProducerId with our id) with an error:
        # later bumps ask for a new producer id instead.
        self._bump_refused = False
        #: An error no retry can cure (the broker refused us a producer id: ACLs), after
        #: which every batch fails with it, as Java's TransactionManager's fatal state.
        self._fatal_error: KafkaError | None = None
        # Transactions: the coordinator request in flight, a FindCoordinator in flight, and
        # whether we started a flush for a commit or an abort.
        self._txn_in_flight: Any = None
        self._find_coordinator_in_flight = False
        self._txn_flushing = False
        self._running = True
        self._force_close = False
        self.thread: threading.Thread | None = None
        #: Set when the thread has finished (after a graceful or forced close).
        self.stopped = threading.Event()

    # -- the thread ---------------------------------------------------------------------------

    def start(self, name: str) -> None:
        self.thread = threading.Thread(target=self.run, name=name, daemon=True)
        self.thread.start()

    def run(self) -> None:
        try:
            while self._running:
                self._run_once_safely()
            # Graceful close: send what is left unless told to stop now.
            while not self._force_close and (
                self.accumulator.has_undrained()
                or self.client.has_in_flight_requests()
                or self.accumulator.appends_in_progress()
            ):
                self._run_once_safely()
            if self._force_close:
                self.accumulator.abort_incomplete_batches(
                    KafkaError("the producer was closed before this record was sent")
                )
        finally:
            try:
                self.client.close()
            finally:
                self.stopped.set()

    def _run_once_safely(self) -> None:
        try:
            self.run_once()
        except Exception:  # the thread must survive anything one loop throws
            log.exception("unexpected error in the kafkacore sender loop")
            time.sleep(0.1)  # and must not spin on an error that repeats

    def wakeup(self) -> None:
        self.client.wakeup()

    def initiate_close(self) -> None:
        """Stop taking new work once everything queued is sent (graceful close)."""
        self.accumulator.close()
        self._running = False
        self.wakeup()

    def force_close(self) -> None:
        """Stop now: whatever is not yet acknowledged fails."""
        self._force_close = True
        self.initiate_close()

    # -- one loop -------------------------------------------------------------------------

    def run_once(self) -> None:
        now = clock_ms()
        tm = self.transaction_manager
        if tm is not None:
            if tm.transactional_id is not None:
                if self._maybe_send_transactional_request(now):
                    self.client.poll(self.accumulator.retry_backoff_ms, clock_ms())
                    return
            elif not tm.has_producer_id() and self._fatal_error is None:
                self._maybe_init_producer_id(now)
            else:
                self._maybe_rewrite_sequences(now)
        timeout = self._send_producer_data(now)
        if tm is not None and tm.transactional_id is not None:
            # Partitions the drain just found go out in AddPartitionsToTxn at once; a request
            # waiting out a back-off goes when it ends.
            timeout = min(timeout, tm.next_request_delay_ms(now))
        self.client.poll(timeout, clock_ms())

    def _send_producer_data(self, now: int) -> int:
        fatal = getattr(self.client, "authentication_error", None) or self._fatal_error
        if fatal is not None:
            # Credentials or TLS refused: nothing queued can be sent, so every batch fails now
            # with the error, instead of expiring at delivery.timeout.ms (Java's Sender does
            # the same with an AuthenticationException from the client).
            self.accumulator.abort_incomplete_batches(fatal)
        cluster = self.metadata.cluster
        result = self.accumulator.ready(cluster, now)
        for topic in result.unknown_leader_topics:
            self.metadata.request_update_for_topic(topic)
        next_check = result.next_ready_check_delay_ms
        ready_nodes = set()
        for node in result.ready_nodes:
            if self.client.ready(node, now):
                ready_nodes.add(node)
                self.accumulator.update_node_latency_stats(node, now, True)
            else:
                # Only the ready time moves: the gap to the drain time is how long the node's
                # data has been waiting (adaptive partitioning steers around it).
                self.accumulator.update_node_latency_stats(node, now, False)
                next_check = min(next_check, self.client.connection_delay(node, now))
        batches = self.accumulator.drain(cluster, ready_nodes, self.max_request_size, now)
        for node_batches in batches.values():
            for batch in node_batches:
                tp = (batch.topic, batch.partition)
                self._in_flight.setdefault(tp, []).append(batch)
                if self.guarantee_message_order:
                    self.accumulator.mute(tp)
                if self.transaction_manager is not None:
                    self.transaction_manager.add_in_flight(tp, batch)
        self._fail_expired(now)
        for node, node_batches in batches.items():
            if node_batches:
                self._send_produce_request(node, node_batches, now)
        # Sleep until the next batch may be ready, a connection may be retried or a batch must
        # expire; poll() also wakes on I/O, on wakeup() and for metadata.  In-flight batches
        # expire too: while there are any, look again at least every request timeout.
        return int(max(min(next_check, self.request_timeout_ms), 0))

    def _fail_expired(self, now: int) -> None:
        """Fail batches past ``delivery.timeout.ms``: queued ones at once; in-flight ones too, but
        their memory stays allocated until the request ends, because the request may still be
        writing those very bytes to the socket (we send batches without copying them)."""
        tm = self.transaction_manager
        for batch in self.accumulator.expired_batches(now):
            if tm is not None:  # sent before? then the broker may have written it
                tm.mark_unresolved((batch.topic, batch.partition), batch)
            self._fail_batch(batch, self._expiry_error(batch, now), now)
        for tp, batches in self._in_flight.items():
            for batch in batches:
                if batch.final_state is None and batch.has_reached_delivery_timeout(
                    self.delivery_timeout_ms, now
                ):
                    error = self._expiry_error(batch, now)
                    if tm is not None:
                        tm.mark_unresolved(tp, batch)
                        if tm.transactional_id is not None:
                            tm.maybe_transition_to_error_state(error)
                    self._record_error(batch)
                    batch.done(-1, -1, error)

    def _expiry_error(self, batch, now: int) -> KafkaTimeoutError:
        return KafkaTimeoutError(
            f"expiring {batch.record_count} record(s) for {batch.topic}-{batch.partition}: "
            f"{now - batch.created_ms} ms has passed since batch creation "
            f"(delivery.timeout.ms={self.delivery_timeout_ms})"
        )

    # -- produce requests ---------------------------------------------------------------------

    def _send_produce_request(self, node: int, batches: list, now: int) -> None:
        by_topic: dict[str, list] = {}
        for batch in batches:
            batch.last_attempt_ms = now
            by_topic.setdefault(batch.topic, []).append(
                {"index": batch.partition, "records": batch.records()}
            )
        tm = self.transaction_manager
        body = {
            "transactional_id": tm.transactional_id if tm is not None else None,
            "acks": self.acks,
            "timeout_ms": self.request_timeout_ms,
            "topic_data": [{"name": t, "partition_data": p} for t, p in by_topic.items()],
        }
        sent = {(b.topic, b.partition): b for b in batches}

        def on_response(response, sent=sent, node=node):
            self._on_produce(response, sent, node)

        if self.metrics is not None:
            for batch in batches:
                self.metrics.record("record-send", batch.record_count, batch.record_count)
                self.metrics.record("batch-size", batch.estimated_size_in_bytes())
                self.metrics.record("records-per-request", batch.record_count)
                self.metrics.record("record-queue-time", now - batch.created_ms)
        self.client.send(
            node,
            ApiKey.PRODUCE,
            body,
            callback=on_response,
            expect_response=self.acks != 0,
            api_version=self._version(node, ApiKey.PRODUCE),
            now_ms=now,
        )

    def _version(self, node: int, api_key: ApiKey) -> int | None:
        """The negotiated version of ``api_key``, kept below transaction version 2's unless
        the transaction under way uses it (KIP-890 part 2)."""
        version = self.client.api_version(node, api_key)
        tm = self.transaction_manager
        if version is None or api_key not in TV1_MAX_VERSIONS or (
                tm is not None and tm.transaction_v2):
            return version
        return min(version, TV1_MAX_VERSIONS[api_key])

    def _on_produce(self, response, sent: dict, node: int) -> None:
        now = clock_ms()
        if self.metrics is not None:
            self.metrics.record("request-latency", response.latency_ms)
        if response.error is not None:
            # Disconnected or timed out: nothing is known about these batches; retry them all.
            log.debug("produce request to node %s failed: %s", node, response.error)
            for batch in sent.values():
                self._complete_batch(batch, response.error, -1, -1, now)
            self.metadata.request_update()
            return
        if response.body is None:  # acks=0: written is all we will ever know
            for batch in sent.values():
                self._complete_batch(batch, None, -1, -1, now)
            return
        moved = self._take_leader_hints(response.body)
        for topic_response in response.body["responses"]:
            topic = topic_response["name"]
            for part in topic_response["partition_responses"]:
                batch = sent.pop((topic, part["index"]), None)
                if batch is None:
                    continue
                code = part["error_code"]
                error = None
                if code not in (Errors.NONE, Errors.DUPLICATE_SEQUENCE_NUMBER):
                    error = for_code(code)(part.get("error_message") or None)
                self._complete_batch(
                    batch,
                    error,
                    part["base_offset"],
                    part.get("log_append_time_ms", -1),
                    now,
                    leader_moved=(topic, part["index"]) in moved,
                )
        for batch in sent.values():  # the broker left some out: treat as a retriable failure
            self._complete_batch(
                batch,
                IllegalStateError("the broker's response did not mention this partition"),
                -1,
                -1,
                now,
            )

    def _take_leader_hints(self, body) -> set:
        """KIP-951: a partition refused with NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH comes
        with its ``current_leader`` (Produce v10+), and the response with the addresses of
        brokers we may not know (``node_endpoints``).  Move those partitions in the metadata now,
        so their retries go to the new leader without waiting for a refresh; return the
        partitions that moved."""
        leaders = {}
        for topic_response in body["responses"]:
            for part in topic_response["partition_responses"]:
                if part["error_code"] not in (
                    Errors.NOT_LEADER_OR_FOLLOWER,
                    Errors.FENCED_LEADER_EPOCH,
                ):
                    continue  # the common case: one comparison per partition
                hint = part.get("current_leader")
                if hint and hint["leader_id"] >= 0 and hint["leader_epoch"] >= 0:
                    tp = TopicPartition(topic_response["name"], part["index"])
                    leaders[tp] = (hint["leader_id"], hint["leader_epoch"])
        if not leaders:
            return set()
        endpoints = [
            Node(e["node_id"], e["host"], e["port"], e.get("rack"))
            for e in body.get("node_endpoints") or ()
        ]
        return self.metadata.update_partition_leadership(leaders, endpoints)

    def _complete_batch(
        self,
        batch,
        error,
        base_offset: int,
        log_append_time: int,
        now: int,
        *,
        leader_moved: bool = False,
    ):
        tp = (batch.topic, batch.partition)
        if batch.final_state is not None:  # expired while in flight: only the memory is left
            if error is None and self.transaction_manager is not None:
                # Written after all: this settles the doubt its expiry raised.
                self.transaction_manager.acknowledged(tp, batch)
            self._finish(batch, tp)
            self.accumulator.deallocate(batch)
            return
        if error is None:
            self._finish(batch, tp)
            if self.transaction_manager is not None:
                self.transaction_manager.acknowledged(tp, batch)
            batch.done(base_offset, log_append_time, None)
            self.accumulator.deallocate(batch)
            return
        code = getattr(error, "errno", None)
        if code == Errors.MESSAGE_TOO_LARGE and batch.record_count > 1:
            # Too big for the broker: split into batch.size pieces and send those instead.
            self._finish(batch, tp)
            self.accumulator.split_and_reenqueue(batch, now)
            self.accumulator.deallocate(batch)
            if self.metrics is not None:
                self.metrics.record("batch-split")
            return
        if self._can_retry(batch, error, now):
            log.debug("retrying %s-%s after %s", tp[0], tp[1], error)
            self._finish(batch, tp)
            self.accumulator.reenqueue(batch, now)
            if leader_moved:
                self.accumulator.retry_without_backoff(batch)
            if self.metrics is not None:
                self.metrics.record("record-retry", batch.record_count, batch.record_count)
            if code in STALE_METADATA_ERRORS or isinstance(error, ConnectionError):
                self.metadata.request_update()
            return
        tm = self.transaction_manager
        if tm is not None:
            if getattr(error, "retriable", False) or isinstance(error, ConnectionError):
                # Out of time or tries after a timeout or a disconnect: it may have been written.
                tm.mark_unresolved(tp, batch)
            else:  # refused: its sequences are a gap that only a new epoch closes
                tm.failed(tp, batch)
        self._fail_batch(batch, error, now)

    def _can_retry(self, batch, error, now: int) -> bool:
        if batch.has_reached_delivery_timeout(self.delivery_timeout_ms, now):
            return False
        if batch.attempts >= self.retries:
            return False
        tm = self.transaction_manager
        code = getattr(error, "errno", None)
        if tm is not None and code in (
            Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
            Errors.UNKNOWN_PRODUCER_ID,
        ):
            # Retried: behind an elder still on its way, or after its partition starts over
            # under a new epoch (KIP-360), which the transaction manager decides.
            return tm.can_retry_sequence_error(
                (batch.topic, batch.partition), batch, code == Errors.UNKNOWN_PRODUCER_ID
            )
        if tm is not None and code in (Errors.PRODUCER_FENCED, Errors.INVALID_PRODUCER_EPOCH):
            return tm.can_retry_fenced_raised_epoch((batch.topic, batch.partition), batch)
        return bool(getattr(error, "retriable", False))

    def _fail_batch(self, batch, error: BaseException, now: int) -> None:
        tp = (batch.topic, batch.partition)
        tm = self.transaction_manager
        if tm is not None and tm.transactional_id is not None:
            tm.maybe_transition_to_error_state(error)  # the transaction cannot commit now
        self._finish(batch, tp)
        self._record_error(batch)
        batch.done(-1, -1, error)
        self.accumulator.deallocate(batch)

    def _record_error(self, batch) -> None:
        if self.metrics is not None:
            self.metrics.record("record-error", batch.record_count, batch.record_count)

    def _finish(self, batch, tp: tuple) -> None:
        in_flight = self._in_flight.get(tp)
        if in_flight is not None and batch in in_flight:
            in_flight.remove(batch)
            if not in_flight:
                del self._in_flight[tp]
        if self.transaction_manager is not None:
            self.transaction_manager.remove_in_flight(tp, batch)
        if self.guarantee_message_order:
            self.accumulator.unmute(tp)

    # -- idempotence ------------------------------------------------------------------------

    def _maybe_rewrite_sequences(self, now: int) -> None:
        """KIP-360: start over the partitions the transaction manager gave up on, once nothing
        of theirs is in flight: first a new epoch if they are still numbered under the current
        one (raised by the producer itself; from InitProducerId when the epoch is exhausted or
        a broker forgot us), then their queued batches numbered again from 0 (Java's
        ``bumpIdempotentEpochAndResetIdIfNeeded``)."""
        tm = self.transaction_manager
        if self._init_pid_in_flight:
            return
        idle, needs_bump = tm.partitions_to_rewrite()
        if not idle:
            return
        if needs_bump:
            if not tm.bump_idempotent_epoch():
                self._maybe_init_producer_id(now, bump=True)
                return
            log.info("producer %s: epoch raised to %s to start %s over (KIP-360)",
                     tm.producer_id, tm.producer_epoch, sorted(idle))
        for tp in idle:
            try:
                self.accumulator.rewrite_sequences(tp)
            except BufferError:
                # A view of a batch's bytes from an earlier request is still alive somewhere:
                # its header cannot change under it.  The partition stays marked; next loop.
                log.debug("sequences of %s not rewritten yet: a view of a batch is alive", tp)
                return
        log.info("producer %s epoch %s: sequences restarted for %s",
                 tm.producer_id, tm.producer_epoch, sorted(idle))

    def _maybe_init_producer_id(self, now: int, bump: bool = False) -> None:
        if self._init_pid_in_flight or now < self._init_pid_backoff_until:
            return
        node = self.client.least_loaded_node(now)
        if node is None or not self.client.ready(node, now):
            return
        producer_id, producer_epoch = -1, -1
        if bump:
            # Our id and epoch ask the broker to bump the epoch (InitProducerId v3+); (-1, -1)
            # asks for a new producer id, which starts every sequence over as well.
            version = self.client.api_version(node, ApiKey.INIT_PRODUCER_ID) or 0
            producer_id, producer_epoch = self.transaction_manager.bump_request(
                version >= 3 and not self._bump_refused
            )
        body = {
            "transactional_id": None,
            "transaction_timeout_ms": 2147483647,
            "producer_id": producer_id,
            "producer_epoch": producer_epoch,
        }
        self._init_pid_in_flight = True

        def on_response(response, asked_bump=producer_id >= 0):
            self._on_init_producer_id(response, asked_bump)

        self.client.send(node, ApiKey.INIT_PRODUCER_ID, body, callback=on_response, now_ms=now)

    def _on_init_producer_id(self, response, asked_bump: bool = False) -> None:
        self._init_pid_in_flight = False
        body = response.body
        if response.error is not None or body is None or body["error_code"] != Errors.NONE:
            reason = response.error if response.error is not None else body and body["error_code"]
            if asked_bump and response.error is None:
                self._bump_refused = True  # this broker cannot bump: ask for a new id next time
                log.info("the broker refused to bump the producer epoch (%s); asking for a new "
                         "producer id", reason)
                return
            if body is not None and body["error_code"] in _FATAL_INIT_ERRORS:
                # Not allowed to produce at all (Java: ClusterAuthorizationException is fatal).
                self._fatal_error = for_code(body["error_code"])(
                    "InitProducerId refused: this principal may not produce idempotently "
                    "(IDEMPOTENT_WRITE on the cluster or WRITE on a topic is needed)")
                log.error("%s", self._fatal_error)
                return
            # A broken connection is the network client's to report (a wrong security.protocol,
            # a broker that stays unreachable: once, there), and so is a fatal error it holds;
            # a warning here on every retry would repeat it ten times a second.
            quiet = (getattr(self.client, "authentication_error", None) is not None
                     or isinstance(response.error, NetworkError))
            (log.debug if quiet else log.warning)("InitProducerId failed (%s); retrying", reason)
            self._init_pid_backoff_until = clock_ms() + self.accumulator.retry_backoff_ms
            return
        tm = self.transaction_manager
        if tm.has_producer_id():
            log.info("producer id %s epoch %s -> producer id %s epoch %s (KIP-360)",
                     tm.producer_id, tm.producer_epoch, body["producer_id"], body["producer_epoch"])
        tm.set_producer_id(body["producer_id"], body["producer_epoch"])

    # -- transactions -------------------------------------------------------------------------

    def _maybe_send_transactional_request(self, now: int) -> bool:
        """Send the transaction manager's next request; True while one is in flight (or we
        wait for its coordinator), when no data may be sent."""
        tm = self.transaction_manager
        if tm.has_fatal_error():
            # Fenced or unauthorized: nothing queued can ever be sent.  Batches in flight end
            # with their answers (their bytes may still be on their way to the socket).
            self.accumulator.abort_undrained_batches(tm.last_error, queued_retries=True)
            return True
        if self._txn_in_flight is not None or self._find_coordinator_in_flight:
            return True
        if tm.has_abortable_error() or tm.is_aborting():
            # What was never sent is not sent now: its records fail with TransactionAbortedError.
            tm.abort_pending_partitions()
            self.accumulator.abort_undrained_batches(TransactionAbortedError(
                "the transaction was aborted before this record was sent"
                + (f" (after {tm.last_error!r})" if tm.last_error is not None else "")))
        completing = tm.is_completing()
        if completing and not self._txn_flushing:
            # Commit = flush + EndTxn: every batch goes now, and EndTxn waits for their answers.
            self.accumulator.begin_flush()
            self._txn_flushing = True
        elif not completing and self._txn_flushing:
            self.accumulator.end_flush()
            self._txn_flushing = False
        request = tm.next_request(self.accumulator.has_incomplete(), now)
        if request is None:
            return False
        node = tm.coordinator if request.group_id is None else tm.group_coordinators.get(
            request.group_id)
        if node is None:
            tm.retry(request, 0, now)
            return self._find_coordinator(request.group_id, now)
        if not self.client.ready(node, now):
            if self.client.connection_failed(node):
                tm.lookup_coordinator(request)
                self.metadata.request_update()
            tm.retry(request, 0 if not self.client.connection_failed(node)
                     else self.accumulator.retry_backoff_ms, now)
            return True
        if request.group_id is None:
            version = self.client.api_version(node, ApiKey.INIT_PRODUCER_ID) or 0
            tm.coordinator_supports_bump = version >= 3
            # Transaction version 2 needs the cluster to finalize it and the coordinator to
            # speak EndTxn v5; it applies from the next begin_transaction().
            tm.coordinator_transaction_version = self.client.finalized_feature(
                node, "transaction.version") if (self.client.api_version(
                    node, ApiKey.END_TXN) or 0) >= 5 else 0
        self._txn_in_flight = request

        def on_response(response, request=request):
            self._txn_in_flight = None
            done = clock_ms()
            if response.error is not None or response.body is None:
                log.debug("%s to the coordinator failed: %s", request.api_key.name,
                          response.error)
                tm.lookup_coordinator(request)
                tm.retry(request, self.accumulator.retry_backoff_ms, done)
                return
            tm.handle_response(request, response.body, done, self.accumulator.retry_backoff_ms)

        self.client.send(node, request.api_key, request.body(), callback=on_response,
                         api_version=self._version(node, request.api_key), now_ms=now)
        return True

    def _find_coordinator(self, group_id: str | None, now: int) -> bool:
        """FindCoordinator for our transactional id (key type 1) or for a group (key type 0),
        to the least loaded broker."""
        node = self.client.least_loaded_node(now)
        if node is None or not self.client.ready(node, now):
            return True
        tm = self.transaction_manager
        key = tm.transactional_id if group_id is None else group_id
        key_type = 1 if group_id is None else 0
        version = self.client.api_version(node, ApiKey.FIND_COORDINATOR) or 0
        if version >= 4:
            body = {"key_type": key_type, "coordinator_keys": [key]}
        else:
            body = {"key": key, "key_type": key_type}
        self._find_coordinator_in_flight = True

        def on_response(response):
            self._find_coordinator_in_flight = False
            body = response.body
            if response.error is not None or body is None:
                return  # the next loop asks again
            answer = body["coordinators"][0] if "coordinators" in body else body
            code = answer["error_code"]
            if code != Errors.NONE:
                error = for_code(code)(answer.get("error_message"))
                if not error.retriable:
                    # Not allowed to use the id, or a group we may not read: fatal, as in Java.
                    tm.transition_to_fatal_error(error)
                log.debug("FindCoordinator for %r: %s", key, error)
                return
            if self.metadata.cluster.node(answer["node_id"]) is None:
                self.metadata.request_update()  # a broker we have not heard of yet
            if group_id is None:
                tm.coordinator = answer["node_id"]
            else:
                tm.group_coordinators[group_id] = answer["node_id"]

        self.client.send(node, ApiKey.FIND_COORDINATOR, body, callback=on_response, now_ms=now)
        return True
