"""A consumer of a group, as an application would write it, for tests/broker/test_cluster_groups.py.

Each consumer runs in its own child process (confluent-kafka must, see tests/readback.py; the
kafka-python ones do too, so both kinds are driven the same way).  It ``subscribe()`` s, and for
every record it polls: "processes" it (a short pause, so that the stream lasts long enough to be
broken in the middle), then commits the record's offset + 1 synchronously.  Everything it sees
goes to the test through ``events``, stamped with ``time.monotonic()`` (one clock for every
process of the machine):

- ``("assign", t, cid, partitions)`` / ``("revoke", t, cid, partitions)``: the rebalance callbacks;
- ``("record", t, cid, partition, offset, key, value)``: a record processed;
- ``("commit", t_start, t_end, cid, partition, offset, ok, error)``: a commit, and whether the
  client reported it done (``ok``) or failed (the broker may still have written it);
- ``("poll_error", t, cid, error)``: a retriable error raised by kafka-python's ``poll()``, retried.

With ``credits`` (a semaphore shared with the test), a consumer takes one before it processes a
record: the test holds the stream in the middle, however fast the consumers are, until it has
broken what it breaks there.
"""

from __future__ import annotations

import logging
import time
import traceback
from typing import Any

PROCESSING_S = 0.01


def run_consumer(kind: str, cid: int, bootstrap: str, topic: str, group: str, events: Any,
                 stop: Any, timeout_s: float, log_path: str | None = None,
                 credits: Any = None) -> None:
    if log_path is not None:  # the client's own log, for post-mortems
        logging.basicConfig(filename=log_path, level=logging.DEBUG,
                            format="%(asctime)s %(threadName)s %(name)s %(message)s")
    try:
        if kind == "confluent":
            _run_confluent(cid, bootstrap, topic, group, events, stop, timeout_s, credits)
        else:
            _run_kafka_python(cid, bootstrap, topic, group, events, stop, timeout_s, credits)
    except BaseException:
        events.put(("error", time.monotonic(), cid, traceback.format_exc()))
        raise


def _may_process(credits: Any, stop: Any) -> bool:
    """Take a credit to process one record (waiting for the test to give more); False once the
    test stops the consumers."""
    if credits is None:
        return True
    while not credits.acquire(timeout=0.1):
        if stop.is_set():
            return False
    return True


def _run_confluent(cid, bootstrap, topic, group, events, stop, timeout_s, credits):
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "client.id": f"confluent-{cid}",
        "enable.auto.commit": False,
        # Lost offsets would skip records: proof that the group resumed from its commits.
        "auto.offset.reset": "latest",
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500,
        "topic.metadata.refresh.interval.ms": 1000,
    })

    def on_assign(c, partitions):
        events.put(("assign", time.monotonic(), cid, sorted(p.partition for p in partitions)))

    def on_revoke(c, partitions):
        events.put(("revoke", time.monotonic(), cid, sorted(p.partition for p in partitions)))

    consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
    deadline = time.monotonic() + timeout_s
    try:
        while not stop.is_set() and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None or msg.error() is not None:
                continue
            if not _may_process(credits, stop):
                break
            p, o = msg.partition(), msg.offset()
            events.put(("record", time.monotonic(), cid, p, o, msg.key(), msg.value()))
            time.sleep(PROCESSING_S)
            start = time.monotonic()
            ok, error = False, ""
            try:
                result = consumer.commit(offsets=[TopicPartition(topic, p, o + 1)],
                                         asynchronous=False)
                errors = [r.error for r in result or [] if r.error is not None]
                ok, error = not errors, ";".join(str(e) for e in errors)
            except KafkaException as exc:
                error = str(exc)
            events.put(("commit", start, time.monotonic(), cid, p, o + 1, ok, error))
    finally:
        consumer.close()


def _run_kafka_python(cid, bootstrap, topic, group, events, stop, timeout_s, credits):
    from kafka import ConsumerRebalanceListener, KafkaConsumer, TopicPartition
    from kafka.errors import KafkaError
    from kafka.structs import OffsetAndMetadata

    class Listener(ConsumerRebalanceListener):
        def on_partitions_assigned(self, assigned):
            events.put(("assign", time.monotonic(), cid, sorted(tp.partition for tp in assigned)))

        def on_partitions_revoked(self, revoked):
            events.put(("revoke", time.monotonic(), cid, sorted(tp.partition for tp in revoked)))

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        client_id=f"kafka-python-{cid}",
        enable_auto_commit=False,
        auto_offset_reset="latest",
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        metadata_max_age_ms=1000,
        request_timeout_ms=10000,
        retry_backoff_ms=100,
    )
    consumer.subscribe([topic], listener=Listener())
    deadline = time.monotonic() + timeout_s
    try:
        while not stop.is_set() and time.monotonic() < deadline:
            # A long poll: kafka-python (3.0.12 here) can lose a rebalance that completes just
            # after poll() timed out inside its join (its heartbeats are never enabled again,
            # as in dpkp/kafka-python#2610); 10 s covers a whole rebalance, and poll() returns
            # as soon as a record is there anyway.
            try:
                batches = consumer.poll(timeout_ms=10000, max_records=1)
            except KafkaError as exc:
                # Retried, as an application would: kafka-python raises a refused connection to
                # a broker that just died (still in its metadata) from poll().
                if not exc.retriable:
                    raise
                events.put(("poll_error", time.monotonic(), cid, repr(exc)))
                continue
            for tp, records in batches.items():
                for record in records:
                    if not _may_process(credits, stop):
                        return
                    p, o = tp.partition, record.offset
                    events.put(("record", time.monotonic(), cid, p, o, record.key, record.value))
                    time.sleep(PROCESSING_S)
                    start = time.monotonic()
                    ok, error = False, ""
                    try:
                        consumer.commit({TopicPartition(topic, p): OffsetAndMetadata(o + 1, "",
                                                                                     -1)})
                        ok = True
                    except KafkaError as exc:
                        error = repr(exc)
                    events.put(("commit", start, time.monotonic(), cid, p, o + 1, ok, error))
    finally:
        consumer.close(autocommit=False)
