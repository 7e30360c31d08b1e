"""Serializers in the conventions of the three clients: ours (topic, value), kafka-python's
(value), confluent-kafka's Serializer objects (value, ctx). Records are read back with
confluent-kafka; failures are SerializationError at the call, naming the serializer."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.serialization import MessageField, StringSerializer
from readback import read_confluent

from kafkacore import KafkaProducer, errors
from kafkacore.serialization import adapt_serializer, calling_convention


def _topic_style(topic, value):
    return f"{topic}:{value}".encode()


class _ContextRecorder:
    """A confluent-style Serializer that writes the context it was given into the bytes."""

    def __call__(self, obj, ctx=None):
        field = "key" if ctx.field == MessageField.KEY else "value"
        return f"{ctx.topic}/{field}/{obj}".encode()


def test_each_convention_is_recognised_once():
    assert calling_convention(_topic_style) == "topic"
    assert calling_convention(lambda v: v) == "one"
    assert calling_convention(json.dumps) == "one"  # (obj, *, skipkeys=...): one positional
    assert calling_convention(StringSerializer()) == "ctx"
    assert calling_convention(_ContextRecorder()) == "ctx"
    assert calling_convention(str.encode) == "one"
    with pytest.raises(errors.ConfigError, match="cannot be a serializer"):
        calling_convention(lambda a, b, c: None)


@pytest.mark.parametrize("style", ["kafka-python", "ours", "confluent"])
def test_records_go_through_each_style_and_read_back(bootstrap, make_topic, style):
    topic = make_topic(1)
    serializers = {
        "kafka-python": (lambda k: k.encode(), lambda v: json.dumps(v).encode()),
        "ours": (_topic_style, _topic_style),
        "confluent": (StringSerializer("utf_8"), _ContextRecorder()),
    }[style]
    with KafkaProducer({"bootstrap.servers": bootstrap, "key.serializer": serializers[0],
                        "value.serializer": serializers[1]}) as producer:
        producer.send(topic, {"n": 1}, key="k1").get(timeout=30)
    (record,) = read_confluent(bootstrap, topic, 1, 1)
    expected = {
        "kafka-python": (b"k1", b'{"n": 1}'),
        "ours": (f"{topic}:k1".encode(), f"{topic}:{{'n': 1}}".encode()),
        "confluent": (b"k1", f"{topic}/value/{{'n': 1}}".encode()),
    }[style]
    assert (record.key, record.value) == expected


def test_a_failing_serializer_raises_serialization_error_with_its_cause():
    def strict(value):
        raise ValueError("not a number")

    serialize = adapt_serializer(strict, "value")
    with pytest.raises(errors.SerializationError, match="value.serializer .*strict.* failed") as info:
        serialize("t", object())
    assert isinstance(info.value.__cause__, ValueError)


def test_a_serializer_returning_str_is_named_in_the_error():
    serialize = adapt_serializer(lambda v: str(v), "key")
    with pytest.raises(errors.SerializationError, match=r"key.serializer \S*<lambda> returned str, not bytes"):
        serialize("t", 5)


def test_send_raises_at_the_call_and_the_producer_keeps_working(bootstrap, make_topic):
    topic = make_topic(1)

    def picky(value):
        if value == "bad":
            raise KeyError(value)
        return value.encode()

    with KafkaProducer({"bootstrap.servers": bootstrap, "value.serializer": picky}) as producer:
        with pytest.raises(errors.SerializationError) as info:
            producer.send(topic, "bad")
        assert isinstance(info.value.__cause__, KeyError)
        assert producer.send(topic, "good").get(timeout=30).offset == 0
