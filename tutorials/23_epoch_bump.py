"""When the producer cannot know what the broker wrote: the epoch bump (KIP-360).

We freeze a broker (SIGSTOP) while records are in flight, wait until they pass
``delivery.timeout.ms`` and fail, and let it go on (SIGCONT).  The broker may or may not have
written them; the producer cannot tell, so it starts the partition over under a new epoch, from
sequence 0, and the records sent afterwards are delivered.  Then we read the partition's batches
back exactly as the broker stores them.

Run it from the repository's root:

    python tutorials/23_epoch_bump.py

It starts our own broker (``python -m kafkacore.broker``) in a child process: it checks sequence
numbers as Kafka does, and we need to freeze it.
"""

import time

from kafkacore import KafkaProducer, admin
from kafkacore.core import iter_batches
from kafkacore.errors import KafkaTimeoutError
from kafkacore.testing import LocalBroker, fetch_record_batches


def main() -> None:
    # --- start
    with LocalBroker(kind="kafkacore") as broker:
        bootstrap = broker.bootstrap
        admin.create_topics(bootstrap, {"epoch-tour": 1})
        producer = KafkaProducer(
            bootstrap_servers=bootstrap, linger_ms=0, batch_size=200,
            request_timeout_ms=1000, delivery_timeout_ms=2500,
            socket_connection_setup_timeout_ms=1000,
        )
        for i in range(10):
            producer.send("epoch-tour", b"before %02d" % i).get(timeout=30)

        with broker.paused():  # frozen: requests are accepted by the kernel, never answered
            frozen = [producer.send("epoch-tour", b"frozen %02d" % i) for i in range(10)]
            deadline = time.monotonic() + 60
            while not all(f.done() for f in frozen):
                assert time.monotonic() < deadline
                time.sleep(0.05)
        expired = sum(isinstance(f.exception(), KafkaTimeoutError) for f in frozen)
        print(f"{expired} of 10 records expired while the broker was frozen: written or not?")

        # Back to work: these are delivered (without KIP-360 they would be refused as out of
        # order, retried behind batches that no longer exist, and expire too).
        for i in range(10):
            producer.send("epoch-tour", b"after %02d" % i).get(timeout=60)
        producer.close()

        # (producer id, epoch) -> the base sequence of its first batch
        first_of: dict[tuple[int, int], int] = {}
        frozen_written = 0
        for raw in fetch_record_batches(bootstrap, "epoch-tour", 0):
            [batch] = iter_batches(raw)
            values = [r.value or b"" for r in batch.records]
            first = values[0].decode()
            print(f"offset {batch.base_offset:2}  producer id {batch.producer_id}, "
                  f"epoch {batch.producer_epoch}, base sequence {batch.base_sequence:2}  "
                  f"({batch.record_count} records from '{first}')")
            first_of.setdefault((batch.producer_id, batch.producer_epoch), batch.base_sequence)
            frozen_written += sum(v.startswith(b"frozen") for v in values)
        # A new epoch starts its sequences at 0: the broker accepts that whatever it held
        # before.  The producer raises its epoch itself (same producer id), so that a batch of
        # the old epoch the broker reads late is refused, not written after the new ones.
        # (Only when something expired: if every frozen record was acknowledged after all,
        # the producer knew what the broker held and had no reason to start over.)
        last = list(first_of)[-1]
        if expired:
            assert len(first_of) >= 2 and first_of[last] == 0
    print(f"the broker had written {frozen_written} of the {expired} expired records: a timeout"
          " means 'unknown', not 'lost'")
    print(f"after the frozen stretch the partition went on as producer id {last[0]}, epoch "
          f"{last[1]}")


if __name__ == "__main__":
    main()
