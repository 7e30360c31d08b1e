"""Breaking a broker on purpose: injected errors, and the producer that gets through them.

We start a kafkacore broker in this process and switch on faults with ``broker.faults``, the way
librdkafka's mock cluster does it for librdkafka's own tests:

1. the next two Produce requests are answered NOT_LEADER_OR_FOLLOWER: the producer refreshes
   its metadata, retries, and the record lands at offset 0, written once;
2. the next Produce is answered REQUEST_TIMED_OUT *after* its batch was appended: the producer
   cannot know it was written and sends it again; the broker recognises the retry by its
   producer id and sequence number and answers with the original offset, so the log holds the
   record once;
3. the broker is isolated (every connection closed, new ones refused) while a record waits,
   then healed: the producer reconnects and the record arrives.

Run it from the repository's root:

    python tutorials/48_faults.py

Needs: kafkacore's compiled core, built in place once
(``python setup.py build_ext --inplace``); no other broker.
"""

import time

from kafkacore import KafkaProducer
from kafkacore.broker import Broker
from kafkacore.core.record_batch import iter_records
from kafkacore.testing import fetch_record_batches


def values_in_log(bootstrap: str, topic: str) -> list[bytes]:
    """Everything in partition 0, read back from the broker."""
    return [
        bytes(record.value or b"")  # no tombstones here: every record has a value
        for raw in fetch_record_batches(bootstrap, topic, 0)
        for record in iter_records(raw)
    ]


def main() -> None:
    # --- start
    with Broker({"num.partitions": "1"}) as broker, KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers, retry_backoff_ms=20,
    ) as producer:
        topic = "faults-tutorial"
        producer.partitions_for(topic)  # the topic is auto-created; the producer knows it

        # 1. The partition's leader "moved": twice.
        broker.faults.fail_next("Produce", ["NOT_LEADER_OR_FOLLOWER"] * 2)
        first = producer.send(topic, b"first").get(timeout=30)
        print(f"1. after {broker.faults.injected[0]} NOT_LEADER_OR_FOLLOWER answers: "
              f"'first' at offset {first.offset}")
        assert first.offset == 0 and broker.faults.pending() == {}

        # 2. Written, but the answer says it timed out.
        broker.faults.fail_next("Produce", ["REQUEST_TIMED_OUT"], after_append=True)
        second = producer.send(topic, b"second").get(timeout=30)
        print(f"2. after REQUEST_TIMED_OUT following the append: 'second' at offset "
              f"{second.offset}, the retry recognised as a duplicate")
        assert second.offset == 1

        # 3. Cut off from everyone, then healed.
        broker.faults.isolate()
        waiting = producer.send(topic, b"third")
        assert broker.socket_server is not None  # set once the broker has started
        refused = broker.socket_server.acceptor
        deadline = time.monotonic() + 30
        while refused.isolated_refused == 0:  # the producer knocks and is turned away
            assert time.monotonic() < deadline, "the producer never tried to reconnect"
            time.sleep(0.01)
        assert not waiting.done()
        broker.faults.heal()
        third = waiting.get(timeout=30)
        print(f"3. isolated ({refused.isolated_refused} connection(s) refused), healed: "
              f"'third' at offset {third.offset}")

        in_log = values_in_log(broker.bootstrap_servers, topic)
        print(f"the log: {in_log}")
        assert in_log == [b"first", b"second", b"third"]  # each once, in order
    # --- end


if __name__ == "__main__":
    main()
