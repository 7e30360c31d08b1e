"""AuthenticationExecutor: SASL authentication steps run off the network threads, and failed
attempts slow their source down.

A PLAIN password is checked against a salted PBKDF2 hash (the broker keeps no password), a few
milliseconds of CPU each.  Run on a network thread, every guess stalls every other connection of
that thread; a guessing client made 400 attempts a second.  So the processor hands each
SaslAuthenticate step to this executor and keeps the connection muted until the answer comes
back (:meth:`Processor.process_authentication_results`); the network threads go on serving.

Failed attempts are remembered per source address.  After ``n`` failures in a row from a source,
its next attempt waits ``base * 2**(n-1)`` (``base`` is ``connection.failed.authentication.delay.ms``)
up to :data:`MAX_SOURCE_DELAY_S`, whatever connection it comes on: Kafka delays only the close of
each failed connection, which does not slow a client that opens many connections at once.  The
count is forgotten after a quiet period.  The queue is bounded: when it is full, the attempt is
refused at once.

Guarded by ``_cond``: the queue, the sources.  The steps run on the executor's threads; a step's
connection is muted meanwhile, so nothing else touches its authenticator.
"""

from __future__ import annotations

import collections
import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from kafkacore.broker.server_common.shutdownable_thread import ShutdownableThread

log = logging.getLogger(__name__)

#: The longest a source's next attempt waits, however many failures it had.
MAX_SOURCE_DELAY_S = 1.0
#: A source's failures are forgotten after this long without one.
FORGET_AFTER_S = 60.0
#: Sources remembered at most (the oldest are forgotten first).
MAX_SOURCES = 10_000
#: Attempts waiting at most, all sources together.
MAX_QUEUED = 1_000

Step = Callable[[], tuple[Any, bool]]  #: returns (result, failed)
Done = Callable[[Any, BaseException | None], None]


class _Source:
    __slots__ = ("failures", "last_failure", "next_allowed")

    def __init__(self) -> None:
        self.failures = 0
        self.last_failure = 0.0
        self.next_allowed = 0.0


class AuthenticationExecutor:
    def __init__(self, base_delay_ms: int, num_threads: int = 2) -> None:
        self.base_delay_s = base_delay_ms / 1000.0
        # Lock order: leaf. Guards _queue (steps by due time); steps run outside it.
        self._cond = threading.Condition()
        self._queue: list[tuple[float, int, str, Step, Done]] = []  # heap by due time
        self._seq = itertools.count()
        self._sources: collections.OrderedDict[str, _Source] = collections.OrderedDict()
        self._running = True
        #: times an attempt was made to wait for its source's failures (statistics, tests)
        self.delayed = 0
        self.refused = 0
        self._threads = [ShutdownableThread(f"kafkacore-sasl-authenticator-{i}", work=self._turn)
                         for i in range(num_threads)]

    def start(self) -> None:
        for t in self._threads:
            t.start()

    def shutdown(self, timeout_s: float = 5.0) -> None:
        with self._cond:
            self._running = False
            self._cond.notify_all()
        for t in self._threads:
            t.initiate_shutdown()
        for t in self._threads:
            if t.is_alive():
                t.join(timeout_s)

    def delay_of(self, source: str) -> float:
        """Seconds the next attempt from ``source`` would wait now."""
        with self._cond:
            s = self._sources.get(source)
            return 0.0 if s is None else max(0.0, s.next_allowed - time.monotonic())

    def failures_of(self, source: str) -> int:
        """Failed attempts counted against ``source`` (until it is forgotten)."""
        with self._cond:
            s = self._sources.get(source)
            return 0 if s is None else s.failures

    def submit(self, source: str, step: Step, done: Done) -> bool:
        """Run ``step`` on an executor thread once ``source`` may try again, then ``done(result,
        error)``.  False (and nothing runs) if the queue is full."""
        with self._cond:
            if len(self._queue) >= MAX_QUEUED:
                self.refused += 1
                return False
            now = time.monotonic()
            due = self._due_locked(source, now)
            if due > now:
                self.delayed += 1
            heapq.heappush(self._queue, (due, next(self._seq), source, step, done))
            self._cond.notify()
            return True

    def _due_locked(self, source: str, now: float) -> float:
        s = self._sources.get(source)
        if s is None:
            return now
        if s.failures and now - s.last_failure > FORGET_AFTER_S:
            del self._sources[source]
            return now
        return max(now, s.next_allowed)

    def _turn(self) -> bool:
        with self._cond:
            while True:
                if not self._running:
                    return False
                if not self._queue:
                    self._cond.wait(0.5)
                    continue
                now = time.monotonic()
                due, seq, source, step, done = self._queue[0]
                later = max(due, self._due_locked(source, due))
                if later > due:  # its source failed meanwhile: its turn moves back
                    self.delayed += 1
                    heapq.heapreplace(self._queue, (later, seq, source, step, done))
                    continue
                if due > now:
                    self._cond.wait(due - now)
                    continue
                heapq.heappop(self._queue)
                break
        try:
            result, failed = step()
        except Exception as exc:
            self._record(source, failed=True)
            done(None, exc)
            return True
        self._record(source, failed)
        done(result, None)
        return True

    def _record(self, source: str, failed: bool) -> None:
        if not failed:
            return  # a success does not clear the count: a valid account is no reset button
        now = time.monotonic()
        with self._cond:
            s = self._sources.get(source)
            if s is None:
                s = self._sources[source] = _Source()
                while len(self._sources) > MAX_SOURCES:
                    self._sources.popitem(last=False)
            self._sources.move_to_end(source)
            s.failures += 1
            s.last_failure = now
            delay = min(self.base_delay_s * 2 ** (s.failures - 1), MAX_SOURCE_DELAY_S)
            s.next_allowed = now + delay
