"""Every broker thread is supervised: a turn that raises is logged at ERROR with its traceback,
the thread goes on after a bounded back-off and serves the next item, and shutdown is bounded.

Each test makes one turn of a real thread fail through a hook the part offers (a faulty delayed
operation in the purgatory, a faulty task in the scheduler, a faulty turn in a
ShutdownableThread) and then hands the same thread more work."""

from __future__ import annotations

import logging
import queue
import threading

import pytest
from support.topics import new_topic

from kafkacore.broker.server_common.kafka_scheduler import KafkaScheduler
from kafkacore.broker.server_common.purgatory import DelayedOperation, DelayedOperationPurgatory
from kafkacore.broker.server_common.shutdownable_thread import (
    FAILURE_BACKOFF_S,
    MAX_FAILURE_BACKOFF_S,
    ShutdownableThread,
)
from kafkacore.broker.transaction.transaction_marker_channel_manager import (
    TransactionMarkerChannelManager,
    TxnMarkerEntry,
)

WAIT_S = 30  # generous: two noisy cores; every wait below is bounded by it


def _errors_with_traceback(caplog, thread_name: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records
            if r.levelno == logging.ERROR and r.exc_info is not None
            and r.threadName == thread_name]


class _Operation(DelayedOperation):
    """Completes when ``ready``; ``expired`` is set when the timer completed it."""

    def __init__(self, delay_ms: int) -> None:
        super().__init__(delay_ms)
        self.ready = False
        self.expired = threading.Event()

    def try_complete(self) -> bool:
        return self.force_complete() if self.ready else False

    def on_complete(self) -> None:
        pass

    def on_expiration(self) -> None:
        self.expired.set()


class _FaultyOperation(_Operation):
    """Once ``armed``, its completed-check raises once: the reaper's purge walks into it."""

    def __init__(self, delay_ms: int) -> None:
        super().__init__(delay_ms)
        self.armed = False
        self.raised = threading.Event()

    @property
    def is_completed(self) -> bool:
        if self.armed:
            self.armed = False
            self.raised.set()
            raise RuntimeError("a delayed operation broken on purpose")
        return super().is_completed


def test_the_purgatory_reaper_logs_a_failed_turn_and_expires_the_next_operation(caplog):
    caplog.set_level(logging.ERROR)
    # purge_interval=0: one completed operation still watched makes the reaper purge.
    purgatory = DelayedOperationPurgatory("produce", purge_interval=0)
    reaper = purgatory.reaper
    assert isinstance(reaper, ShutdownableThread)
    try:
        faulty = _FaultyOperation(3_600_000)  # never due: only the purge touches it
        done = _Operation(3_600_000)
        purgatory.try_complete_else_watch(faulty, ["faulty"])
        purgatory.try_complete_else_watch(done, ["done"])
        faulty.armed = True
        done.ready = True
        assert purgatory.check_and_complete("done") == 1  # now the reaper purges, and fails
        assert faulty.raised.wait(WAIT_S), "the reaper never purged"

        following = _Operation(20)
        purgatory.try_complete_else_watch(following, ["next"])
        assert following.expired.wait(WAIT_S), "the reaper stopped expiring after its failure"
        assert reaper.is_alive()
        assert reaper.failures == 1
        logged = _errors_with_traceback(caplog, reaper.name)
        assert len(logged) == 1
        assert "broken on purpose" in str(logged[0].exc_info[1])
    finally:
        purgatory.shutdown(timeout=10)  # raises TimeoutError if the reaper does not stop
    assert not reaper.is_alive()


def test_a_scheduler_worker_logs_a_failed_task_and_runs_the_next(caplog):
    caplog.set_level(logging.ERROR)
    scheduler = KafkaScheduler(threads=1)
    scheduler.startup()
    ran = threading.Event()
    try:
        (worker,) = scheduler.threads
        assert isinstance(worker, ShutdownableThread)

        def faulty() -> None:
            raise OSError("a flush broken on purpose")

        scheduler.schedule_once("kafka-log-flusher", faulty)
        scheduler.schedule_once("kafka-log-retention", ran.set, delay_ms=10)
        assert ran.wait(WAIT_S), "the worker stopped after a failed task"
        assert worker.is_alive()
        assert scheduler.failures == {"kafka-log-flusher": 1}
        assert scheduler.runs["kafka-log-flusher"] == 1  # counted before the next task ran
        logged = _errors_with_traceback(caplog, worker.name)
        assert len(logged) == 1 and "kafka-log-flusher" in logged[0].getMessage()
    finally:
        scheduler.shutdown(timeout_s=10)
    assert not worker.is_alive()
    assert scheduler.threads == []


def test_a_shutdownable_thread_logs_a_failed_turn_and_serves_the_next_item(caplog):
    caplog.set_level(logging.ERROR)
    items: queue.Queue[str] = queue.Queue()
    served: queue.Queue[str] = queue.Queue()

    def turn() -> None:
        try:
            item = items.get(timeout=0.1)  # bounded: shutdown is noticed within 100 ms
        except queue.Empty:
            return
        if item == "poison":
            raise ValueError("an item broken on purpose")
        served.put(item)

    thread = ShutdownableThread("test-supervised", work=turn)
    thread.start()
    try:
        items.put("poison")
        items.put("next")
        assert served.get(timeout=WAIT_S) == "next"
        assert thread.is_alive()
        assert thread.failures == 1
        logged = _errors_with_traceback(caplog, "test-supervised")
        assert len(logged) == 1 and isinstance(logged[0].exc_info[1], ValueError)
    finally:
        thread.shutdown(timeout_s=10)
    assert thread.await_shutdown(0)
    assert not [r for r in caplog.records if r.levelno == logging.CRITICAL]


def test_the_back_off_doubles_and_is_bounded():
    assert ShutdownableThread.backoff_s(1) == FAILURE_BACKOFF_S
    assert ShutdownableThread.backoff_s(2) == 2 * FAILURE_BACKOFF_S
    assert ShutdownableThread.backoff_s(10_000) == MAX_FAILURE_BACKOFF_S


@pytest.fixture
def broker(tmp_path):
    from kafkacore.broker.server.broker_server import Broker

    with Broker({"log.dirs": str(tmp_path), "num.partitions": "1"}) as b:
        yield b


def test_the_marker_sender_retries_through_its_queue_and_serves_the_next_transaction(
        broker, caplog):
    """A transaction whose markers cannot be written (a partition index that is not a number
    makes the round raise) is logged and retried from the queue, and a transaction behind it
    completes meanwhile on the same sender thread."""
    caplog.set_level(logging.ERROR)
    topic = new_topic(broker)
    second_done = threading.Event()
    faulty_rounds: list[int] = []

    def still_coordinating(entry: TxnMarkerEntry) -> bool:
        if entry.transactional_id == "faulty":
            faulty_rounds.append(entry.attempts)
            return not second_done.is_set()  # retried until the other one is through
        return True

    manager = TransactionMarkerChannelManager(
        broker.broker_id, metadata_cache=broker.metadata_cache, replicas=broker.replica_manager,
        group_manager=broker.group_coordinator.group_manager,
        still_coordinating=still_coordinating)
    manager.startup()
    sender = manager.thread
    assert isinstance(sender, ShutdownableThread)
    try:
        manager.add_txn_markers(TxnMarkerEntry("faulty", 0, 1000, 0, True, {(topic, "bad")},
                                               lambda: None))
        manager.add_txn_markers(TxnMarkerEntry("next", 0, 1001, 0, True, set(),
                                               second_done.set))
        assert second_done.wait(WAIT_S), "the sender stopped after a failed round"
        assert sender.is_alive()
        logged = _errors_with_traceback(caplog, sender.name)
        assert logged and all("faulty" in r.getMessage() for r in logged)
        assert isinstance(logged[0].exc_info[1], TypeError)
    finally:
        manager.shutdown()
    assert sender.await_shutdown(0)
    assert faulty_rounds and faulty_rounds[0] == 1  # its first failure was queued for retry
