"""One ProducerBatch, by hand: append records, answer as the broker would, watch every record end once.

No broker needed: we play the Sender ourselves and "answer" the batch with base offset 42.  We see
the callbacks fire once, in append order, the futures resolve (also in a thread that was waiting),
a second answer refused, a late success after a failure ignored, and a split batch still completing
the futures the user holds.

Run it from the repository's root:

    python tutorials/05_producer_batch.py

Needs: kafkacore's compiled core, built in place once
(``python setup.py build_ext --inplace``); no broker.
"""

import threading
import time

from kafkacore.core import (
    FutureRecordMetadata,
    MemoryRecordsBuilder,
    ProducerBatch,
    RecordMetadata,
    iter_records,
)
from kafkacore.errors import IllegalStateError, KafkaTimeoutError


def now_ms() -> int:
    return int(time.time() * 1000)


def appended(future: FutureRecordMetadata | None) -> FutureRecordMetadata:
    # try_append answers None when the record does not fit: the accumulator then starts a batch.
    assert future is not None, "the batch is full"
    return future


def append_and_complete() -> None:
    # --- append
    # The accumulator would get this buffer from BufferPool.allocate(batch.size, ...).
    buffer = bytearray(16384)
    batch = ProducerBatch("orders", 0, MemoryRecordsBuilder(buffer), now_ms())

    fired: list[tuple[RecordMetadata | None, BaseException | None]] = []

    def on_completion(metadata: RecordMetadata | None, exception: BaseException | None) -> None:
        # The send() callback: (RecordMetadata, None) on success, (None, error) on failure.
        fired.append((metadata, exception))
        assert metadata is not None, exception
        print(f"  callback: offset={metadata.offset} value_size={metadata.serialized_value_size}")

    futures = []
    for i, value in enumerate([b"apple", b"banana", b"cherry", b"damson"]):
        key = None if i == 0 else f"user-{i}".encode()
        future = appended(batch.try_append(now_ms(), key, value, None, on_completion, now_ms()))
        futures.append(future)
    print(f"appended {batch.record_count} records, ~{batch.estimated_size_in_bytes()} bytes")
    # --- end append

    # --- waiting
    assert not futures[0].done()
    try:
        futures[0].result(timeout=0.1)
    except KafkaTimeoutError as e:  # also a TimeoutError, as with concurrent.futures
        print(f"result(timeout=0.1) before any answer: {type(e).__name__}")
    else:
        raise AssertionError("a record with no answer cannot have a result")

    waited = []
    waiter = threading.Thread(target=lambda: waited.append(futures[3].result(timeout=10)))
    waiter.start()  # blocks, with the GIL released, until the batch is done
    # --- end waiting

    # --- answer
    batch.close()  # the Sender closes a batch before sending: header, CRC
    sent = list(iter_records(batch.records()))
    print(f"the request carries {len(sent)} records; the broker answers: base offset 42")
    assert batch.done(42, -1, None) is True  # -1: no log append time, keep create times
    waiter.join(5)

    assert len(fired) == 4  # one callback per record...
    assert [m.offset for m, _ in fired if m] == [42, 43, 44, 45]  # ...in append order
    assert [f.result().offset for f in futures] == [42, 43, 44, 45]
    assert waited == [futures[3].result()]
    print(f"the waiting thread got offset {waited[0].offset}; final state: {batch.final_state}")
    # --- end answer

    # --- again
    try:
        batch.done(99, -1, None)  # a second success for the same batch: a bug somewhere
    except IllegalStateError as e:
        print(f"done() again is refused: {e}")
    else:
        raise AssertionError("a succeeded batch must not be completed twice")
    assert len(fired) == 4  # and nothing fired twice
    # --- end again


def late_success_after_failure() -> None:
    # --- late
    batch = ProducerBatch("orders", 1, MemoryRecordsBuilder(16384), now_ms())
    outcomes: list[BaseException | None] = []
    future = appended(
        batch.try_append(now_ms(), b"k", b"v", None, lambda m, e: outcomes.append(e), now_ms()))

    # delivery.timeout.ms passed while the request was in flight: the Sender fails the batch...
    assert batch.done(-1, -1, KafkaTimeoutError("expired in flight")) is True
    # ...then the broker's success arrives after all.  Too late: the user was told already.
    assert batch.done(42, -1, None) is False
    assert batch.final_state == "failed"
    assert len(outcomes) == 1 and isinstance(future.exception(), KafkaTimeoutError)
    print(f"failure, then a late success: done() -> False, the record stays failed: {outcomes[0]}")
    # --- end late


def split_keeps_the_futures() -> None:
    # --- split
    batch = ProducerBatch("orders", 2, MemoryRecordsBuilder(16384), now_ms())
    offsets: list[int] = []

    def on_completion(metadata: RecordMetadata | None, exception: BaseException | None) -> None:
        assert metadata is not None, exception
        offsets.append(metadata.offset)

    futures = [
        appended(batch.try_append(now_ms(), None, bytes(100), None, on_completion, 0))
        for _ in range(6)
    ]
    batch.close()
    # The broker says MESSAGE_TOO_LARGE: split into batches of at most ~300 bytes.
    pieces = batch.split(300)
    print(f"split 6 records into batches of {[p.record_count for p in pieces]} records")
    assert batch.done(0, -1, None) is False  # the original can no longer complete them
    for n, piece in enumerate(pieces):
        piece.done(100 * (n + 1), -1, None)  # each piece gets its own answer
    assert len(offsets) == 6 and all(f.done() for f in futures)
    print(f"the user's original futures resolved at offsets {[f.result().offset for f in futures]}")
    # --- end split


if __name__ == "__main__":
    append_and_complete()
    late_success_after_failure()
    split_keeps_the_futures()
