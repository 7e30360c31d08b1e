"""Faults a test injects into a running broker on purpose (see docs/broker/faults.rst).

librdkafka's mock cluster is the model: answer the next requests of an API with chosen errors,
slow a broker down, or cut it off from everyone without killing it.  The :class:`Broker` owns one
:class:`FaultInjector`; the reactor, the APIs and the inter-broker clients consult it.
"""

from __future__ import annotations

import threading


class FaultInjector:
    """The faults switched on in one broker; all methods are thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: True while the broker is cut from clients and peers (``isolate``/``heal``): it refuses
        #: and closes client connections, and its own connections to peers and the controller
        #: (replica fetchers, heartbeats) are closed and not re-opened until healed.
        self.isolated = False
        #: Extra delay, in milliseconds, before each response is sent.
        self.latency_ms = 0

    def isolate(self) -> None:
        with self._lock:
            self.isolated = True

    def heal(self) -> None:
        with self._lock:
            self.isolated = False

    def set_latency(self, ms: int) -> None:
        if ms < 0:
            raise ValueError(f"latency must be >= 0 ms, got {ms}")
        with self._lock:
            self.latency_ms = ms
