"""Bounded waits the tests share: a test that waits polls for the state it waits for, with a
bound, and fails naming what did not happen (TESTING.md)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from kafkacore.errors import KafkaTimeoutError

T = TypeVar("T")


def wait_until(predicate: Callable[[], T], what: str, bound_s: float = 30.0,
               step_s: float = 0.01) -> T:
    """Call ``predicate`` until it returns something true, and return that; fail the test with
    ``what`` if it has not after ``bound_s`` seconds."""
    deadline = time.monotonic() + bound_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {bound_s} s: {what}")
        time.sleep(step_s)


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
