"""The producer's metrics: windowed rates and averages, named as the Java producer names them.

Java's metrics keep a few time samples per sensor and report over those; we do the same with two
samples of ``window_s`` seconds each, so a rate reflects the last half-minute or so, not all time.
Recording happens on the Sender thread once per batch or request (never per record), so one lock
for the whole registry costs nothing that matters.
"""

from __future__ import annotations

import threading
import time


class _Window:
    """A running (count, total) over two samples of ``window_s`` seconds."""

    __slots__ = ("count", "total", "max", "start", "prev_count", "prev_total", "prev_start")

    def __init__(self, now: float) -> None:
        self.count = 0
        self.total = 0.0
        self.max = float("-inf")
        self.start = now
        self.prev_count = 0
        self.prev_total = 0.0
        self.prev_start = now

    def roll(self, now: float, window_s: float) -> None:
        if now - self.start >= window_s:
            if now - self.start >= 2 * window_s:  # idle for a long time: both samples are stale
                self.prev_count, self.prev_total, self.prev_start = 0, 0.0, now
            else:
                self.prev_count, self.prev_total = self.count, self.total
                self.prev_start = self.start
            self.count, self.total, self.max, self.start = 0, 0.0, float("-inf"), now


class Metrics:
    """Record values under names; read averages, rates and maxima."""

    def __init__(self, window_s: float = 30.0) -> None:
        self._window_s = window_s
        self._lock = threading.Lock()
        self._windows: dict[str, _Window] = {}
        self._gauges: dict[str, object] = {}
        self._created = time.monotonic()

    def record(self, name: str, value: float = 1.0, count: int = 1) -> None:
        """Add ``count`` occurrences summing to ``value`` to the named series."""
        now = time.monotonic()
        with self._lock:
            w = self._windows.get(name)
            if w is None:
                w = self._windows[name] = _Window(now)
            w.roll(now, self._window_s)
            w.count += count
            w.total += value
            if count == 1 and value > w.max:
                w.max = value

    def gauge(self, name: str, read) -> None:
        """A value read when metrics are asked for (buffer-available-bytes, ...)."""
        self._gauges[name] = read

    def avg(self, name: str) -> float:
        with self._lock:
            w = self._windows.get(name)
            if w is None:
                return 0.0
            w.roll(time.monotonic(), self._window_s)
            count = w.count + w.prev_count
            return (w.total + w.prev_total) / count if count else 0.0

    def rate(self, name: str, of_total: bool = False) -> float:
        """Occurrences (or, with ``of_total``, summed values) per second over the window."""
        now = time.monotonic()
        with self._lock:
            w = self._windows.get(name)
            if w is None:
                return 0.0
            w.roll(now, self._window_s)
            amount = (w.total + w.prev_total) if of_total else (w.count + w.prev_count)
            elapsed = max(now - max(w.prev_start, self._created), 1e-3)
            return amount / elapsed

    def max(self, name: str) -> float:
        with self._lock:
            w = self._windows.get(name)
            return w.max if w is not None and w.count else 0.0

    def gauges(self) -> dict[str, object]:
        return {name: read() for name, read in self._gauges.items()}
