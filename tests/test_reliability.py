"""The producer under faults (issue 11): each test reproduces a failure a user met."""

from __future__ import annotations

import pytest

from kafkacore import KafkaProducer
from kafkacore.errors import InvalidTopicError

pytestmark = pytest.mark.broker


# -- a topic name that cannot be sent must not poison metadata for the others ----------------

BAD_TOPICS = [
    "bad\udcfftopic",  # a lone surrogate: cannot be encoded as UTF-8
    "bad topic",  # illegal character (Kafka allows [a-zA-Z0-9._-])
    "x" * 250,  # longer than Kafka's 249
    ".",
    "..",
]


@pytest.mark.parametrize("bad", BAD_TOPICS, ids=["surrogate", "space", "too-long", "dot", "dotdot"])
def test_an_illegal_topic_is_refused_at_send_and_others_still_work(bootstrap, make_topic, bad):
    good = make_topic(partitions=1)
    with KafkaProducer(bootstrap_servers=bootstrap, max_block_ms=10_000) as producer:
        with pytest.raises(InvalidTopicError):
            producer.send(bad, b"v")
        with pytest.raises(InvalidTopicError):
            producer.send_batch(bad, [b"v"])
        # Metadata for a topic we have not used yet still arrives.
        assert producer.send(good, b"ok").get(timeout=30).offset == 0
