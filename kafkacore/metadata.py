"""The producer's view of the cluster: which brokers exist and which one leads each partition.

Two threads share a :class:`Metadata` (as in the Java producer's ``Metadata`` / ``ProducerMetadata``):

* the **Sender thread** owns the network: its ``NetworkClient.poll`` asks
  :meth:`Metadata.time_to_next_update`, sends a MetadataRequest when it is due, and hands the
  response to :meth:`Metadata.update` (or calls :meth:`Metadata.failed_update`);
* **user threads**, inside ``KafkaProducer.send``, read the current :class:`Cluster` with
  :meth:`Metadata.fetch` (no lock: a ``Cluster`` is immutable and replaced whole), and when a
  topic is missing they call :meth:`Metadata.request_update_for_topic`, wake the Sender and block
  in :meth:`Metadata.await_update` (or use :meth:`Metadata.wait_for_topic`, which is that loop).

Every mutable field of ``Metadata`` is guarded by one lock, ``Metadata._lock`` (a
``threading.Condition``; ``update`` notifies it), with two exceptions, both single operations
that are atomic under the GIL: reading ``cluster`` (a reference to an immutable object; a plain
attribute, not a property, because ``send`` reads it once per record), and
``add_topic`` renewing the expiry of a topic already in ``_topics`` (one dict store, done on every
send; whoever iterates ``_topics`` copies it first, under the lock).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from kafkacore import errors
from kafkacore.core.appender import CurrentCluster
from kafkacore.errors import Errors

#: A refresh time so far in the past that no backoff since it holds the next refresh back.
_LONG_AGO_MS = -(2**62)

#: Topic errors that end a wait at once: no refresh will make them go away.
FATAL_TOPIC_ERRORS = frozenset({Errors.INVALID_TOPIC_EXCEPTION,
                                Errors.TOPIC_AUTHORIZATION_FAILED})


class TopicPartition(NamedTuple):
    """A partition of a topic: the unit batches, leaders and sequence numbers belong to."""

    topic: str
    partition: int


class Node(NamedTuple):
    """A broker.  Bootstrap addresses get negative ids until a metadata response names them."""

    node_id: int
    host: str
    port: int
    rack: str | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


class PartitionInfo(NamedTuple):
    """One partition as the last accepted metadata response described it."""

    topic: str
    partition: int
    #: Node id of the leader, or ``None`` if the partition has no leader right now.
    leader: int | None
    #: The leader's epoch (it grows each time leadership moves), or ``None`` if the broker did
    #: not send one (Metadata v0-v6) or sent -1.
    leader_epoch: int | None
    replicas: tuple[int, ...] = ()
    isr: tuple[int, ...] = ()
    offline_replicas: tuple[int, ...] = ()
    #: The partition-level error code of the response (0 = none).
    error_code: int = Errors.NONE


class Cluster:
    """An immutable snapshot of the cluster: brokers, partitions, leaders, topic errors.

    :class:`Metadata` replaces its ``Cluster`` whole on every update, so a reader that took one
    with :meth:`Metadata.fetch` sees a consistent picture for as long as it keeps it.
    """

    __slots__ = (
        "_nodes",
        "_partitions",
        "_available",
        "_by_node",
        "_topic_errors",
        "cluster_id",
        "controller_id",
        "is_bootstrap",
    )

    def __init__(
        self,
        nodes: Iterable[Node] = (),
        partitions: Iterable[PartitionInfo] = (),
        topic_errors: Mapping[str, int] | None = None,
        *,
        cluster_id: str | None = None,
        controller_id: int | None = None,
        is_bootstrap: bool = False,
    ) -> None:
        self._nodes: dict[int, Node] = {n.node_id: n for n in nodes}
        by_topic: dict[str, list[PartitionInfo]] = {}
        for p in partitions:
            by_topic.setdefault(p.topic, []).append(p)
        self._partitions: dict[str, tuple[PartitionInfo, ...]] = {
            t: tuple(sorted(ps, key=lambda p: p.partition)) for t, ps in by_topic.items()
        }
        # "Available" = the leader is known and is a broker we know how to reach.
        self._available: dict[str, tuple[PartitionInfo, ...]] = {
            t: tuple(p for p in ps if p.leader is not None and p.leader in self._nodes)
            for t, ps in self._partitions.items()
        }
        by_node: dict[int, list[TopicPartition]] = {}
        for ps in self._partitions.values():
            for p in ps:
                if p.leader is not None:
                    by_node.setdefault(p.leader, []).append(TopicPartition(p.topic, p.partition))
        self._by_node = {n: tuple(ps) for n, ps in by_node.items()}
        self._topic_errors: dict[str, int] = dict(topic_errors or {})
        #: The cluster id the brokers reported (Metadata v2+).
        self.cluster_id = cluster_id
        #: The controller's node id (Metadata v1+), ``None`` if unknown.
        self.controller_id = controller_id
        #: True for the cluster made of bootstrap addresses only (before the first response).
        self.is_bootstrap = is_bootstrap

    @classmethod
    def bootstrap(cls, addresses: Iterable[tuple[str, int]]) -> Cluster:
        """A cluster of bootstrap addresses, with node ids -1, -2, ... (as Java does)."""
        nodes = [Node(-(i + 1), host, port) for i, (host, port) in enumerate(addresses)]
        return cls(nodes, is_bootstrap=True)

    # -- brokers ------------------------------------------------------------------------------

    @property
    def nodes(self) -> list[Node]:
        """Every known broker."""
        return list(self._nodes.values())

    def node(self, node_id: int) -> Node | None:
        """The broker with this id, or ``None``."""
        return self._nodes.get(node_id)

    # -- topics and partitions ----------------------------------------------------------------

    @property
    def topics(self) -> frozenset[str]:
        """Topics with partition information."""
        return frozenset(self._partitions)

    def partitions_for_topic(self, topic: str) -> list[PartitionInfo]:
        """Every partition of ``topic`` (sorted by number); empty if the topic is unknown."""
        return list(self._partitions.get(topic, ()))

    def available_partitions_for_topic(self, topic: str) -> list[PartitionInfo]:
        """The partitions of ``topic`` whose leader is known."""
        return list(self._available.get(topic, ()))

    def partitions_for_node(self, node_id: int) -> list[TopicPartition]:
        """The partitions led by ``node_id`` (what the accumulator drains for that node)."""
        return list(self._by_node.get(node_id, ()))

    def partition_count(self, topic: str) -> int | None:
        """The number of partitions of ``topic``, or ``None`` if the topic is unknown."""
        ps = self._partitions.get(topic)
        return len(ps) if ps is not None else None

    def partition(self, topic: str, partition: int) -> PartitionInfo | None:
        """One partition's information, or ``None``."""
        for p in self._partitions.get(topic, ()):
            if p.partition == partition:
                return p
        return None

    def leader_for(self, topic: str, partition: int) -> int | None:
        """The node id of the broker leading ``topic``/``partition``, or ``None`` if unknown (no
        leader yet, unknown topic, or a leader id that is not among the brokers).

        (Java's ``leaderFor`` returns the ``Node``; every caller of ours wants the id, which is
        what the network client takes.  :meth:`node` turns it into a :class:`Node`.)
        """
        p = self.partition(topic, partition)
        if p is None or p.leader is None or p.leader not in self._nodes:
            return None
        return p.leader

    # -- errors -------------------------------------------------------------------------------

    @property
    def topic_errors(self) -> dict[str, int]:
        """Topic name -> error code, for the topics the last response answered with an error."""
        return dict(self._topic_errors)

    @property
    def invalid_topics(self) -> frozenset[str]:
        """Topics the broker called invalid (INVALID_TOPIC_EXCEPTION)."""
        return frozenset(t for t, c in self._topic_errors.items()
                         if c == Errors.INVALID_TOPIC_EXCEPTION)

    @property
    def unauthorized_topics(self) -> frozenset[str]:
        """Topics we may not describe (TOPIC_AUTHORIZATION_FAILED)."""
        return frozenset(
            t for t, c in self._topic_errors.items() if c == Errors.TOPIC_AUTHORIZATION_FAILED
        )

    def __repr__(self) -> str:
        return (
            f"Cluster(nodes={sorted(self._nodes)}, topics={sorted(self._partitions)}, "
            f"errors={self._topic_errors}, bootstrap={self.is_bootstrap})"
        )


class Metadata:
    """The versioned, shared view of the cluster, and the rules for refreshing it.

    :param refresh_backoff_ms: ``retry.backoff.ms``: the least time between two refreshes.
    :param metadata_max_age_ms: ``metadata.max.age.ms``: refresh at least this often.
    :param metadata_max_idle_ms: ``metadata.max.idle.ms``: forget a topic not used for this long.
    :param allow_auto_topic_creation: ``allow.auto.create.topics``: ask the broker to create
        missing topics (it still decides, by its ``auto.create.topics.enable``).
    """

    def __init__(
        self,
        refresh_backoff_ms: int = 100,
        metadata_max_age_ms: int = 300000,
        metadata_max_idle_ms: int = 300000,
        *,
        allow_auto_topic_creation: bool = True,
    ) -> None:
        for name, value in (
            ("refresh_backoff_ms", refresh_backoff_ms),
            ("metadata_max_age_ms", metadata_max_age_ms),
            ("metadata_max_idle_ms", metadata_max_idle_ms),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an int >= 0, got {value!r}")
        self.refresh_backoff_ms = refresh_backoff_ms
        self.metadata_max_age_ms = metadata_max_age_ms
        self.metadata_max_idle_ms = metadata_max_idle_ms
        #: Sent in every MetadataRequest: may the broker create a topic we ask about?
        self.allow_auto_topic_creation = bool(allow_auto_topic_creation)
        #: Ask for every topic of the cluster, not only ours (an admin's "list topics").
        self.all_topics = False

        # Guards every field below except cluster's *reads* (see the module docstring).
        self._lock = threading.Condition()
        #: Holds the current snapshot, :attr:`cluster`: a compiled field that the send path reads
        #: once per record without an attribute lookup.
        self.current = CurrentCluster(Cluster())
        # Bumped by every successful update; waiters compare against it.
        self._update_version = 0
        # Bumped by every request for an update (so an update answers the requests made before
        # it was sent, and not those made while it was in flight).
        self._request_version = 0
        # True when someone asked for a refresh that has not been sent yet.
        self._need_update = False
        # When the last refresh ended (success or failure) and the last success, monotonic ms.
        # (Far in the past at first: the first refresh is never held back.)
        self._last_refresh_ms = _LONG_AGO_MS
        self._last_successful_refresh_ms = _LONG_AGO_MS
        # Topics the producer uses -> the monotonic ms after which an unused topic is dropped.
        self._topics: dict[str, int] = {}
        # The highest leader epoch accepted per partition: older leaders are ignored.
        self._last_seen_leader_epochs: dict[TopicPartition, int] = {}
        # Set by close(); wakes waiters.
        self._closed = False
        # An authentication failure (Java's Metadata.fatalError): waiters raise it at once.
        self._fatal_error: BaseException | None = None
        #: Set by the NetworkClient: the brokers it failed to reach and why ("" when none), for
        #: the message of a metadata wait that timed out.
        self.connection_report: Callable[[], str] = lambda: ""

    # -- reading ------------------------------------------------------------------------------

    @property
    def cluster(self) -> Cluster:
        """The current snapshot (a :class:`Cluster`): replaced under the lock, never mutated,
        read without it."""
        return self.current.cluster  # type: ignore[no-any-return]

    @cluster.setter
    def cluster(self, cluster: Cluster) -> None:
        self.current.cluster = cluster

    def fetch(self) -> Cluster:
        """The current cluster snapshot (no lock; the snapshot never changes)."""
        return self.cluster

    @property
    def version(self) -> int:
        """The update version, which grows by one with every successful update."""
        with self._lock:
            return self._update_version

    @property
    def closed(self) -> bool:
        return self._closed

    def topics(self) -> list[str]:
        """The topics the producer uses (what a metadata request asks for)."""
        with self._lock:
            return list(self._topics)

    def last_seen_leader_epoch(self, tp: TopicPartition) -> int | None:
        """The highest leader epoch accepted for ``tp``, or ``None``."""
        with self._lock:
            return self._last_seen_leader_epochs.get(tp)

    # -- asking for updates -------------------------------------------------------------------

    def bootstrap(self, addresses: Iterable[tuple[str, int]]) -> None:
        """Start from the bootstrap addresses; the first refresh is due at once."""
        with self._lock:
            self.cluster = Cluster.bootstrap(addresses)
            self._need_update = True
            self._lock.notify_all()

    def add_topic(self, topic: str, now_ms: int | None = None) -> None:
        """Note that the producer uses ``topic`` (again); a new topic asks for an update.

        Call it on every send: a topic not used for ``metadata_max_idle_ms`` is dropped.
        """
        if not isinstance(topic, str) or not topic:
            raise TypeError(f"topic must be a non-empty str, got {topic!r}")
        now_ms = _now(now_ms)
        expiry = now_ms + self.metadata_max_idle_ms
        if topic in self._topics:
            # The per-send path (Java calls metadata.add on every send): only the expiry moves.
            # A single dict store is atomic under the GIL, so no lock; if the topic expired
            # meanwhile, this re-adds it and the next wait_for_topic asks for it again.
            self._topics[topic] = expiry
            return
        validate_topic(topic)  # once per new topic, off the per-send path
        with self._lock:
            if topic not in self._topics:
                # Java's requestUpdateForNewTopics: asked for now, not after the backoff since
                # the last refresh (which, just after start, asked for no topics at all).
                self._need_update = True
                self._request_version += 1
                self._last_refresh_ms = _LONG_AGO_MS
            self._topics[topic] = expiry

    def request_update(self) -> int:
        """Ask for a refresh as soon as the backoff allows; returns the current update version
        (pass it to :meth:`await_update`)."""
        with self._lock:
            self._need_update = True
            self._request_version += 1
            return self._update_version

    def request_update_for_topic(self, topic: str, now_ms: int | None = None) -> int:
        """:meth:`add_topic` and :meth:`request_update` in one step; returns the update version."""
        self.add_topic(topic, now_ms)
        return self.request_update()

    def update_requested(self) -> bool:
        """True if a refresh was asked for and has not been answered yet."""
        with self._lock:
            return self._need_update

    def time_to_next_update(self, now_ms: int | None = None) -> int:
        """Milliseconds until a refresh is due (0 = now).

        Due when asked for (but never sooner than ``refresh_backoff_ms`` after the previous
        refresh ended) or when the snapshot is older than ``metadata_max_age_ms``.
        """
        now_ms = _now(now_ms)
        with self._lock:
            if self._closed:
                return 2**31 - 1
            if self._need_update:
                to_expire = 0
            else:
                to_expire = max(
                    self._last_successful_refresh_ms + self.metadata_max_age_ms - now_ms, 0
                )
            to_allow = max(self._last_refresh_ms + self.refresh_backoff_ms - now_ms, 0)
            return max(to_expire, to_allow)

    def new_metadata_request(self, now_ms: int | None = None) -> tuple[dict[str, Any], int]:
        """The body of the next MetadataRequest and the request version it answers.

        It asks for the producer's topics only (a producer has no use for the others) and, like
        Java's ``ProducerMetadata``, allows the broker to create a missing topic if the broker is
        configured to (``auto.create.topics.enable``).  The caller passes the request version
        back to :meth:`update`.
        """
        now_ms = _now(now_ms)
        with self._lock:
            self._expire_topics(now_ms)
            body = {
                # add_topic validated each name; isascii() keeps the promise that no single
                # topic can make the request unencodable for the others all the same.
                "topics": None if self.all_topics else
                [{"name": t} for t in list(self._topics) if t.isascii()],
                "allow_auto_topic_creation": self.allow_auto_topic_creation,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False,
            }
            return body, self._request_version

    # -- applying responses (the Sender thread) -------------------------------------------------

    def update(
        self,
        response: Mapping[str, Any],
        now_ms: int | None = None,
        *,
        request_version: int | None = None,
    ) -> None:
        """Apply a decoded MetadataResponse (a dict with snake_case fields).

        A response without brokers counts as a failed refresh (Java ignores it too).  For each
        partition, a leader epoch lower than the last one accepted means this broker's view is
        older than one we already had: we keep the partition as we knew it.  Topics answered
        with an error have no partitions in the new snapshot; the error is kept in
        :attr:`Cluster.topic_errors` so waiters can tell "not yet" from "never".
        """
        now_ms = _now(now_ms)
        with self._lock:
            if self._closed:
                raise errors.IllegalStateError("metadata update after close")
            if not response.get("brokers"):
                self._failed_update_locked(now_ms)
                return
            self._last_refresh_ms = now_ms
            self._last_successful_refresh_ms = now_ms
            if request_version is None or request_version >= self._request_version:
                self._need_update = False
            self._update_version += 1
            self._expire_topics(now_ms)
            self.cluster = self._build_cluster(response)
            # Forget epochs of topics we dropped.
            for tp in [tp for tp in self._last_seen_leader_epochs if tp.topic not in self._topics]:
                del self._last_seen_leader_epochs[tp]
            self._lock.notify_all()

    def _build_cluster(self, response: Mapping[str, Any]) -> Cluster:
        # Called with the lock held.
        old = self.cluster
        nodes = [
            Node(b["node_id"], b["host"], b["port"], b.get("rack")) for b in response["brokers"]
        ]
        partitions: list[PartitionInfo] = []
        topic_errors: dict[str, int] = {}
        for topic in response.get("topics") or ():
            name = topic["name"]
            code = topic.get("error_code", 0)
            if name is None:  # Metadata v10+ may answer by topic id only; we ask by name.
                continue
            if name not in self._topics and not self.all_topics:
                continue  # not ours (or expired while the request was in flight)
            if code:
                topic_errors[name] = code
                if _is_invalid_metadata(code):
                    self._need_update = True
                continue
            for p in topic.get("partitions") or ():
                info = self._accept_partition(name, p, old)
                if info is not None:
                    partitions.append(info)
                if p.get("error_code", 0) and _is_invalid_metadata(p["error_code"]):
                    self._need_update = True
        return Cluster(
            nodes,
            partitions,
            topic_errors,
            cluster_id=response.get("cluster_id"),
            controller_id=_none_if_negative(response.get("controller_id")),
        )

    def _accept_partition(
        self, topic: str, p: Mapping[str, Any], old: Cluster
    ) -> PartitionInfo | None:
        # Java's Metadata.updateLatestMetadata: keep leader epochs monotonic per partition.
        tp = TopicPartition(topic, p["partition_index"])
        epoch = _none_if_negative(p.get("leader_epoch", -1))
        info = PartitionInfo(
            topic,
            tp.partition,
            _none_if_negative(p.get("leader_id", -1)),
            epoch,
            tuple(p.get("replica_nodes") or ()),
            tuple(p.get("isr_nodes") or ()),
            tuple(p.get("offline_replicas") or ()),
            p.get("error_code", 0),
        )
        if epoch is None:
            # No epoch to compare: take what we are told, and forget any epoch we had.
            self._last_seen_leader_epochs.pop(tp, None)
            return info
        seen = self._last_seen_leader_epochs.get(tp)
        if seen is None or epoch >= seen:
            self._last_seen_leader_epochs[tp] = epoch
            return info
        # A stale answer (this broker has not heard of the newer leader yet): keep the old view.
        return old.partition(topic, tp.partition)

    def update_partition_leadership(
        self,
        leaders: Mapping[TopicPartition, tuple[int, int]],
        endpoints: Iterable[Node] = (),
    ) -> set[TopicPartition]:
        """Take new leaders a Produce response named (KIP-951), without waiting for a refresh.

        ``leaders`` maps a partition to ``(leader_id, leader_epoch)`` from the response's
        ``current_leader``; ``endpoints`` are the brokers it described (``node_endpoints``), for
        leaders this snapshot does not know yet.  A hint is taken only if its epoch is newer
        than the last one we saw for the partition, the partition is in the snapshot, and the
        leader is a broker we can reach.  Returns the partitions that moved.  The update version
        does not change: no waiter is looking for this, and a refresh is still asked for by the
        Sender, which in time confirms it.
        """
        with self._lock:
            if self._closed or not leaders:
                return set()
            old = self.cluster
            nodes = {n.node_id: n for n in old.nodes}
            for node in endpoints:
                nodes[node.node_id] = node
            moved: dict[TopicPartition, PartitionInfo] = {}
            for tp, (leader, epoch) in leaders.items():
                info = old.partition(tp.topic, tp.partition)
                seen = self._last_seen_leader_epochs.get(tp)
                if info is None or leader not in nodes or (seen is not None and epoch <= seen):
                    continue
                moved[tp] = info._replace(leader=leader, leader_epoch=epoch)
                self._last_seen_leader_epochs[tp] = epoch
            if not moved:
                return set()
            partitions = [
                moved.get(TopicPartition(p.topic, p.partition), p)
                for topic in old.topics
                for p in old.partitions_for_topic(topic)
            ]
            self.cluster = Cluster(
                nodes.values(),
                partitions,
                old.topic_errors,
                cluster_id=old.cluster_id,
                controller_id=old.controller_id,
            )
            return set(moved)

    def failed_update(self, now_ms: int | None = None) -> None:
        """A refresh got no usable answer; the next one waits ``refresh_backoff_ms``."""
        with self._lock:
            self._failed_update_locked(_now(now_ms))

    def _failed_update_locked(self, now_ms: int) -> None:
        self._last_refresh_ms = now_ms

    def _expire_topics(self, now_ms: int) -> None:
        # metadata.max.idle.ms: a topic nobody sent to for that long is dropped from requests.
        # (list(...) copies in one C call: safe against add_topic's lock-free store.)
        for topic in [t for t, expiry in list(self._topics.items()) if expiry <= now_ms]:
            del self._topics[topic]

    # -- waiting (user threads) -----------------------------------------------------------------

    def await_update(self, last_version: int, timeout_ms: int, topic: str | None = None) -> int:
        """Block until the update version is greater than ``last_version``; return it.

        Raises :class:`~kafkacore.errors.KafkaTimeoutError` after ``timeout_ms`` and
        :class:`~kafkacore.errors.IllegalStateError` if the metadata is closed.  With ``topic``,
        also raises that topic's fatal error (``kafkacore.errors.InvalidTopicError``,
        ``kafkacore.errors.TopicAuthorizationFailedError``) once the update arrives.
        """
        if timeout_ms < 0:
            raise ValueError(f"timeout_ms must be >= 0, got {timeout_ms}")
        deadline = time.monotonic() + timeout_ms / 1000.0
        with self._lock:
            while (
                self._update_version <= last_version
                and not self._closed
                and self._fatal_error is None
            ):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise errors.KafkaTimeoutError(f"metadata not updated after {timeout_ms} ms")
                self._lock.wait(remaining)
            if self._closed:
                raise errors.IllegalStateError("metadata closed while waiting for an update")
            if self._fatal_error is not None:
                raise self._fatal_error
            version = self._update_version
        if topic is not None:
            self.maybe_throw_exception_for_topic(topic)
        return version

    def maybe_throw_exception_for_topic(self, topic: str) -> None:
        """Raise the fatal error the last response gave ``topic``, if any.

        Only INVALID_TOPIC_EXCEPTION and TOPIC_AUTHORIZATION_FAILED are fatal.
        UNKNOWN_TOPIC_OR_PARTITION and LEADER_NOT_AVAILABLE are not: the topic may be being
        created, and waiting (until ``max.block.ms``) may see it appear.
        """
        code = self.cluster.topic_errors.get(topic)
        if code in FATAL_TOPIC_ERRORS:
            raise errors.for_code(code)(f"topic {topic!r}")

    def wait_for_topic(
        self,
        topic: str,
        partition: int | None = None,
        *,
        max_wait_ms: int,
        wakeup: Callable[[], None] | None = None,
    ) -> tuple[Cluster, int]:
        """Java's ``KafkaProducer.waitOnMetadata``: wait until ``topic`` (and ``partition``) is known.

        Returns the cluster and the milliseconds waited.  Each round asks for an update, calls
        ``wakeup`` (the Sender's, so it sends the request now) and waits for the next version.
        Raises :class:`~kafkacore.errors.KafkaTimeoutError` after ``max_wait_ms`` (the message
        says whether the topic or just the partition was missing) and the topic's fatal error at
        once (see :meth:`maybe_throw_exception_for_topic`).
        """
        start = time.monotonic()
        cluster = self.fetch()
        if topic in cluster.invalid_topics:
            raise errors.for_code(Errors.INVALID_TOPIC_EXCEPTION)(f"topic {topic!r}")
        self.add_topic(topic)
        count = cluster.partition_count(topic)
        if count is not None and (partition is None or partition < count):
            return cluster, 0
        answer = _Answer()
        while True:
            # Ask and wake the Sender before looking at the clock: with max.block.ms=0 the caller
            # gives up at once, but the next call must find the answer on its way (Java asks too).
            self.add_topic(topic)
            version = self.request_update()
            if wakeup is not None:
                wakeup()
            remaining = max_wait_ms - int((time.monotonic() - start) * 1000)
            if remaining <= 0:
                raise _missing(topic, partition, count, max_wait_ms, self.connection_report(),
                               answer.reason)
            try:
                self.await_update(version, remaining, topic)
            except errors.KafkaTimeoutError:
                raise _missing(topic, partition, count, max_wait_ms, self.connection_report(),
                               answer.reason) from None
            cluster = self.fetch()
            count = cluster.partition_count(topic)
            if count is not None and (partition is None or partition < count):
                return cluster, int((time.monotonic() - start) * 1000)
            if answer.settled(cluster, topic, partition, count):
                raise _missing(topic, partition, count, int((time.monotonic() - start) * 1000),
                               self.connection_report(), answer.reason)

    def fatal_error(self, error: BaseException | None) -> None:
        """Set (or, with ``None``, clear) the error every metadata wait raises at once.

        The network client sets it when a broker refuses our credentials or our TLS handshake
        fails: waiting until max.block.ms would not help (Java's ``Metadata.fatalError``).
        """
        with self._lock:
            self._fatal_error = error
            self._lock.notify_all()

    @property
    def fatal(self) -> BaseException | None:
        return self._fatal_error

    def close(self) -> None:
        """Wake every waiter (they raise) and refuse further updates."""
        with self._lock:
            self._closed = True
            self._lock.notify_all()


_LEGAL_TOPIC_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
MAX_TOPIC_NAME_LENGTH = 249


def validate_topic(topic: str) -> None:
    """Java's ``Topic.validate``: raise :class:`~kafkacore.errors.InvalidTopicError` for a name
    no broker accepts, before it enters the metadata topic set (where a name that cannot even
    be encoded would fail every Metadata request, for every topic)."""
    if topic in (".", ".."):
        reason = "'.' and '..' are not allowed"
    elif len(topic) > MAX_TOPIC_NAME_LENGTH:
        reason = f"longer than {MAX_TOPIC_NAME_LENGTH} characters"
    elif not _LEGAL_TOPIC_CHARS.issuperset(topic):
        reason = "only ASCII letters, digits, '.', '_' and '-' are allowed"
    else:
        return
    raise errors.for_code(Errors.INVALID_TOPIC_EXCEPTION)(f"topic {topic!r}: {reason}")


#: How long the brokers must keep saying that a topic does not exist (or that a partition is out
#: of its range) before a metadata wait gives up without waiting the rest of ``max.block.ms``:
#: long enough for a topic just created to reach every broker, far shorter than 60 s.
SETTLED_ANSWER_MS = 3000


class _Answer:
    """What the brokers keep answering about a topic a wait cannot find, and since when."""

    def __init__(self) -> None:
        self.reason = ""
        self._since = 0.0

    def settled(self, cluster: Cluster, topic: str, partition: int | None,
                count: int | None) -> bool:
        """Note the latest answer; True once the same "no" has stood for SETTLED_ANSWER_MS."""
        if count is None and cluster.topic_errors.get(topic) == Errors.UNKNOWN_TOPIC_OR_PARTITION:
            reason = ("the brokers answer UNKNOWN_TOPIC_OR_PARTITION: the topic does not exist, "
                      "and they do not create topics on first use (auto.create.topics.enable)")
        elif count is not None and partition is not None and partition >= count:
            # Java's words for it, from KafkaProducer.partition().
            reason = (f"Invalid partition given with record: {partition} is not in the range "
                      f"[0...{count})")
        else:
            self.reason = ""
            return False
        if reason != self.reason:
            self.reason, self._since = reason, time.monotonic()
        return (time.monotonic() - self._since) * 1000 >= SETTLED_ANSWER_MS


def _missing(
    topic: str, partition: int | None, count: int | None, waited_ms: int, report: str = "",
    reason: str = "",
) -> Exception:
    # Java's messages, then (ours) what the brokers said, or the brokers we could not reach and
    # why: "not present in metadata" alone sends users looking in the wrong place.
    said = f": {reason}." if reason else "."
    tried = f" Brokers tried: {report}." if report else ""
    if count is None or partition is None:
        return errors.KafkaTimeoutError(
            f"Topic {topic} not present in metadata after {waited_ms} ms{said}{tried}"
        )
    return errors.KafkaTimeoutError(
        f"Partition {partition} of topic {topic} with partition count {count} is not present "
        f"in metadata after {waited_ms} ms{said}{tried}"
    )


def _is_invalid_metadata(code: int) -> bool:
    return bool(getattr(errors.for_code(code), "invalid_metadata", False))


def _none_if_negative(value: int | None) -> int | None:
    return None if value is None or value < 0 else value


def _now(now_ms: int | None) -> int:
    return int(time.monotonic() * 1000) if now_ms is None else now_ms
