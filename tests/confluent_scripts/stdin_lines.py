"""Lines from stdin, Producer(**conf), a small local queue: BufferError, poll(1), try again."""
# ruff: noqa: UP031, UP032 -- written as confluent-kafka's own examples are
import sys

from confluent_kafka import Producer

broker, topic = sys.argv[1], sys.argv[2]
conf = {'bootstrap.servers': broker, 'queue.buffering.max.messages': 3}
p = Producer(**conf)


def delivery_callback(err, msg):
    if err:
        sys.stdout.write('%% Message failed delivery: %s\n' % err)
    else:
        sys.stdout.write('%% Message delivered to %s [%d] @ %o\n' %
                         (msg.topic(), msg.partition(), msg.offset()))


most = 0
for line in sys.stdin:
    while True:
        try:
            p.produce(topic, line.rstrip(), callback=delivery_callback)
            break
        except BufferError:
            most = max(most, len(p))
            p.poll(1)
    most = max(most, len(p))
    p.poll(0)

print('never more than 3 waiting:', most <= 3)
print('left:', p.flush())
