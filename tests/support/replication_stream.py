"""The producing side of the replication system test (tests/broker/test_replication_system.py).

One stream of ``RECORDS`` keyed records, the same for every producer: record ``i`` has key
``key_of(i)`` and value ``b"%07d" % i``, so its key's sequence number is ``i // KEYS``.  The stream
is paced by its own progress, not by a clock: at most ``window`` records are outstanding (sent and
not yet reported), and before record ``gate_at[k]`` the sender waits until fault ``k`` is over
(``gates[k]``), so every fault happens while records are in flight and the stream cannot finish
before the faults do.  ``completed`` counts delivery reports (success or failure); the test's fault
driver watches it.

confluent-kafka runs in a child process (see tests/readback.py for why); both sides share the
counter and the gates as ``multiprocessing`` objects.
"""

from __future__ import annotations

import pickle
import time
from array import array
from typing import Any

RECORDS = 100_000
KEYS = 600


def key_of(i: int) -> bytes:
    return b"key-%03d" % (i % KEYS)


def value_of(i: int) -> bytes:
    return b"%07d" % i


class StreamResult:
    """Per record: how many reports it got, where it was acknowledged (or why it failed), and
    how long after its ``send`` the report came (seconds)."""

    def __init__(self, records: int) -> None:
        self.reports = bytearray(records)
        self.partition = array("i", [-1]) * records
        self.offset = array("q", [-1]) * records
        self.sent_at = array("d", [0.0]) * records
        self.latency = array("d", [0.0]) * records
        self.errors: dict[int, str] = {}
        self.elapsed_s = 0.0

    def report(self, i: int, partition: int, offset: int, error: Any) -> None:
        self.reports[i] = min(self.reports[i] + 1, 255)
        self.latency[i] = time.monotonic() - self.sent_at[i]
        if error is not None:
            self.errors[i] = f"{type(error).__name__}: {error}"
        else:
            self.partition[i] = partition
            self.offset[i] = offset


def run_stream(send, wait, completed, gates, gate_at, window: int, bound_s: float,
               result: StreamResult) -> None:
    """Send every record with ``send(i)``; ``wait(s)`` lets reports arrive for up to ``s``
    seconds (confluent-kafka's ``poll``, or a sleep for a producer with its own I/O thread)."""
    deadline = time.monotonic() + bound_s
    start = time.monotonic()
    gate_of = dict(zip(gate_at, gates, strict=True))
    for i in range(len(result.reports)):
        gate = gate_of.get(i)
        while gate is not None and not gate.is_set():
            if time.monotonic() > deadline:
                raise TimeoutError(f"fault before record {i} not over within {bound_s} s")
            wait(0.05)
        while i - completed.value >= window:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{i - completed.value} records outstanding for {bound_s} s")
            wait(0.005)
        result.sent_at[i] = time.monotonic()
        send(i)
    result.elapsed_s = time.monotonic() - start


def confluent_stream(bootstrap: str, topic: str, completed, gates, gate_at, window: int,
                     bound_s: float, delivery_timeout_ms: int, out_path: str) -> None:
    """The control: the same stream produced by confluent-kafka (idempotent, acks=all); the
    result is pickled to ``out_path``."""
    from confluent_kafka import Producer

    result = StreamResult(RECORDS)
    client_errors: list[str] = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                         "enable.idempotence": True, "linger.ms": 5,
                         "message.timeout.ms": delivery_timeout_ms,
                         "error_cb": lambda err: client_errors.append(str(err))})

    def send(i: int) -> None:
        def on_delivery(err, msg, i=i):
            result.report(i, msg.partition(), msg.offset(), err)
            completed.value += 1

        producer.produce(topic, value=value_of(i), key=key_of(i), on_delivery=on_delivery)
        producer.poll(0)

    start = time.monotonic()
    run_stream(send, producer.poll, completed, gates, gate_at, window, bound_s, result)
    left = producer.flush(bound_s)
    result.elapsed_s = time.monotonic() - start
    with open(out_path, "wb") as f:
        pickle.dump({"result": result, "unflushed": left, "client_errors": client_errors}, f)
