"""librdkafka's setting names, list_topics(), a message too large, delivery.report.only.error."""
# ruff: noqa: UP031, UP032 -- written as confluent-kafka's own examples are
import sys

from confluent_kafka import KafkaError, KafkaException, Producer

broker, topic = sys.argv[1], sys.argv[2]
p = Producer({
    'bootstrap.servers': broker,
    'queue.buffering.max.ms': 20,
    'message.timeout.ms': 30000,
    'compression.codec': 'gzip',
    'message.max.bytes': 100000,
    'queue.buffering.max.kbytes': 4096,
    'message.send.max.retries': 5,
    'request.required.acks': -1,
    'delivery.report.only.error': True,
})
reports = []
for i in range(5):
    p.produce(topic, b'payload %d' % i, on_delivery=lambda err, msg: reports.append(err))
try:
    p.produce(topic, b'x' * 200000)
except KafkaException as e:
    print('too large:', e.args[0].code() == KafkaError.MSG_SIZE_TOO_LARGE)
print('left:', p.flush(30))
print('reports served (only errors):', reports)
metadata = p.list_topics(topic, timeout=10)
print('partitions:', sorted(metadata.topics[topic].partitions))
print('topic error:', metadata.topics[topic].error)
print('leader known:', metadata.topics[topic].partitions[0].leader in metadata.brokers)
