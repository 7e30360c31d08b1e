# cython: language_level=3
"""RequestQueue: the bounded FIFO from the processors (network threads) to the request handlers.

Kafka's ``RequestChannel`` keeps its requests in an ``ArrayBlockingQueue``.  ``queue.Queue``
would take its mutex and notify a ``Condition`` on every put, and a ``get`` with a timeout would
allocate a lock per wait: on small requests that costs more than handling them.  Here the items
are a ``deque``, and each handler that finds it empty sleeps on its own
:class:`~kafkacore.broker.network.selector.Wakeup`, kept on a stack of sleepers.

The invariant that no request waits while a handler sleeps: a handler registers as a sleeper,
and a put appends its item, each in one step that looks at the other's side, so either the
handler sees the item or the put sees the sleeper (and hands it to its caller to wake: exactly
one, the one that slept last, whose stack is the warmest).  Those steps are compiled, and each
runs under the :term:`GIL` without calling Python code or letting go of it, so no other thread
runs in between: they need no lock.  A busy handler takes the next item without sleeping, and a
put finds nobody to wake.  A woken handler that finds the queue empty (a busy one was quicker)
just looks again.

The bound (``queued.max.requests``): a put into a full queue waits (bounded by its timeout)
until a get makes room; only that rare path takes a lock, and a ``Condition`` on it.  See
``docs/broker/reactor.rst``.
"""

import collections
import queue
import threading
import time


cdef class RequestQueue:
    """A FIFO of at most ``maxsize`` requests (``queued.max.requests``)."""

    cdef readonly Py_ssize_t maxsize
    cdef object _items
    #: The wakers of the handlers asleep here, the last to sleep on top.
    cdef list _sleepers
    #: Puts waiting for room; changed under _lock, read by every get.
    cdef Py_ssize_t _full_waiters
    cdef object _lock
    cdef object _not_full

    def __init__(self, Py_ssize_t maxsize):
        if maxsize < 1:
            raise ValueError(f"queued.max.requests={maxsize}: must be at least 1")
        self.maxsize = maxsize
        self._items = collections.deque()
        self._sleepers = []
        self._full_waiters = 0
        # Lock order: leaf; _not_full waits on it.
        self._lock = threading.Lock()
        self._not_full = threading.Condition(self._lock)

    def __len__(self):
        return len(self._items)

    @property
    def waiting_handlers(self):
        """How many request handlers sleep on the queue for the next request: the idle
        handlers (Kafka's ``RequestHandlerAvgIdlePercent`` measures the same idleness).  A put
        hands its request to one of them; 0 while every handler is busy."""
        return len(self._sleepers)

    @property
    def waiting_puts(self):
        """How many puts wait for room in a full queue (``queued.max.requests`` reached): the
        processors held back until a handler takes a request."""
        return self._full_waiters

    def put(self, item, timeout_s=None):
        """Append ``item``; waits at most ``timeout_s`` for room, then raises ``queue.Full``.

        Returns the sleeping handler that is to take it (None: none sleeps): the caller owes it
        a ``wake()``.  A processor pays that debt just before it sleeps itself, so the handler
        it wakes does not wait for the GIL the processor still holds.
        """
        if len(self._items) >= self.maxsize:
            return self._put_when_full(item, timeout_s)
        # One step under the GIL: the item is queued and a sleeper taken together.
        self._items.append(item)
        return self._sleepers.pop() if self._sleepers else None

    cdef object _put_when_full(self, item, timeout_s):
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._lock:
            # Counted before the fullness is looked at again: a get that makes room from here
            # on sees us, and its notify waits for our wait() to have let go of the lock.
            self._full_waiters += 1
            try:
                while len(self._items) >= self.maxsize:
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        raise queue.Full
                    self._not_full.wait(left)
            finally:
                self._full_waiters -= 1
            self._items.append(item)
            return self._sleepers.pop() if self._sleepers else None

    def get(self, waker, double timeout_s, list owed=None):
        """The next item, or None after ``timeout_s`` (or a wake-up for an item another handler
        took first).  ``waker`` is the calling handler's own; ``owed``, the wake-ups it owes
        (the processors its answers went to), is paid on the way and emptied: on the way to
        sleep, without the GIL (``Wakeup.wait``)."""
        if self._items:
            # Taken before the wake-ups are paid: each lets go of the GIL, and another handler
            # may take the last request meanwhile.
            item = self._take()
            while owed:
                owed.pop().wake()
            return item
        # One step under the GIL: nothing queued, so this handler sleeps, and the next put
        # sees it.
        self._sleepers.append(waker)
        waker.wait(timeout_s, owed)
        if waker in self._sleepers:  # nobody chose us (a timeout, or a stale byte)
            self._sleepers.remove(waker)
        if not self._items:
            return None
        return self._take()

    cdef object _take(self):
        item = self._items.popleft()
        if self._full_waiters:
            with self._lock:
                self._not_full.notify()
        return item

    def wake_all(self):
        """Wake every sleeping handler (shutdown)."""
        sleepers, self._sleepers = self._sleepers, []
        for sleeper in sleepers:
            sleeper.wake()
