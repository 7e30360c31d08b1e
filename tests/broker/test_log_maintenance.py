"""The log's periodic work: the KafkaScheduler, and what the broker runs on it by itself.

The broker tests start a real broker (in this process, on a loopback port) with Kafka's
maintenance settings set small, write with kafka-python's producer and look with kafka-python's
consumer (the log start offset) and at the files Kafka's tools read (the checkpoints).
"""

import threading

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from waits import wait_until

from kafkacore.broker.server.broker_server import Broker
from kafkacore.broker.server_common.kafka_scheduler import KafkaScheduler
from kafkacore.errors import ConfigError

# -- the scheduler ----------------------------------------------------------------------------


def test_periodic_task_runs_again_and_again_on_named_threads():
    scheduler = KafkaScheduler(threads=2)
    scheduler.startup()
    names = []
    try:
        scheduler.schedule("tick", lambda: names.append(threading.current_thread().name), 0, 10)
        wait_until(lambda: len(names) >= 5, "five runs")
    finally:
        scheduler.shutdown()
    assert set(names) <= {"kafka-scheduler-0", "kafka-scheduler-1"}
    after = len(names)
    assert scheduler.task_names() == [] and not scheduler.is_started
    with pytest.raises(RuntimeError):
        scheduler.schedule("late", lambda: None)
    assert len(names) == after  # nothing ran after shutdown returned


def test_a_task_that_raises_is_logged_and_keeps_its_schedule(caplog):
    scheduler = KafkaScheduler()
    scheduler.startup()
    runs = []

    def flaky():
        runs.append(1)
        if len(runs) % 2:
            raise OSError("disk hiccup")

    try:
        scheduler.schedule("flaky", flaky, 0, 5)
        scheduler.schedule_once("once", lambda: runs.append(0), 0)
        wait_until(lambda: scheduler.runs.get("flaky", 0) >= 4, "four runs")
    finally:
        scheduler.shutdown()
    assert scheduler.failures["flaky"] >= 2 and scheduler.runs["once"] == 1
    assert any(r.levelname == "ERROR" and "'flaky'" in r.getMessage() and r.exc_info
               for r in caplog.records)


def test_bad_schedules_are_refused():
    with pytest.raises(ValueError):
        KafkaScheduler(threads=0)
    scheduler = KafkaScheduler()
    with pytest.raises(RuntimeError):  # not started
        scheduler.schedule("x", lambda: None)
    scheduler.startup()
    try:
        with pytest.raises(ValueError):
            scheduler.schedule("x", lambda: None, -1)
    finally:
        scheduler.shutdown()


# -- the broker's log tasks --------------------------------------------------------------------

FAST = {
    "log.initial.task.delay.ms": "0",
    "log.retention.check.interval.ms": "50",
    "log.flush.offset.checkpoint.interval.ms": "50",
    "log.flush.start.offset.checkpoint.interval.ms": "50",
}


def _produce(bootstrap, topic, n):
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0, batch_size=200)
    try:
        for i in range(n):
            producer.send(topic, b"value-%05d" % i, partition=0)
        producer.flush(30)
    finally:
        producer.close(10)


def _offsets(bootstrap, topic):
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        tp = TopicPartition(topic, 0)
        return consumer.beginning_offsets([tp])[tp], consumer.end_offsets([tp])[tp]
    finally:
        consumer.close()


def _create(bootstrap, topic, configs):
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, 1, 1, topic_configs=configs)])
    finally:
        admin.close()


def test_kafkas_maintenance_settings_have_kafkas_defaults():
    with Broker() as broker:
        c = broker.config
        assert c["log.retention.check.interval.ms"] == 300_000
        assert c["log.flush.scheduler.interval.ms"] == (1 << 63) - 1
        assert c["log.flush.offset.checkpoint.interval.ms"] == 60_000
        assert c["log.flush.start.offset.checkpoint.interval.ms"] == 60_000
        assert c["log.initial.task.delay.ms"] == 30_000
        assert c["background.threads"] == 10
        # Long.MAX_VALUE is Kafka's "never": no flusher task by default.
        assert broker.kafka_scheduler.task_names() == sorted([
            "PeriodicProducerExpirationCheck", "kafka-log-dir-probe",
            "kafka-log-retention", "kafka-log-start-offset-checkpoint",
            "kafka-recovery-point-checkpoint"])
    with pytest.raises(ConfigError):
        Broker({"log.retention.check.interval.ms": "0"})


def test_retention_runs_by_itself_by_size_and_by_time():
    with Broker(FAST) as broker:
        _create(broker.bootstrap_servers, "by-size",
                {"internal.segment.bytes": "1024", "retention.bytes": "2048"})
        _create(broker.bootstrap_servers, "by-time",
                {"internal.segment.bytes": "1024", "retention.ms": "200"})
        _produce(broker.bootstrap_servers, "by-size", 400)
        _produce(broker.bootstrap_servers, "by-time", 100)
        lg = broker.log_manager.get_log("by-size", 0)
        # Nobody calls retention here: the scheduled task deletes the old segments.
        wait_until(lambda: lg.size_in_bytes <= 2048 + 1024, "retention.bytes applied",
                   bound_s=20)
        low, high = _offsets(broker.bootstrap_servers, "by-size")
        assert 0 < low < high == 400
        wait_until(lambda: _offsets(broker.bootstrap_servers, "by-time") == (100, 100),
                   "every record of by-time expired", bound_s=20)


def test_recovery_points_and_log_start_offsets_are_checkpointed_by_themselves(tmp_path):
    # log.flush.interval.ms unset: flush.ms is log.flush.scheduler.interval.ms, as in Kafka.
    config = {**FAST, "log.dirs": str(tmp_path), "log.flush.scheduler.interval.ms": "50"}
    with Broker(config) as broker:
        _create(broker.bootstrap_servers, "cp", {"internal.segment.bytes": "1024", "retention.bytes": "2048"})
        _produce(broker.bootstrap_servers, "cp", 300)

        def checkpoint(name):
            try:
                lines = (tmp_path / name).read_text().splitlines()
            except FileNotFoundError:
                return None
            return {tuple(line.split()[:2]): int(line.split()[2]) for line in lines[2:]}

        # flush.ms=50 and the flusher every 50 ms: everything is fsynced, the recovery point
        # reaches the log end, and the checkpoint task writes it; no shutdown involved.
        wait_until(lambda: (checkpoint("recovery-point-offset-checkpoint") or {})
                   .get(("cp", "0")) == 300, "recovery point 300 checkpointed", bound_s=20)
        lg = broker.log_manager.get_log("cp", 0)
        wait_until(lambda: lg.log_start_offset > 0, "retention", bound_s=20)
        wait_until(lambda: (checkpoint("log-start-offset-checkpoint") or {})
                   .get(("cp", "0")) == lg.log_start_offset, "log start offset checkpointed",
                   bound_s=20)



def test_new_partition_directories_are_made_durable_by_one_task_for_many(tmp_path):
    """The log dir's fsync after new logs waits a little for more of them, then runs by
    itself (no shutdown involved)."""
    from kafkacore.broker.log.log_manager import LogManager

    scheduler = KafkaScheduler()
    scheduler.startup()
    try:
        manager = LogManager([tmp_path], scheduler=scheduler)
        for p in range(20):
            manager.get_or_create_log("burst", p)
        wait_until(lambda: not manager.unsynced_dirs
                   and "kafka-log-dir-flush" not in scheduler.task_names(),
                   "the log dir flushed", bound_s=20)
        assert len(list(tmp_path.glob("burst-*"))) == 20
    finally:
        scheduler.shutdown()


def test_checkpoints_written_from_several_threads_at_once_keep_the_dir_online(tmp_path):
    """DeleteRecords' handlers and the periodic task write the same checkpoint files: written
    at once (they share a temp file), a rename used to fail and take the log dir offline
    (found by the client compatibility run: six clients' DeleteRecords side by side)."""
    from kafkacore.broker.log.log_manager import LogManager

    manager = LogManager([tmp_path])
    for p in range(4):
        manager.get_or_create_log("cp", p)
    start = threading.Barrier(4)

    def writer():
        start.wait(timeout=30)
        for _ in range(50):
            manager.checkpoint_log_start_offsets()
            manager.checkpoint_recovery_points()

    threads = [threading.Thread(target=writer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert manager.dir_failure_channel.offline_dirs() == []
    assert manager.dir_failure_channel.failures == 0
    lines = (tmp_path / "log-start-offset-checkpoint").read_text().splitlines()
    assert lines[:2] == ["0", "4"]
