"""The README's loop: poll(0) before each produce(), bytes values, one flush() at the end."""
# ruff: noqa: UP031, UP032 -- written as confluent-kafka's own examples are
import sys

from confluent_kafka import Producer

p = Producer({'bootstrap.servers': sys.argv[1]})
topic = sys.argv[2]


def delivery_report(err, msg):
    if err is not None:
        print('Message delivery failed: {}'.format(err))
    else:
        print('Message delivered to {} [{}] @ {}'.format(msg.topic(), msg.partition(), msg.offset()))


for data in ['alpha', 'beta', 'gamma', 'delta']:
    p.poll(0)
    p.produce(topic, data.encode('utf-8'), callback=delivery_report)

print('still queued after flush:', p.flush())
print('len after flush:', len(p))
