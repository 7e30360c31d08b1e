"""The getting-started guide's calls: str keys and values, callback= and on_delivery, headers as
a dict and as pairs, a timestamp, a partition, positional arguments, poll(1), flush(timeout)."""
# ruff: noqa: UP031, UP032 -- written as confluent-kafka's own examples are
import socket
import sys

from confluent_kafka import Producer

conf = {'bootstrap.servers': sys.argv[1], 'client.id': socket.gethostname()}
producer = Producer(conf)
topic = sys.argv[2]


def acked(err, msg):
    if err is not None:
        print("Failed to deliver message: %s" % str(err))
    else:
        print("Message produced: %s %s [%d] @ %d %s" % (
            msg.key(), msg.value(), msg.partition(), msg.offset(), msg.error()))


def timestamped(err, msg):
    print("timestamp:", msg.timestamp(), "latency is a float:", isinstance(msg.latency(), float))


producer.produce(topic, key="key", value="value", callback=acked)
producer.produce(topic, value=b"v2", key=b"k2", headers={"h1": "x", "h2": b"y"},
                 on_delivery=acked)
producer.produce(topic, "v3", "k3", 0, acked, None, 0, [("a", b"1"), ("a", None), ("b", "text")])
producer.produce(topic, "v4", timestamp=1700000000000, partition=0, callback=timestamped)
producer.produce(topic, value=None, key="tombstone", callback=acked)
print("served by poll(1):", producer.poll(1) >= 1)
print("left:", producer.flush(30))
print("poll with nothing left serves", producer.poll(0))
