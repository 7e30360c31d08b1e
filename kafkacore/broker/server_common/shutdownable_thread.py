"""ShutdownableThread: a broker thread that survives its own bugs (Kafka's ``ShutdownableThread``).

A broker thread is a loop: ``do_work()`` once per turn until :meth:`initiate_shutdown`.  What
happens when a turn raises is the whole point of this class.  Kafka's ``ShutdownableThread`` logs
"Error due to" and *ends the thread*; its network ``Processor`` and ``Acceptor`` instead catch
per turn and go on.  We do what the Processor does, for every broker thread: a thread that stops
on its first unexpected exception leaves the broker up but deaf (a processor's connections are
accepted and never answered, a fencer that never fences), and nothing outside notices.  So:

- an exception in one turn is logged at ERROR with its traceback, counted in :attr:`failures`,
  and the loop goes on after a back-off that doubles with each failure in a row, from
  :data:`FAILURE_BACKOFF_S` up to :data:`MAX_FAILURE_BACKOFF_S`, and starts again after a turn
  that succeeds (so a failure that repeats every turn cannot spin a core or fill the disk with
  the same traceback: after the first, the same error is logged at most once per
  :data:`REPEAT_LOG_INTERVAL_S`); :meth:`initiate_shutdown` cuts the back-off short;
- if the thread ends any other way than by :meth:`initiate_shutdown` (a ``BaseException``, a
  ``do_work`` that returns ``False`` is *not* such a way: it asks to stop), it says so at
  CRITICAL level and calls :attr:`on_death`, so its owner can stop sending it work.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

#: The pause after a failed turn: bounds the CPU and the log a repeating failure costs.
FAILURE_BACKOFF_S = 0.1
#: The longest pause: a part that fails every turn still retries (and may recover) this often.
MAX_FAILURE_BACKOFF_S = 2.0
#: The same exception type in a row is logged again only after this long.
REPEAT_LOG_INTERVAL_S = 10.0


class ShutdownableThread(threading.Thread):
    """Subclasses implement :meth:`do_work` (one turn) and may override :meth:`on_shutdown`;
    or pass ``work``, a callable that is one turn (returning False to stop)."""

    def __init__(self, name: str, *, work: Callable[[], bool | None] | None = None,
                 daemon: bool = True) -> None:
        super().__init__(name=name, daemon=daemon)
        self._work = work
        self._running = True  # written by any thread, read by this one (a bool: atomic)
        self._shutdown_complete = threading.Event()
        self._shutdown_initiated = threading.Event()  # wakes a back-off early
        self._failures_in_a_row = 0  # this thread only
        #: Turns that raised (read from other threads for statistics and tests).
        self.failures = 0
        #: Called (on this thread) if it ends without being asked to.
        self.on_death: Callable[[ShutdownableThread], None] | None = None
        self._last_logged: tuple[type[BaseException], float] | None = None

    @property
    def is_running(self) -> bool:
        return self._running

    def initiate_shutdown(self) -> None:
        """Ask the loop to stop after its current turn (does not wait)."""
        self._running = False
        self._shutdown_initiated.set()
        self.wakeup()

    def await_shutdown(self, timeout_s: float | None = None) -> bool:
        """Wait (bounded) until the loop has ended and the thread with it; True if it has.

        The loop's end is an event set in :meth:`run`'s last line; the thread is still alive for
        a moment after it, so the wait then joins it (within what is left of ``timeout_s``): a
        caller told True sees ``is_alive()`` False."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        if not self._shutdown_complete.wait(timeout_s):
            return False
        if self.ident is not None and threading.current_thread() is not self:
            self.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            return not self.is_alive()
        return True

    def shutdown(self, timeout_s: float = 5.0) -> None:
        self.initiate_shutdown()
        if self.is_alive() and threading.current_thread() is not self:
            self.await_shutdown(timeout_s)

    def wakeup(self) -> None:
        """Interrupt a turn that sleeps (a selector, a queue); nothing by default."""

    def do_work(self) -> bool | None:
        """One turn of the loop.  Return False to end the thread normally."""
        if self._work is None:
            raise NotImplementedError("a ShutdownableThread needs do_work() or work")
        return self._work()

    def on_shutdown(self) -> None:
        """Release what the thread owns; runs on this thread once the loop has ended."""

    def run(self) -> None:
        asked = False
        try:
            while self._running:
                try:
                    if self.do_work() is False:
                        asked = True
                        break
                    self._failures_in_a_row = 0
                except Exception as exc:
                    if not self._running:
                        break  # failing because we are closing: nothing to report
                    self.failures += 1
                    self._failures_in_a_row += 1
                    self._log_failure(exc)
                    self._shutdown_initiated.wait(self.backoff_s(self._failures_in_a_row))
            else:
                asked = True
        finally:
            try:
                self.on_shutdown()
            except Exception:
                log.exception("%s: error while shutting down", self.name)
            try:
                if not asked and self._running:
                    log.critical("thread %s died: the broker part it runs has stopped",
                                 self.name)
                    if self.on_death is not None:
                        self.on_death(self)
            finally:
                self._shutdown_complete.set()

    @staticmethod
    def backoff_s(failures_in_a_row: int) -> float:
        """The pause after the n-th failed turn in a row: doubling, bounded."""
        return min(FAILURE_BACKOFF_S * 2 ** min(failures_in_a_row - 1, 16), MAX_FAILURE_BACKOFF_S)

    def _log_failure(self, exc: Exception) -> None:
        now = time.monotonic()
        last = self._last_logged
        if last is not None and last[0] is type(exc) and now - last[1] < REPEAT_LOG_INTERVAL_S:
            return
        self._last_logged = (type(exc), now)
        log.error("%s: uncaught error in its loop (failure %d; the thread goes on)",
                  self.name, self.failures, exc_info=exc)
