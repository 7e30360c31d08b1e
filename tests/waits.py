"""Bounded waits the tests share."""

from __future__ import annotations

import time

from kafkacore.errors import KafkaTimeoutError


def wait_for_metadata(producer, topic, bound_s=30.0):
    """With max.block.ms=0 every metadata wait gives up at once; ask until the Sender has it.

    Returns the topic's partitions; raises the last KafkaTimeoutError after ``bound_s``.
    """
    deadline = time.monotonic() + bound_s
    while True:
        try:
            return producer.partitions_for(topic)
        except KafkaTimeoutError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
