"""The broker's timer: hierarchical timing wheels whose buckets sit in a delay queue.

Kafka's ``org.apache.kafka.server.util.timer`` package: ``TimerTask`` (what runs),
``TimerTaskEntry`` (its place in a bucket, removable in O(1)), ``TimerTaskList`` (a bucket: a
doubly linked list with a sentinel and one expiration), ``TimingWheel`` (``tick_ms`` x
``wheel_size`` buckets, and an overflow wheel made on demand whose tick is this wheel's interval),
``DelayQueue`` (the buckets, ordered by expiration) and ``SystemTimer`` (``add``,
``advance_clock``).  They run once per delayed operation, so they are compiled
(``kafkacore/core/timer.pyx``); this module is where the broker takes them from.

Why buckets and not tasks in the delay queue: adding and cancelling a task is O(1) (link or unlink
it in a bucket); the queue only orders the buckets, of which there are at most ``wheel_size`` per
wheel, however many tasks are outstanding.  A task cancelled before its deadline (the common case
in the purgatory) is simply unlinked, and never costs anything again.  See
``docs/broker/timing_wheel.rst``.
"""

from kafkacore.core.timer import (
    DelayQueue,
    SystemTimer,
    TaskCounter,
    TimerTask,
    TimerTaskEntry,
    TimerTaskList,
    TimingWheel,
    hi_res_clock_ms,
)

__all__ = [
    "DelayQueue",
    "SystemTimer",
    "TaskCounter",
    "TimerTask",
    "TimerTaskEntry",
    "TimerTaskList",
    "TimingWheel",
    "hi_res_clock_ms",
]
