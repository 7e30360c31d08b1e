"""One producer per thread, each in a with block (flushed and closed at its end)."""
# ruff: noqa: UP031, UP032 -- written as confluent-kafka's own examples are
import sys
import threading

from confluent_kafka import Producer

MESSAGES_PER_THREAD = 5
broker, topic = sys.argv[1], sys.argv[2]
lines = []
lock = threading.Lock()


def produce_messages(name):
    def delivery_callback(err, msg):
        with lock:
            lines.append('%s: %s %s' % (name, 'failed' if err else 'delivered', msg.value()))

    with Producer({'bootstrap.servers': broker}) as producer:
        for i in range(MESSAGES_PER_THREAD):
            producer.produce(topic, key=name, value='message %d from %s' % (i, name),
                             callback=delivery_callback)
            producer.poll(0)


threads = [threading.Thread(target=produce_messages, args=('worker-%d' % i,)) for i in range(3)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print('\n'.join(sorted(lines)))
print('%d threads finished producing %d messages each' % (len(threads), MESSAGES_PER_THREAD))
