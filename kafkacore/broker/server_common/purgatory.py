"""The purgatory: requests that cannot be answered yet, watched by key and timed by the timer.

Kafka's ``DelayedOperation`` and ``DelayedOperationPurgatory``.  An operation (a produce waiting
for replication, a fetch waiting for data, a join waiting for a group) is kept in two places:

- in the ``Watchers`` list of every key it waits on (a partition, a group), so that an event on
  that key (``check_and_complete(key)``) can try to complete it early;
- in the :class:`~kafkacore.broker.server_common.timer.SystemTimer`, so that it is forced to complete (and
  expires) when its timeout passes and no event completed it.

Whoever completes it first (an event, or the timer) wins: ``force_complete`` returns True exactly
once.  A completed operation is cancelled in the timer at once, but stays in the watcher lists of
its other keys until the reaper purges them (the purge rule, see ``docs/broker/purgatory.rst``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from kafkacore.broker.server_common.shutdownable_thread import ShutdownableThread
from kafkacore.broker.server_common.timer import SystemTimer, TimerTask

_log = logging.getLogger("kafkacore.broker.server_common.purgatory")


class DelayedOperation(TimerTask):
    """An operation that completes when ``try_complete`` says so, or when ``delay_ms`` passes.

    Subclasses implement:

    - ``try_complete()``: check the condition; if it holds, call ``force_complete()`` and return
      its result.  Called with ``self.lock`` held.
    - ``on_complete()``: the work of completing (sending the response); runs exactly once.
    - ``on_expiration()``: extra work when it was the timer that completed it (metrics).

    ``lock`` may be shared with other state the check reads (Kafka passes the group's lock for
    ``DelayedJoin``); by default each operation has its own.
    """

    __slots__ = ("lock", "_completed", "_completed_lock", "_expiration_listener")

    def __init__(self, delay_ms: int, lock: Any = None) -> None:
        super().__init__(delay_ms)
        # Lock order 5 (its own, or its group's): try_complete runs under it.
        self.lock = lock if lock is not None else threading.RLock()
        self._completed = False
        # Lock order: leaf. Guards _completed (on_complete runs after it is released).
        self._completed_lock = threading.Lock()
        self._expiration_listener: Callable[[], None] | None = None

    def force_complete(self) -> bool:
        """Complete now; True only for the one caller that did it (Kafka's compareAndSet)."""
        with self._completed_lock:
            if self._completed:
                return False
            self._completed = True
        self.cancel()  # out of the timer: it will not expire
        self.on_complete()
        return True

    @property
    def is_completed(self) -> bool:
        return self._completed

    def try_complete(self) -> bool:
        raise NotImplementedError

    def on_complete(self) -> None:
        raise NotImplementedError

    def on_expiration(self) -> None:
        raise NotImplementedError

    def maybe_try_complete(self) -> bool:
        """``try_complete`` under the operation's lock (Kafka's ``safeTryComplete``)."""
        with self.lock:
            return self.try_complete()

    def run(self) -> None:
        """Called by the timer when the timeout passed: expire unless already completed."""
        if self.force_complete():
            listener = self._expiration_listener
            if listener is not None:
                listener()
            self.on_expiration()


class Watchers:
    """The operations watching one key, in the order they came."""

    def __init__(self, key: Hashable) -> None:
        self.key = key
        self._operations: list[DelayedOperation] = []
        # Lock order: leaf. Guards _operations (operations are tried outside it).
        self._lock = threading.Lock()

    def count_watched(self) -> int:
        return len(self._operations)

    def is_empty(self) -> bool:
        return not self._operations

    def watch(self, operation: DelayedOperation) -> None:
        with self._lock:
            self._operations.append(operation)

    def try_complete_watched(self) -> int:
        """Try each watched operation; drop the completed ones; how many this call completed."""
        with self._lock:
            snapshot = list(self._operations)
        completed = 0
        for operation in snapshot:  # user code: not under our lock
            if not operation.is_completed and operation.maybe_try_complete():
                completed += 1
        self.purge_completed()
        return completed

    def purge_completed(self) -> int:
        """Drop operations completed elsewhere (by another key or the timer); how many were dropped."""
        with self._lock:
            before = len(self._operations)
            self._operations = [op for op in self._operations if not op.is_completed]
            return before - len(self._operations)

    def cancel(self) -> list[DelayedOperation]:
        with self._lock:
            cancelled = [op for op in self._operations if not op.is_completed]
            self._operations = []
        for operation in cancelled:
            operation.cancel()
        return cancelled


class DelayedOperationPurgatory:
    """Kafka's ``DelayedOperationPurgatory``: watchers per key, a timer, and an expiration reaper.

    ``purge_interval`` is the number of completed-but-still-watched operations tolerated before the
    reaper walks every watcher list (Kafka's ``*.purgatory.purge.interval.requests``, 1000).
    With ``reaper_enabled=False`` nobody advances the clock but the caller (``advance_clock``).
    """

    def __init__(
        self,
        purgatory_name: str,
        timeout_timer: SystemTimer | None = None,
        broker_id: int = 0,
        purge_interval: int = 1000,
        reaper_enabled: bool = True,
        timer_enabled: bool = True,
    ) -> None:
        self.purgatory_name = purgatory_name
        self.broker_id = broker_id
        self.purge_interval = purge_interval
        self.timer_enabled = timer_enabled
        self.timeout_timer = (
            timeout_timer if timeout_timer is not None else SystemTimer(purgatory_name)
        )
        self._watchers_for_key: dict[Hashable, Watchers] = {}
        # Lock order: leaf. Guards _watchers_for_key.
        self._watchers_lock = threading.Lock()
        # Lock order: leaf. Guards the estimated, expired and purge counts.
        self._counter_lock = threading.Lock()
        self._estimated_total_operations = 0
        self._expired = 0
        self._purges = 0
        self._reaper: ShutdownableThread | None = None
        if reaper_enabled:
            # Supervised: a turn that raises is logged and retried after a bounded back-off.
            self._reaper = ShutdownableThread(
                f"ExpirationReaper-{broker_id}-{purgatory_name}", work=self._reap_once)
            self._reaper.start()

    # -- adding and completing ---------------------------------------------------------------

    def try_complete_else_watch(
        self, operation: DelayedOperation, watch_keys: Iterable[Hashable]
    ) -> bool:
        """Complete ``operation`` now if it can; else watch it on every key and time it.

        True if it was completed by this call.  It is tried once before watching (the cheap common
        case), and once more after, because an event on a key may have come while we were adding
        it to the watcher lists and would have missed it.
        """
        keys = list(watch_keys)
        if not keys:
            raise ValueError("the watch key list must not be empty")
        if operation.maybe_try_complete():
            return True
        watch_created = False
        for key in keys:
            if operation.is_completed:  # completed by an event meanwhile: stop watching more keys
                return False
            self._watch_for_operation(key, operation)
            if not watch_created:
                watch_created = True
                with self._counter_lock:
                    self._estimated_total_operations += 1
        if operation.maybe_try_complete():
            return True
        if not operation.is_completed:
            if self.timer_enabled:
                operation._expiration_listener = self._record_expiration
                self.timeout_timer.add(operation)
            if operation.is_completed:
                operation.cancel()  # completed while being added: take it back out of the timer
        return False

    def check_and_complete(self, key: Hashable) -> int:
        """An event on ``key``: try its watched operations; the number completed."""
        if key not in self._watchers_for_key:
            # Most events (every partition of every Produce) find nobody waiting: one dict
            # lookup, no lock.  A watcher added just after is the race the lock has anyway: it
            # tries to complete itself when it starts watching (try_complete_else_watch).
            return 0
        with self._watchers_lock:
            watchers = self._watchers_for_key.get(key)
        if watchers is None:
            return 0
        completed = watchers.try_complete_watched()
        if watchers.is_empty():
            self._remove_key_if_empty(key, watchers)
        return completed

    def cancel_for_key(self, key: Hashable) -> list[DelayedOperation]:
        """Stop watching ``key`` and cancel its operations (e.g. the partition moved away)."""
        with self._watchers_lock:
            watchers = self._watchers_for_key.pop(key, None)
        return [] if watchers is None else watchers.cancel()

    def _watch_for_operation(self, key: Hashable, operation: DelayedOperation) -> None:
        with self._watchers_lock:
            watchers = self._watchers_for_key.get(key)
            if watchers is None:
                watchers = self._watchers_for_key[key] = Watchers(key)
            # Under the dict's lock, so that a concurrent removal of an empty list cannot drop it.
            watchers.watch(operation)

    def _remove_key_if_empty(self, key: Hashable, watchers: Watchers) -> None:
        with self._watchers_lock:
            if self._watchers_for_key.get(key) is watchers and watchers.is_empty():
                del self._watchers_for_key[key]

    def _record_expiration(self) -> None:
        with self._counter_lock:
            self._expired += 1

    # -- metrics ------------------------------------------------------------------------------

    def watched(self) -> int:
        """Operations in watcher lists, counted once per key (Kafka's ``PurgatorySize``)."""
        with self._watchers_lock:
            lists = list(self._watchers_for_key.values())
        return sum(w.count_watched() for w in lists)

    def num_delayed(self) -> int:
        """Operations waiting in the timer (Kafka's ``NumDelayedOperations``)."""
        return self.timeout_timer.size()

    def expired(self) -> int:
        """Operations completed by their timeout."""
        return self._expired

    def watched_keys(self) -> int:
        with self._watchers_lock:
            return len(self._watchers_for_key)

    def estimated_total_operations(self) -> int:
        return self._estimated_total_operations

    def purges(self) -> int:
        """How many times the watcher lists were purged."""
        return self._purges

    # -- the expiration reaper ----------------------------------------------------------------

    def advance_clock(self, timeout_ms: float) -> None:
        """One round of the reaper: expire what is due, then purge if too many completed linger."""
        self.timeout_timer.advance_clock(timeout_ms)
        # Operations leave the timer when they complete (cancel) or expire, but stay in the
        # watcher lists of keys nobody checked; the difference estimates how many linger there.
        num_delayed = self.num_delayed()
        if self._estimated_total_operations - num_delayed > self.purge_interval:
            with self._counter_lock:
                self._estimated_total_operations = num_delayed
                self._purges += 1
            with self._watchers_lock:
                all_watchers = list(self._watchers_for_key.items())
            for key, watchers in all_watchers:
                watchers.purge_completed()
                if watchers.is_empty():
                    self._remove_key_if_empty(key, watchers)

    @property
    def reaper(self) -> ShutdownableThread | None:
        """The expiration reaper thread (Kafka's ``expirationReaper``); None when disabled."""
        return self._reaper

    def _reap_once(self) -> None:
        # One turn of Kafka's ExpirationReaper.doWork; the wait is bounded so that shutdown is
        # noticed within 200 ms.  A turn that raises is ShutdownableThread's to log and retry.
        self.advance_clock(200)

    def shutdown(self, timeout: float = 10.0) -> None:
        """Stop the reaper (bounded by ``timeout`` seconds) and the timer."""
        reaper = self._reaper
        if reaper is not None:
            reaper.initiate_shutdown()
        self.timeout_timer.shutdown()
        if reaper is not None and reaper is not threading.current_thread():
            if not reaper.await_shutdown(timeout) and reaper.is_alive():
                raise TimeoutError(f"{reaper.name} did not stop within {timeout} s")
