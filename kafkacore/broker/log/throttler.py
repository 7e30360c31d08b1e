"""``Throttler``: hold a thread back to a rate of bytes per second (Kafka's ``Throttler``).

The cleaner threads share one, set to ``log.cleaner.io.max.bytes.per.second``: each reports the
bytes it read and wrote, and sleeps when the bytes since the last check came faster than the
rate allows.  Kafka's default rate is ``Double.MAX_VALUE``: no throttling at all.
"""

from __future__ import annotations

import threading
import time

#: Kafka checks the rate at most this often (``Throttler``'s ``checkIntervalMs``)
CHECK_INTERVAL_S = 0.1


class Throttler:
    def __init__(self, desired_rate_per_s: float, *, check_interval_s: float = CHECK_INTERVAL_S,
                 stop: threading.Event | None = None) -> None:
        self.desired_rate_per_s = desired_rate_per_s
        self.check_interval_s = check_interval_s
        #: set at shutdown: a throttled thread stops sleeping at once
        self._stop = stop or threading.Event()
        # Lock order: leaf. Guards the period's start and bytes observed.
        self._lock = threading.Lock()
        self._period_start = time.monotonic()
        self._observed = 0.0
        #: seconds spent sleeping, all threads together
        self.throttled_s = 0.0

    def maybe_throttle(self, observed: float) -> None:
        """Count ``observed`` bytes; sleep if they came faster than the desired rate."""
        sleep_s = 0.0
        with self._lock:
            self._observed += observed
            now = time.monotonic()
            elapsed = now - self._period_start
            # How long the bytes of this period take at the desired rate; ahead by a check
            # interval (or at the end of one), sleep until they fit it.
            behind = self._observed / self.desired_rate_per_s - elapsed
            if behind >= self.check_interval_s or elapsed >= self.check_interval_s:
                sleep_s = max(behind, 0.0)
                self._period_start = now + sleep_s
                self._observed = 0.0
        if sleep_s > 0:
            self.throttled_s += sleep_s
            self._stop.wait(sleep_s)
