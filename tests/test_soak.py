"""Soak (issue 11, part 2): producers created and closed by the thousand leave nothing behind.

The ten-million-record memory soak is ``benchmarks/soak_producer.py`` (figures in
``benchmarks/results/soak.json``); this test is the part that fits in the suite.
"""

from __future__ import annotations

import gc
import os
import threading

import pytest

from kafkacore import KafkaProducer
from kafkacore.sender import Sender


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def senders_alive() -> int:
    return sum(1 for o in gc.get_objects() if isinstance(o, Sender))


def cycle(bootstrap: str, topic: str, n: int) -> None:
    for i in range(n):
        producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
        if i % 10 == 0:  # some send (pool, connections to the leader), all close
            producer.send(topic, b"record %d" % i).get(timeout=30)
        producer.close(10)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
@pytest.mark.timeout(600)
def test_a_thousand_producers_leave_no_threads_fds_or_memory(bootstrap, make_topic):
    topic = make_topic(partitions=3)
    cycle(bootstrap, topic, 100)  # warm-up: imports, caches, the allocator's arenas
    gc.collect()
    # Other tests of the session may keep a producer of their own alive: count from here.
    threads, fds, rss = threading.active_count(), open_fds(), rss_bytes()
    senders = senders_alive()
    cycle(bootstrap, topic, 900)
    gc.collect()
    assert threading.active_count() == threads, [t.name for t in threading.enumerate()]
    # A leak would be one descriptor (or more) per producer: hundreds.  A couple of slack for the
    # test session's own descriptors (logging, the broker fixture).
    assert open_fds() - fds <= 2, os.listdir("/proc/self/fd")
    assert senders_alive() == senders
    grown = rss_bytes() - rss
    assert grown < 0.10 * rss, f"RSS grew {grown / 2**20:.1f} MiB over 900 producers"
