"""Fetch: one partition's records from its leader, as Arrow columns.

The Java consumer's ``Fetcher`` and ``CompletedFetch`` cut down to what a reader of an offset
range needs: find the leader in the metadata, send a Fetch with the leader epoch we know
(KIP-320's ``current_leader_epoch``, so a deposed leader answers FENCED_LEADER_EPOCH instead of
serving stale data), retry what is retriable with backoff, refresh the metadata when the answer
says it is stale, and decode each answer with the compiled :mod:`kafkacore.core.arrow_records`.

The next Fetch is sent before the current answer is decoded (its offset comes from the batch
headers alone), so the broker reads the log while we decode.

Fetch sessions (KIP-227) are not used: a session saves resending the partitions whose fetch
offset did not move, and a reader of one partition moves its offset with every Fetch, so a
session would save nothing and hold one of the broker's session cache slots.  Each Fetch is
sessionless (session epoch -1).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from kafkacore import errors
from kafkacore.consumer.config import ConsumerConfig
from kafkacore.consumer.schema import schema_for
from kafkacore.core.arrow_records import batch_ends, constant_columns, decode_records
from kafkacore.errors import Errors
from kafkacore.metadata import Metadata, TopicPartition
from kafkacore.network import sasl, tls
from kafkacore.network.client import ClientResponse, NetworkClient, clock_ms
from kafkacore.protocol.api_keys import ApiKey

log = logging.getLogger(__name__)

#: Fetch v12: topics by name (v13 names them by id), flexible, KIP-320 epochs, the LSO and the
#: aborted transactions of read_committed.
FETCH_VERSION = 12

#: Error codes after which the same Fetch may succeed once the metadata is fresh.
_STALE_METADATA = frozenset({
    Errors.NOT_LEADER_OR_FOLLOWER,
    Errors.LEADER_NOT_AVAILABLE,
    Errors.FENCED_LEADER_EPOCH,
    Errors.UNKNOWN_TOPIC_OR_PARTITION,
    Errors.KAFKA_STORAGE_ERROR,
    Errors.REPLICA_NOT_AVAILABLE,
    Errors.UNKNOWN_TOPIC_ID,
    Errors.INCONSISTENT_TOPIC_ID,
})
#: Error codes after which the same Fetch may succeed later, metadata as it is: the broker has
#: not caught up with the epoch we know (UNKNOWN_LEADER_EPOCH), or is busy.
_RETRY_LATER = frozenset({
    Errors.UNKNOWN_LEADER_EPOCH,
    Errors.OFFSET_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS,
    Errors.REQUEST_TIMED_OUT,
    Errors.CORRUPT_MESSAGE,
})

ISOLATION_LEVELS = {"read_uncommitted": 0, "read_committed": 1}


class ClientSession:
    """One NetworkClient, its Metadata, and the waits and retries every call shares.

    Not thread-safe (nor is the NetworkClient): one per thread or per Python worker.
    """

    def __init__(self, config: ConsumerConfig) -> None:
        self.config = config
        self.metadata = Metadata(
            refresh_backoff_ms=config["retry.backoff.ms"],
            metadata_max_age_ms=config["metadata.max.age.ms"],
            allow_auto_topic_creation=False,
        )
        protocol = config["security.protocol"]
        # Checked here, as KafkaProducer does: a bad key file is a ConfigError at construction.
        ssl_context = tls.create_ssl_context(config) if protocol.endswith("SSL") else None
        sasl_mechanism = sasl.mechanism_factory(config) if protocol.startswith("SASL_") else None
        self.client = NetworkClient(
            [f"{host}:{port}" for host, port in config["bootstrap.servers"]],
            self.metadata,
            client_id=config["client.id"] or "kafkacore-reader",
            request_timeout_ms=config["request.timeout.ms"],
            reconnect_backoff_ms=config["reconnect.backoff.ms"],
            reconnect_backoff_max_ms=config["reconnect.backoff.max.ms"],
            socket_connection_setup_timeout_ms=config["socket.connection.setup.timeout.ms"],
            connections_max_idle_ms=config["connections.max.idle.ms"],
            send_buffer_bytes=config["send.buffer.bytes"],
            receive_buffer_bytes=config["receive.buffer.bytes"],
            ssl_context=ssl_context,
            sasl_mechanism=sasl_mechanism,
        )
        self.isolation_level = ISOLATION_LEVELS[config["isolation.level"]]

    # -- time --------------------------------------------------------------------------------

    def backoff_ms(self, attempt: int) -> int:
        """retry.backoff.ms doubled per attempt up to retry.backoff.max.ms, +/-20 % jitter."""
        base = min(self.config["retry.backoff.ms"] * (2 ** min(attempt, 16)),
                   self.config["retry.backoff.max.ms"])
        return int(base * random.uniform(0.8, 1.2))

    def sleep(self, ms: int, deadline: int) -> None:
        """Wait ``ms`` (not past ``deadline``) while the client does its I/O."""
        until = min(clock_ms() + ms, deadline)
        while (remaining := until - clock_ms()) > 0:
            self.client.poll(remaining)

    def unreachable(self) -> str:
        """The brokers we could not reach and why, for a timeout's message ("" if none)."""
        report = self.metadata.connection_report()
        return f": {report}" if report else ""

    # -- metadata ----------------------------------------------------------------------------

    def refresh(self, deadline: int) -> None:
        """A fresh metadata snapshot by ``deadline`` (KafkaTimeoutError after it)."""
        version = self.metadata.request_update()
        while self.metadata.version <= version or self.metadata.fetch().is_bootstrap:
            remaining = deadline - clock_ms()
            if remaining <= 0:
                raise errors.KafkaTimeoutError(
                    "no metadata from the cluster in time" + self.unreachable())
            self.client.poll(min(remaining, 100))
            if self.client.authentication_error is not None:
                raise self.client.authentication_error

    def partition_count(self, topic: str, deadline: int) -> int | None:
        """``topic``'s partition count, ``None`` if the cluster does not have it."""
        self.metadata.add_topic(topic)
        cluster = self.metadata.fetch()
        if topic not in cluster.topics and topic not in cluster.topic_errors:
            self.refresh(deadline)
            cluster = self.metadata.fetch()
        while True:
            code = cluster.topic_errors.get(topic)
            if code == Errors.UNKNOWN_TOPIC_OR_PARTITION:
                return None
            if code and code not in (Errors.LEADER_NOT_AVAILABLE,):
                raise errors.for_code(code)(f"metadata of topic {topic!r}")
            count = cluster.partition_count(topic)
            if count:
                return count
            self.refresh(deadline)
            cluster = self.metadata.fetch()

    def leader(self, tp: TopicPartition, deadline: int) -> tuple[int, int]:
        """(leader node id, leader epoch or -1) of ``tp``, refreshing until it has one."""
        self.metadata.add_topic(tp.topic)
        refreshed = False
        while True:
            cluster = self.metadata.fetch()
            info = cluster.partition(tp.topic, tp.partition)
            if info is not None and info.leader is not None and cluster.node(info.leader):
                return info.leader, info.leader_epoch if info.leader_epoch is not None else -1
            if refreshed and not cluster.is_bootstrap:
                code = cluster.topic_errors.get(tp.topic)
                count = cluster.partition_count(tp.topic)
                if code == Errors.UNKNOWN_TOPIC_OR_PARTITION or (
                        count is not None and tp.partition >= count):
                    gone = errors.UnknownTopicOrPartitionError(
                        f"{tp.topic}-{tp.partition} does not exist")
                    gone.retriable = False  # the fresh metadata says so: no retry helps
                    raise gone
                if code and code != Errors.LEADER_NOT_AVAILABLE:
                    raise errors.for_code(code)(f"metadata of topic {tp.topic!r}")
            self.refresh(deadline)
            refreshed = True

    # -- requests ----------------------------------------------------------------------------

    def send(self, node: int, api_key: ApiKey, body: dict[str, Any], deadline: int,
             max_version: int | None = None) -> list[ClientResponse]:
        """Send a request once ``node`` is ready; the returned list gets its response."""
        while not self.client.ready(node):
            remaining = deadline - clock_ms()
            if remaining <= 0:
                raise errors.KafkaTimeoutError(f"node {node} not ready in time"
                                               + self.unreachable())
            if self.client.authentication_error is not None:
                raise self.client.authentication_error
            if self.client.connection_failed(node):
                raise _NodeDown(node)
            self.client.poll(min(remaining, 100))
        version = self.client.api_version(node, api_key)
        if max_version is not None and version is not None:
            version = min(version, max_version)
        done: list[ClientResponse] = []
        self.client.send(node, api_key, body, callback=done.append, api_version=version)
        return done

    def wait(self, done: list[ClientResponse], deadline: int) -> ClientResponse:
        """Poll until ``done`` holds the response (the client's request timeout bounds it)."""
        while not done:
            if clock_ms() > deadline + self.client.request_timeout_ms:
                raise errors.KafkaTimeoutError("no response in time")
            self.client.poll(100)
        return done[0]

    def close(self) -> None:
        self.client.close()
        self.metadata.close()


class _NodeDown(errors.KafkaError):
    """The connection to a node failed (retriable: the metadata may name another leader)."""

    retriable = True


class _NoAnswer(errors.KafkaError):
    """A Fetch answer without our partition: nothing to read yet; asked again."""

    retriable = True


class PartitionFetcher:
    """Reads ``[start, end)`` of one partition as ``pyarrow.RecordBatch`` es (one per Fetch
    answer that had rows); see :meth:`kafkacore.consumer.PartitionReader.read`."""

    def __init__(self, session: ClientSession, topic: str, partition: int, start: int, end: int,
                 *, include_headers: bool, max_rows: int | None, timeout_s: float) -> None:
        self.session = session
        self.tp = TopicPartition(topic, partition)
        self.start = start
        self.end = end
        self.include_headers = include_headers
        self.max_rows = max_rows
        self.timeout_ms = int(timeout_s * 1000)
        self.schema = schema_for(include_headers)
        self.read_committed = session.isolation_level == 1

    def _request(self, offset: int, epoch: int) -> dict[str, Any]:
        cfg = self.session.config
        return {
            "replica_id": -1,
            # With data at the fetch offset the broker answers at once (min_bytes 1); the wait
            # matters only for a range that reaches past the log's end, where it is the
            # one Fetch that finds the end.
            "max_wait_ms": cfg["fetch.max.wait.ms"],
            "min_bytes": 1,
            "max_bytes": cfg["fetch.max.bytes"],
            "isolation_level": self.session.isolation_level,
            "session_id": 0,
            "session_epoch": -1,  # sessionless: see the module's doc
            "topics": [{"topic": self.tp.topic, "partitions": [{
                "partition": self.tp.partition,
                "current_leader_epoch": epoch,
                "fetch_offset": offset,
                "last_fetched_epoch": -1,
                "log_start_offset": -1,
                "partition_max_bytes": cfg["max.partition.fetch.bytes"],
            }]}],
            "forgotten_topics_data": [],
            "rack_id": "",
        }

    def _send(self, offset: int, deadline: int) -> tuple[list[ClientResponse], int]:
        node, epoch = self.session.leader(self.tp, deadline)
        return self.session.send(node, ApiKey.FETCH, self._request(offset, epoch), deadline,
                                 FETCH_VERSION), node

    def _partition(self, response: ClientResponse) -> dict[str, Any]:
        body = response.response_body()
        code = body.get("error_code", 0)
        if code:
            raise errors.for_code(code)(f"Fetch of {self.tp.topic}-{self.tp.partition}")
        for topic in body["responses"]:
            for p in topic["partitions"]:
                if p["partition_index"] == self.tp.partition:
                    return p  # type: ignore[no-any-return]
        # Some brokers (tansu) leave a partition without data out of a sessionless answer.
        raise _NoAnswer(f"the Fetch answer has no {self.tp.topic}-{self.tp.partition}")

    def _columns(self, decoded: Any) -> pa.RecordBatch:
        topics, partitions = constant_columns(self.tp.topic, self.tp.partition, decoded.num_rows)
        columns = [decoded.key, decoded.value, topics, partitions, decoded.offset,
                   decoded.timestamp, decoded.timestamp_type]
        if self.include_headers:
            columns.append(decoded.headers)
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        offset = self.start
        rows = 0
        attempt = 0
        deadline = clock_ms() + self.timeout_ms  # moved on by every answer that makes progress
        pending: tuple[list[ClientResponse], int] | None = None
        known_end = -1  # the highest log end (or LSO) any answer of this read has named
        while offset < self.end and (self.max_rows is None or rows < self.max_rows):
            try:
                done, node = pending if pending is not None else self._send(offset, deadline)
                pending = None
                response = self.session.wait(done, deadline)
                if response.error is not None:
                    if response.was_disconnected or getattr(response.error, "retriable", False):
                        raise _NodeDown(node)
                    raise response.error
                part = self._partition(response)
                code = part["error_code"]
                if code == Errors.OFFSET_OUT_OF_RANGE:
                    raise errors.OffsetOutOfRangeError(
                        f"offset {offset} of {self.tp.topic}-{self.tp.partition} is out of range"
                        f" (log start offset {part['log_start_offset']}, high watermark"
                        f" {part['high_watermark']})")
                if code:
                    self._note_leader(part)
                    raise errors.for_code(code)(
                        f"Fetch of {self.tp.topic}-{self.tp.partition} at offset {offset}")
            except (errors.KafkaError, _NodeDown) as exc:
                pending = None
                retriable = getattr(exc, "retriable", False) and not isinstance(
                    exc, errors.KafkaTimeoutError)
                if not retriable or clock_ms() >= deadline:
                    raise
                code = getattr(exc, "errno", None)
                log.debug("Fetch of %s at %d: %s; retrying", self.tp, offset, exc)
                if code in _STALE_METADATA or isinstance(exc, _NodeDown):
                    self.session.refresh(deadline)
                self.session.sleep(self.session.backoff_ms(attempt), deadline)
                attempt += 1
                continue
            attempt = 0
            hw = part["high_watermark"]
            lso = part.get("last_stable_offset", -1)
            log_end = lso if self.read_committed and lso >= 0 else hw
            known_end = max(known_end, log_end)
            records = part.get("records") or b""
            # Send the next Fetch before decoding this answer: the broker reads while we decode.
            ahead = batch_ends(records) if records else -1
            if offset < ahead < min(self.end, log_end) and (
                    self.max_rows is None or self.max_rows - rows > 0):
                try:
                    pending = self._send(ahead, deadline)
                except (errors.KafkaError, _NodeDown) as exc:
                    # Only a head start: the loop sends it again, with its retries.
                    log.debug("Fetch of %s at %d not sent ahead: %s", self.tp, ahead, exc)
                    pending = None
            decoded = decode_records(
                records, offset, self.end, part.get("aborted_transactions"),
                read_committed=self.read_committed, include_headers=self.include_headers,
                max_rows=None if self.max_rows is None else self.max_rows - rows)
            if decoded.num_rows:
                rows += decoded.num_rows
                yield self._columns(decoded)
            if decoded.reached_end:
                return
            if pending is not None and ahead != decoded.next_offset:
                pending = None  # asked for the wrong place (its answer is dropped on arrival)
            if decoded.next_offset > offset:
                offset = decoded.next_offset
                deadline = clock_ms() + self.timeout_ms
                continue
            if offset >= known_end:
                return  # the end of the log (or, read_committed, the last stable offset)
            # Below an end this read has already seen: the records are there, but this
            # broker's high watermark is behind (a new leader learns it from its followers'
            # next fetches).  Wait for it, as a consumer would, rather than end early.
            if pending is None and clock_ms() >= deadline:
                raise errors.KafkaTimeoutError(
                    f"no records of {self.tp.topic}-{self.tp.partition} at offset {offset}"
                    f" (log end {log_end}) within {self.timeout_ms} ms")
            if pending is None:
                self.session.sleep(self.session.backoff_ms(attempt), deadline)
                attempt += 1

    def _note_leader(self, part: dict[str, Any]) -> None:
        """A NOT_LEADER / FENCED answer may name the new leader (KIP-951): take it now."""
        leader = part.get("current_leader") or {}
        if leader.get("leader_id", -1) >= 0 and leader.get("leader_epoch", -1) >= 0:
            self.session.metadata.update_partition_leadership(
                {self.tp: (leader["leader_id"], leader["leader_epoch"])})
