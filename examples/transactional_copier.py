"""A transactional copier: consume-transform-produce, exactly once (Kafka's ``TransactionalMessageCopier``).

    python examples/transactional_copier.py --bootstrap-servers HOST:PORT --input in
        --output out --group copier --transactional-id copier-1 [--producer kafkacore|confluent]
        [--records-per-txn 500] [--txn-ms 100] [--max-rate 0] [--hold-file PATH]
        [--limit-file PATH]

It reads ``--input`` with a confluent-kafka consumer (``isolation.level=read_committed``, every
partition assigned by hand, starting at the group's committed offsets) and writes each record,
unchanged, to the same partition of ``--output`` with a transactional producer (kafkacore's or
confluent-kafka's). The consumer's positions go into the same transaction with
``send_offsets_to_transaction(consumer.position(...), consumer.consumer_group_metadata())``, so
a record's copy and the offset past it are committed together, or neither is. One transaction
every ``--records-per-txn`` records or ``--txn-ms`` milliseconds, whichever comes first.

Killed at any moment (SIGKILL) and started again with the same ``--transactional-id``, the new
copier's ``init_transactions`` fences the old one and has the coordinator abort what it left
open; it resumes at the last committed offsets, so the output holds every input record exactly
once. A failed commit is aborted and the consumer rewound to the last committed positions.

It prints ``committed <records>`` (the sum of its committed positions) after every commit, and
exits 0 once every input partition is copied up to the end it saw at start, 1 on a fatal error
(fenced by a newer copier).  Two controls for a test harness: while ``--hold-file`` exists it
starts no new transaction (the harness creates it while it brings a killed broker back), and
prints ``held <the file's text>`` once it has stopped; and it copies no record past the count
``--limit-file`` holds (the same sum as its ``committed`` lines), so that it cannot finish before
the harness has done every kill it planned.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from typing import Any

#: librdkafka/confluent-kafka errors after which a transaction can only be aborted
_POLL_S = 0.2


class _KafkacoreProducer:
    """kafkacore's KafkaProducer, its errors sorted into Kafka's three kinds."""

    def __init__(self, bootstrap: str, transactional_id: str, debug: str = "") -> None:
        from kafkacore import KafkaProducer

        self.producer = KafkaProducer(bootstrap_servers=bootstrap,
                                      transactional_id=transactional_id, linger_ms=5,
                                      max_block_ms=120_000)

    def init(self) -> None:
        self.producer.init_transactions()

    def begin(self) -> None:
        self.producer.begin_transaction()

    def send(self, topic: str, partition: int, key: bytes | None, value: bytes | None) -> None:
        self.producer.send(topic, value, key=key, partition=partition)

    def send_offsets(self, positions: list[Any], group_metadata: Any) -> None:
        self.producer.send_offsets_to_transaction(positions, group_metadata)

    def commit(self) -> None:
        self.producer.commit_transaction()

    def abort(self) -> None:
        self.producer.abort_transaction()

    @staticmethod
    def is_fatal(error: BaseException) -> bool:
        from kafkacore.errors import IllegalStateError, ProducerFencedError

        return isinstance(error, (ProducerFencedError, IllegalStateError))


class _ConfluentProducer:
    def __init__(self, bootstrap: str, transactional_id: str, debug: str = "") -> None:
        from confluent_kafka import Producer

        settings = {"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                    "linger.ms": 5, "message.timeout.ms": 60_000,
                    "transaction.timeout.ms": 60_000}
        if debug:
            settings["debug"] = debug
        self.producer = Producer(settings)

    def init(self) -> None:
        self.producer.init_transactions(120)

    def begin(self) -> None:
        self.producer.begin_transaction()

    def send(self, topic: str, partition: int, key: bytes | None, value: bytes | None) -> None:
        while True:
            try:
                self.producer.produce(topic, value, key, partition=partition)
                return
            except BufferError:  # the local queue is full: let the sender drain it
                self.producer.poll(0.1)

    def send_offsets(self, positions: list[Any], group_metadata: Any) -> None:
        self.producer.send_offsets_to_transaction(positions, group_metadata, 120)

    def commit(self) -> None:
        self.producer.commit_transaction(120)

    def abort(self) -> None:
        self.producer.abort_transaction(120)

    @staticmethod
    def is_fatal(error: BaseException) -> bool:
        from confluent_kafka import KafkaException

        return isinstance(error, KafkaException) and error.args[0].fatal()


def copy(args: argparse.Namespace) -> int:
    from confluent_kafka import Consumer, TopicPartition

    producer: Any = (_KafkacoreProducer if args.producer == "kafkacore" else _ConfluentProducer)(
        args.bootstrap_servers, args.transactional_id, args.client_debug)
    # first fence the copier we replace, so that its open transaction (and its offsets) is
    # settled before we ask for the group's committed offsets
    producer.init()
    consumer = Consumer({"bootstrap.servers": args.bootstrap_servers, "group.id": args.group,
                         "isolation.level": "read_committed", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "enable.partition.eof": False})
    try:
        metadata = consumer.list_topics(args.input, timeout=60).topics[args.input]
        partitions = [TopicPartition(args.input, p) for p in sorted(metadata.partitions)]
        ends = {tp.partition: consumer.get_watermark_offsets(tp, timeout=60)[1]
                for tp in partitions}
        committed = {tp.partition: max(tp.offset, 0)
                     for tp in _committed(consumer, partitions)}
        consumer.assign([TopicPartition(args.input, p, o) for p, o in committed.items()])
        return _loop(args, producer, consumer, committed, ends)
    finally:
        consumer.close()


def _committed(consumer: Any, partitions: list[Any], bound_s: float = 120.0) -> list[Any]:
    """The group's committed offsets, asked again while the group's coordinator moves
    (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS: librdkafka hands these to the caller)."""
    from confluent_kafka import KafkaError, KafkaException

    moving = {KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
              KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError._TIMED_OUT}
    deadline = time.monotonic() + bound_s
    while True:
        try:
            return consumer.committed(partitions, timeout=30)
        except KafkaException as error:
            if error.args[0].code() not in moving or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _control(path: str) -> str | None:
    """The text of a harness's control file (written whole, by a rename); None without one."""
    if not path:
        return None
    try:
        with open(path) as f:
            return f.read().strip()
    except FileNotFoundError:
        return None


def _limit(path: str) -> float:
    """How many records (the sum of the input positions) the copier may copy."""
    text = _control(path)
    return math.inf if text is None else int(text)


def _loop(args: argparse.Namespace, producer: Any, consumer: Any, committed: dict[int, int],
          ends: dict[int, int]) -> int:
    from confluent_kafka import TopicPartition

    def done() -> bool:
        return all(committed[p] >= end for p, end in ends.items())

    interval_s = args.txn_ms / 1000
    started = time.monotonic()
    copied = 0
    chunk = max(1, int(args.max_rate / 10)) if args.max_rate else 500  # paced: 10 a second
    acknowledged = None
    while not done():
        hold = _control(args.hold_file)
        if hold is not None and hold != acknowledged:
            print(f"held {hold}", flush=True)  # no transaction is open until the file goes
            acknowledged = hold
        if hold is not None or sum(committed.values()) >= _limit(args.limit_file):
            time.sleep(_POLL_S)
            started, copied = time.monotonic(), 0
            continue
        producer.begin()
        deadline = time.monotonic() + interval_s
        positions = dict(committed)
        in_txn = 0
        try:
            while in_txn < args.records_per_txn and time.monotonic() < deadline:
                room = _limit(args.limit_file) - sum(positions.values())
                if room <= 0:
                    break
                batch = consumer.consume(min(chunk, args.records_per_txn - in_txn, room),
                                         _POLL_S)
                for m in batch:
                    if m.error():
                        raise RuntimeError(f"consumer error: {m.error()}")
                    producer.send(args.output, m.partition(), m.key(), m.value())
                    positions[m.partition()] = m.offset() + 1
                in_txn += len(batch)
                copied += len(batch)
                if args.max_rate:
                    elapsed = time.monotonic() - started
                    ahead_s = copied / args.max_rate - elapsed
                    if ahead_s > 0:
                        time.sleep(ahead_s)
                    elif ahead_s < -1:  # after a stall: no catching up in a burst
                        started, copied = time.monotonic(), 0
                if all(positions[p] >= end for p, end in ends.items()):
                    break
            offsets = [TopicPartition(args.input, p, o) for p, o in positions.items()]
            producer.send_offsets(offsets, consumer.consumer_group_metadata())
            producer.commit()
        except Exception as error:  # noqa: BLE001 - sorted below: fatal, or abort and rewind
            if producer.is_fatal(error):
                print(f"fatal: {error!r}", file=sys.stderr, flush=True)
                return 1
            print(f"aborting: {error!r}", file=sys.stderr, flush=True)
            producer.abort()
            consumer.assign([TopicPartition(args.input, p, o) for p, o in committed.items()])
            continue
        committed = positions
        print(f"committed {sum(committed.values())}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bootstrap-servers", required=True)
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--transactional-id", required=True)
    parser.add_argument("--producer", choices=("kafkacore", "confluent"), default="kafkacore")
    parser.add_argument("--records-per-txn", type=int, default=500)
    parser.add_argument("--txn-ms", type=int, default=100)
    parser.add_argument("--max-rate", type=float, default=0.0,
                        help="records per second at most (0: as fast as it goes)")
    parser.add_argument("--hold-file", default="",
                        help="no new transaction starts while this file exists")
    parser.add_argument("--limit-file", default="",
                        help="copy no record past the count this file holds (the sum of the "
                             "input positions)")
    parser.add_argument("--client-debug", default="",
                        help="librdkafka debug contexts of confluent-kafka's producer "
                             "(e.g. eos,protocol), written to stderr")
    args = parser.parse_args(argv)
    if args.records_per_txn < 1 or args.txn_ms < 1 or args.max_rate < 0:
        parser.error("--records-per-txn and --txn-ms must be positive, --max-rate >= 0")
    return copy(args)


if __name__ == "__main__":
    sys.exit(main())
