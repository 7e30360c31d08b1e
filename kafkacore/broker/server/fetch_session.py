"""Incremental fetch sessions, the broker's side (KIP-227; Kafka's ``FetchSession.scala``).

A fetcher that reads many partitions asks for them all in its first fetch (a *full* fetch,
session epoch 0).  The broker keeps what it asked for in a :class:`FetchSession` and answers with
the session's id.  Each later fetch (an *incremental* one, epoch 1, 2, ...) names only the
partitions whose fetch offset or limits changed, and those to drop (``forgotten_topics_data``);
the broker reads every partition of the session and answers only those with something new:
records, a moved high watermark, log start offset or last stable offset, or an error.

:class:`FetchManager` turns a request into a fetch context, Kafka's four kinds:

- :class:`SessionlessFetchContext`: epoch -1 (no session wanted; any session named is closed);
- :class:`FullFetchContext`: epoch 0, creates a session if the cache has room for one;
- :class:`IncrementalFetchContext`: epoch n of a known session;
- :class:`SessionErrorContext`: an unknown session id (``FETCH_SESSION_ID_NOT_FOUND``), the wrong
  epoch (``INVALID_FETCH_SESSION_EPOCH``, e.g. a retried request), or a session made with topic
  names asked with topic ids or the reverse (``FETCH_SESSION_TOPIC_ID_ERROR``).

The :class:`FetchSessionCache` holds at most ``max.incremental.fetch.session.cache.slots``
sessions, of at most ``MAX_SESSION_PARTITIONS`` partitions each, and one client address's
sessions at most a quarter of all the partitions it may hold.  See docs/broker/replication.rst.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from kafkacore.errors import Errors

#: a fetch without a session (in a request), or no session created (in a response)
INVALID_SESSION_ID = 0
#: a full fetch that asks for a session
INITIAL_EPOCH = 0
#: a full fetch that wants no session (and closes the one it names)
FINAL_EPOCH = -1
INT32_MAX = 2**31 - 1
#: Partitions all sessions may hold together (ours, not Kafka's: its cache counts them but has
#: no bound).  Some 100 bytes each; a session that would take the cache past it is not made, or
#: is closed.
MAX_CACHED_PARTITIONS = 1_000_000
#: Partitions one session may hold (ours): a full fetch naming more is answered whole, with no
#: session (session id 0, as Kafka answers when its cache has no room); an incremental fetch
#: that would grow a session past it ends the session (FETCH_SESSION_ID_NOT_FOUND: the client's
#: next fetch is full).  A follower's session holds the partitions it follows from one leader.
MAX_SESSION_PARTITIONS = 50_000
#: The share of ``MAX_CACHED_PARTITIONS`` the consumers' sessions from one client address may
#: hold together (ours): beyond it a new session takes the place of that client's least
#: recently used ones, never another client's.  Followers' sessions are not counted.
CLIENT_SHARE_DIVISOR = 4

#: (topic id, or topic name below Fetch v13; partition index)
PartitionKey = tuple[Any, int]


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch`` (Kafka's ``FetchMetadata.nextEpoch``): it wraps to 1, as 0 and
    -1 mean full fetches."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == INT32_MAX else epoch + 1


@dataclass(slots=True)
class FetchPartitionData:
    """What a fetch asks of one partition (Kafka's ``FetchRequest.PartitionData``)."""

    fetch_offset: int
    log_start_offset: int
    max_bytes: int
    current_leader_epoch: int


class CachedPartition:
    """One partition of a session: the fetcher's last request, and what it was last told."""

    __slots__ = ("key", "request", "high_watermark", "last_stable_offset", "log_start_offset")

    def __init__(self, key: PartitionKey, request: FetchPartitionData) -> None:
        self.key = key
        self.request = request
        # -1 until an answer carried them, so a partition new to the session is always answered
        self.high_watermark = -1
        self.last_stable_offset = -1
        self.log_start_offset = -1

    def maybe_update_response_data(self, response: dict[str, Any], update: bool) -> bool:
        """Whether ``response`` (one partition's answer) must be sent; with ``update``, remember
        what it tells the fetcher (Kafka's ``maybeUpdateResponseData``)."""
        must_respond = bool(response["records"])  # new records always go
        for field in ("high_watermark", "last_stable_offset", "log_start_offset"):
            if getattr(self, field) != response[field]:
                must_respond = True
                if update:
                    setattr(self, field, response[field])
        if response["error_code"] != Errors.NONE:
            # Errors always go; forgetting the high watermark answers the partition again once
            # the error is gone.
            must_respond = True
            if update:
                self.high_watermark = -1
        if response.get("preferred_read_replica", -1) >= 0:
            must_respond = True
        return must_respond


class FetchSession:
    """A fetcher's partitions, their last request and answer (Kafka's ``FetchSession``).

    The partitions are in answer order: those answered move to the end, so that when
    ``max_bytes`` cuts an answer short the others come first next time.  ``lock`` guards every
    mutable field but ``cached_size`` and ``last_used_ms``, which the cache's lock guards; it is
    taken before the cache's lock, never inside it.
    """

    __slots__ = ("id", "privileged", "uses_topic_ids", "partitions", "creation_ms",
                 "last_used_ms", "epoch", "cached_size", "lock", "client")

    def __init__(self, session_id: int, privileged: bool, uses_topic_ids: bool,
                 partitions: dict[PartitionKey, CachedPartition], now_ms: int,
                 client: str | None = None) -> None:
        self.id = session_id
        #: the client address whose share it counts in (None: a follower's, or not known)
        self.client = client
        self.privileged = privileged  # a follower's: a consumer's never pushes it out unless stale
        self.uses_topic_ids = uses_topic_ids  # made by Fetch v13+
        self.partitions = partitions
        self.creation_ms = now_ms
        self.last_used_ms = now_ms
        self.epoch = next_epoch(INITIAL_EPOCH)  # the epoch the next request must carry
        self.cached_size = len(partitions)  # the size the cache counted (guarded by the cache)
        # Lock order: before FetchSessionCache._lock. Guards this session's partitions.
        self.lock = threading.Lock()

    def update(self, fetch_data: dict[PartitionKey, FetchPartitionData],
               to_forget: Iterable[PartitionKey]) -> None:
        """Apply an incremental request: add or update the partitions named, drop the
        forgotten ones."""
        for key, request in fetch_data.items():
            cached = self.partitions.get(key)
            if cached is None:
                self.partitions[key] = CachedPartition(key, request)
            else:
                cached.request = request
        for key in to_forget:
            self.partitions.pop(key, None)


class FetchContext:
    """What one Fetch reads and how its answer is cut (Kafka's ``FetchContext``)."""

    #: what the request was counted as, for :meth:`FetchManager.statistics`
    kind = ""

    def partitions(self) -> list[tuple[PartitionKey, FetchPartitionData]]:
        """The partitions to read, in answer order."""
        raise NotImplementedError

    def update_and_generate_response_data(
            self, responses: list[tuple[PartitionKey, dict[str, Any]]]
    ) -> tuple[int, int, list[tuple[PartitionKey, dict[str, Any]]]]:
        """(error, session id, the partitions to answer) from every partition's answer."""
        raise NotImplementedError


class SessionErrorContext(FetchContext):
    """A request naming a session we cannot use: the error, no partitions, no session."""

    kind = "session_errors"

    def __init__(self, error: int) -> None:
        self.error = error

    def partitions(self) -> list[tuple[PartitionKey, FetchPartitionData]]:
        return []

    def update_and_generate_response_data(
            self, responses: list[tuple[PartitionKey, dict[str, Any]]]
    ) -> tuple[int, int, list[tuple[PartitionKey, dict[str, Any]]]]:
        return self.error, INVALID_SESSION_ID, []


class SessionlessFetchContext(FetchContext):
    """A fetch without a session: every partition asked, every one answered."""

    kind = "sessionless_fetches"

    def __init__(self, fetch_data: dict[PartitionKey, FetchPartitionData]) -> None:
        self.fetch_data = fetch_data

    def partitions(self) -> list[tuple[PartitionKey, FetchPartitionData]]:
        return list(self.fetch_data.items())

    def update_and_generate_response_data(
            self, responses: list[tuple[PartitionKey, dict[str, Any]]]
    ) -> tuple[int, int, list[tuple[PartitionKey, dict[str, Any]]]]:
        return Errors.NONE, INVALID_SESSION_ID, responses


class FullFetchContext(SessionlessFetchContext):
    """A full fetch asking for a session: answered whole, and the session made from it (if the
    cache has or can make room)."""

    kind = "full_fetches"

    def __init__(self, cache: FetchSessionCache, fetch_data: dict[PartitionKey, FetchPartitionData],
                 uses_topic_ids: bool, is_follower: bool, client: str | None = None) -> None:
        super().__init__(fetch_data)
        self.cache = cache
        self.uses_topic_ids = uses_topic_ids
        self.is_follower = is_follower
        self.client = client

    def update_and_generate_response_data(
            self, responses: list[tuple[PartitionKey, dict[str, Any]]]
    ) -> tuple[int, int, list[tuple[PartitionKey, dict[str, Any]]]]:
        def create_partitions() -> dict[PartitionKey, CachedPartition]:
            cached = {}
            for key, response in responses:
                cached[key] = c = CachedPartition(key, self.fetch_data[key])
                c.maybe_update_response_data(response, update=True)
            return cached

        session_id = self.cache.maybe_create_session(
            self.is_follower, self.uses_topic_ids, len(responses), create_partitions,
            None if self.is_follower else self.client)
        return Errors.NONE, session_id, responses


class IncrementalFetchContext(FetchContext):
    """Epoch n of a session: every partition of the session is read, those with something new
    are answered."""

    kind = "incremental_fetches"

    def __init__(self, session: FetchSession, request_epoch: int,
                 partitions: list[tuple[PartitionKey, FetchPartitionData]]) -> None:
        self.session = session
        self.request_epoch = request_epoch
        self._partitions = partitions

    def partitions(self) -> list[tuple[PartitionKey, FetchPartitionData]]:
        return self._partitions

    def update_and_generate_response_data(
            self, responses: list[tuple[PartitionKey, dict[str, Any]]]
    ) -> tuple[int, int, list[tuple[PartitionKey, dict[str, Any]]]]:
        session = self.session
        with session.lock:
            if session.epoch != next_epoch(self.request_epoch):
                # Another request of this session came in while this one waited (a retry):
                # its answer would be wrong, the fetcher must start over.
                return Errors.INVALID_FETCH_SESSION_EPOCH, session.id, []
            answered = []
            for key, response in responses:
                cached = session.partitions.get(key)
                if cached is None:  # forgotten by a later request meanwhile
                    continue
                if cached.maybe_update_response_data(response, update=True):
                    answered.append((key, response))
                    del session.partitions[key]  # to the end: the others go first next time
                    session.partitions[key] = cached
        return Errors.NONE, session.id, answered


class FetchSessionCache:
    """At most ``max_entries`` sessions (``max.incremental.fetch.session.cache.slots``), with at
    most ``max_partitions`` partitions in all.

    When it is full a new session takes the place of (Kafka's ``tryEvict``):

    1. the least recently used session, if it was unused for ``eviction_ms``
       (``min.incremental.fetch.session.eviction.ms``); otherwise
    2. the least valuable session older than ``eviction_ms`` (or, for a follower's new session,
       any consumer's session): a consumer's before a follower's, then the fewest partitions,
       and only if the new one is worth more: a follower's, or one with more partitions.

    So a flood of new consumers can neither grow the cache nor push out the followers or the
    sessions in use.  ``_lock`` guards every field and the sessions' ``cached_size`` and
    ``last_used_ms``; no session's lock is taken while it is held.
    """

    def __init__(self, max_entries: int, eviction_ms: int,
                 clock_ms: Callable[[], int] = lambda: int(time.monotonic() * 1000),
                 max_partitions: int = MAX_CACHED_PARTITIONS,
                 max_session_partitions: int = MAX_SESSION_PARTITIONS,
                 client_share: int | None = None) -> None:
        self.max_entries = max_entries
        self.max_partitions = max_partitions
        #: partitions one session may hold
        self.max_session_partitions = max_session_partitions
        #: partitions one client address's sessions may hold together
        self.client_share = max_partitions // CLIENT_SHARE_DIVISOR if client_share is None \
            else client_share
        self._by_client: dict[str, int] = {}  # client -> partitions its sessions hold
        self.eviction_ms = eviction_ms
        self.now_ms = clock_ms
        # Lock order: leaf (after FetchSession.lock). Guards _sessions and the counts.
        self._lock = threading.Lock()
        self._sessions: dict[int, FetchSession] = {}
        self._partitions = 0  # cached partitions in all sessions
        self.evictions = 0

    def get(self, session_id: int) -> FetchSession | None:
        with self._lock:
            return self._sessions.get(session_id)

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def __iter__(self) -> Iterator[FetchSession]:
        with self._lock:
            return iter(list(self._sessions.values()))

    @property
    def total_partitions(self) -> int:
        with self._lock:
            return self._partitions

    def maybe_create_session(
            self, privileged: bool, uses_topic_ids: bool, size: int,
            create_partitions: Callable[[], dict[PartitionKey, CachedPartition]],
            client: str | None = None) -> int:
        """A new session's id, or :data:`INVALID_SESSION_ID` if there is no room for it.
        ``client``: the address whose share it counts in (None for a follower's)."""
        now = self.now_ms()
        with self._lock:
            if self.max_entries <= 0 or size > self.max_partitions \
                    or size > self.max_session_partitions \
                    or client is not None and size > self.client_share:
                return INVALID_SESSION_ID
            while client is not None and self._by_client.get(client, 0) + size > \
                    self.client_share:
                # The client's own least recently used session makes room, not another's.
                own = min((s for s in self._sessions.values() if s.client == client),
                          key=lambda s: (s.last_used_ms, s.id))
                self._remove(own)
            while len(self._sessions) >= self.max_entries \
                    or self._partitions + size > self.max_partitions:
                if not self._try_evict(privileged, size, now):
                    return INVALID_SESSION_ID
            session_id = self._new_session_id()
            session = FetchSession(session_id, privileged, uses_topic_ids, create_partitions(),
                                   now, client)
            self._sessions[session_id] = session
            self._count(session, session.cached_size)
            return session_id

    def _count(self, session: FetchSession, change: int) -> None:
        """``change`` more partitions held by ``session`` (with ``_lock`` held)."""
        self._partitions += change
        if session.client is not None:
            held = self._by_client.get(session.client, 0) + change
            if held > 0:
                self._by_client[session.client] = held
            else:
                self._by_client.pop(session.client, None)

    def _new_session_id(self) -> int:
        while True:
            session_id = random.randint(1, INT32_MAX - 1)
            if session_id not in self._sessions:
                return session_id

    def _try_evict(self, privileged: bool, size: int, now: int) -> bool:
        sessions = self._sessions.values()
        if not sessions:
            return False
        stale = min(sessions, key=lambda s: (s.last_used_ms, s.id))
        if now - stale.last_used_ms > self.eviction_ms:
            self._remove(stale)
            return True
        # Only sessions older than eviction_ms may go, except that a follower may push out
        # any consumer.
        evictable = [s for s in sessions if now - s.creation_ms > self.eviction_ms
                     or privileged and not s.privileged]
        if not evictable:
            return False
        victim = min(evictable, key=lambda s: (s.privileged, s.cached_size, s.id))
        # Kafka compares (privileged, size, id) with the new session's id taken as 0: the new
        # one must be worth strictly more.
        if (privileged, size, 0) < (victim.privileged, victim.cached_size, victim.id):
            return False
        self._remove(victim)
        return True

    def _remove(self, session: FetchSession) -> None:
        if self._sessions.pop(session.id, None) is not None:
            self._count(session, -session.cached_size)
            self.evictions += 1

    def remove(self, session_id: int) -> FetchSession | None:
        with self._lock:
            session = self._sessions.pop(session_id, None)
            if session is not None:
                self._count(session, -session.cached_size)
            return session

    def touch(self, session: FetchSession) -> bool:
        """Mark ``session`` used now and recount its partitions (called with its lock held);
        False, and the session removed, if it grew past what the cache may hold."""
        with self._lock:
            if session.id not in self._sessions:
                return False
            grown = len(session.partitions) - session.cached_size
            if grown > 0 and (
                    self._partitions + grown > self.max_partitions
                    or len(session.partitions) > self.max_session_partitions
                    or session.client is not None
                    and self._by_client.get(session.client, 0) + grown > self.client_share):
                self._sessions.pop(session.id)
                self._count(session, -session.cached_size)
                return False
            session.last_used_ms = self.now_ms()
            self._count(session, grown)
            session.cached_size = len(session.partitions)
            return True


class FetchManager:
    """Makes each Fetch's context from its session id and epoch (Kafka's ``FetchManager``)."""

    def __init__(self, cache: FetchSessionCache) -> None:
        self.cache = cache
        # Lock order: leaf. Guards _counts.
        self._lock = threading.Lock()
        self._counts = {"full_fetches": 0, "incremental_fetches": 0, "sessionless_fetches": 0,
                        "session_errors": 0,
                        # partitions named (to add, change or forget) by incremental fetches
                        "incremental_partitions_named": 0}

    def new_context(self, session_id: int, epoch: int,
                    fetch_data: dict[PartitionKey, FetchPartitionData],
                    to_forget: list[PartitionKey], uses_topic_ids: bool,
                    is_follower: bool, client: str | None = None) -> FetchContext:
        """``client``: the fetcher's address (a consumer's sessions count in its share)."""
        context = self._new_context(session_id, epoch, fetch_data, to_forget, uses_topic_ids,
                                    is_follower, client)
        with self._lock:
            self._counts[context.kind] += 1
            if isinstance(context, IncrementalFetchContext):
                self._counts["incremental_partitions_named"] += len(fetch_data) + len(to_forget)
        return context

    def _new_context(self, session_id: int, epoch: int,
                     fetch_data: dict[PartitionKey, FetchPartitionData],
                     to_forget: list[PartitionKey], uses_topic_ids: bool,
                     is_follower: bool, client: str | None = None) -> FetchContext:
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):  # a full fetch closes the session it names
            if session_id != INVALID_SESSION_ID:
                self.cache.remove(session_id)
            if epoch == FINAL_EPOCH:
                return SessionlessFetchContext(fetch_data)
            return FullFetchContext(self.cache, fetch_data, uses_topic_ids, is_follower,
                                    client)
        session = self.cache.get(session_id)
        if session is None:
            return SessionErrorContext(Errors.FETCH_SESSION_ID_NOT_FOUND)
        with session.lock:
            if session.epoch != epoch:
                return SessionErrorContext(Errors.INVALID_FETCH_SESSION_EPOCH)
            if session.uses_topic_ids != uses_topic_ids:
                return SessionErrorContext(Errors.FETCH_SESSION_TOPIC_ID_ERROR)
            session.update(fetch_data, to_forget)
            if not session.partitions:  # nothing left: the session ends, the answer is whole
                self.cache.remove(session.id)
                return SessionlessFetchContext(fetch_data)
            if not self.cache.touch(session):  # evicted meanwhile, or grown too large
                return SessionErrorContext(Errors.FETCH_SESSION_ID_NOT_FOUND)
            session.epoch = next_epoch(session.epoch)
            return IncrementalFetchContext(
                session, epoch, [(c.key, c.request) for c in session.partitions.values()])

    def statistics(self) -> dict[str, int]:
        """Fetches by kind since start, and Kafka's cache gauges."""
        with self._lock:
            counts = dict(self._counts)
        counts.update(NumIncrementalFetchSessions=len(self.cache),
                      NumIncrementalFetchPartitionsCached=self.cache.total_partitions,
                      IncrementalFetchSessionEvictions=self.cache.evictions)
        return counts
