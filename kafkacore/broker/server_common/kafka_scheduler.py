"""``KafkaScheduler``: the broker's periodic background work (Kafka's ``KafkaScheduler``).

A few daemon threads, named ``kafka-scheduler-<n>`` as Kafka names them, share one queue of
tasks ordered by when each is due.  A task is a name and a function: run once after a delay, or
every period after that.  A task that raises is logged with its name and keeps its schedule (Kafka
wraps every task the same way: one bad run must not end the retention or flush of every later
one).  Each worker is a :class:`~kafkacore.broker.server_common.shutdownable_thread.ShutdownableThread`, so an
error outside a task (in the queue's bookkeeping) is logged and the worker goes on after a bounded
back-off instead of ending unseen.  ``LogManager.startup`` schedules the log tasks here; see docs/broker/log.rst.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from kafkacore.broker.server_common.shutdownable_thread import ShutdownableThread

log = logging.getLogger(__name__)


@dataclass(order=True)
class _Task:
    due: float  # time.monotonic() at which it runs next
    seq: int  # ties broken in the order tasks were scheduled
    name: str = field(compare=False)
    fn: Callable[[], object] = field(compare=False)
    period_s: float | None = field(compare=False)  # None: run once


class KafkaScheduler:
    """``schedule(name, fn, delay_ms, period_ms)`` after ``startup()``; ``shutdown()`` stops the
    threads (a task running then finishes its run; nothing runs after).

    Guarded by ``_cond``: ``_queue``, ``_running``, ``runs``, ``failures``."""

    def __init__(self, threads: int = 1, thread_name_prefix: str = "kafka-scheduler-") -> None:
        if threads < 1:
            raise ValueError(f"a scheduler needs at least one thread, got {threads}")
        self.thread_count = threads
        self.thread_name_prefix = thread_name_prefix
        # Lock order: leaf (tasks run outside it).
        self._cond = threading.Condition()
        self._queue: list[_Task] = []
        self._seq = itertools.count()
        self._threads: list[ShutdownableThread] = []
        self._running = False
        #: task name -> completed runs and runs that raised (tests and operators read them)
        self.runs: dict[str, int] = {}
        self.failures: dict[str, int] = {}

    def startup(self) -> None:
        with self._cond:
            if self._running:
                raise RuntimeError("the scheduler is already running")
            self._running = True
            for i in range(self.thread_count):
                t = ShutdownableThread(f"{self.thread_name_prefix}{i}", work=self._run_next)
                self._threads.append(t)
                t.start()

    def shutdown(self, timeout_s: float = 10.0) -> None:
        """Stop taking tasks, wake every thread and wait (bounded) for the running tasks."""
        with self._cond:
            self._running = False
            self._queue.clear()
            for t in self._threads:
                t.initiate_shutdown()
            self._cond.notify_all()
        deadline = time.monotonic() + timeout_s
        for t in self._threads:
            if t is not threading.current_thread():
                if not t.await_shutdown(max(0.0, deadline - time.monotonic())) and t.is_alive():
                    # A task still running (a long flush): it finishes, nothing follows it.
                    log.warning("%s did not stop within %.1f s", t.name, timeout_s)
        self._threads.clear()

    @property
    def threads(self) -> list[ShutdownableThread]:
        """The worker threads (empty before ``startup`` and after ``shutdown``)."""
        return list(self._threads)

    @property
    def is_started(self) -> bool:
        return self._running

    def schedule(self, name: str, fn: Callable[[], object], delay_ms: int = 0,
                 period_ms: int = -1) -> None:
        """Run ``fn`` after ``delay_ms``, then every ``period_ms`` (once if ``period_ms`` <= 0).

        A period of ``Long.MAX_VALUE`` (Kafka's "never") schedules the first run only so far
        ahead that it never comes; callers skip such tasks instead."""
        if delay_ms < 0:
            raise ValueError(f"task {name!r}: negative delay {delay_ms}")
        with self._cond:
            if not self._running:
                raise RuntimeError(f"task {name!r}: the scheduler is not running")
            period_s = period_ms / 1000.0 if period_ms > 0 else None
            heapq.heappush(self._queue, _Task(time.monotonic() + delay_ms / 1000.0,
                                              next(self._seq), name, fn, period_s))
            self._cond.notify()

    def schedule_once(self, name: str, fn: Callable[[], object], delay_ms: int = 0) -> None:
        self.schedule(name, fn, delay_ms, -1)

    def task_names(self) -> list[str]:
        with self._cond:
            return sorted(t.name for t in self._queue)

    def _next_task(self) -> _Task | None:
        with self._cond:
            while self._running:
                if not self._queue:
                    self._cond.wait()
                    continue
                wait = self._queue[0].due - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                return heapq.heappop(self._queue)
            return None

    def _run_next(self) -> bool | None:
        """One worker turn: the next due task, run; False once the scheduler stops."""
        task = self._next_task()
        if task is None:
            return False
        failed = False
        try:
            task.fn()
        except Exception:
            # Kafka: "Uncaught exception in scheduled task": logged, the schedule kept.
            log.exception("uncaught exception in scheduled task %r", task.name)
            failed = True
        with self._cond:
            self.runs[task.name] = self.runs.get(task.name, 0) + 1
            if failed:
                self.failures[task.name] = self.failures.get(task.name, 0) + 1
            if task.period_s is not None and self._running:
                # From the end of this run (Kafka's scheduleAtFixedRate would catch up
                # missed runs at once; one at a time is kinder to a slow disk).
                task.due = time.monotonic() + task.period_s
                heapq.heappush(self._queue, task)
                self._cond.notify()
