"""``BrokerHeartbeatManager``: when each broker was last heard from, and who is fenced."""

from __future__ import annotations

import time


def _now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class BrokerHeartbeatManager:
    """Last contact per broker; who is fenced (Kafka's ``BrokerHeartbeatManager``)."""

    def __init__(self, session_timeout_ms: int) -> None:
        self.session_timeout_ms = session_timeout_ms
        self.last_contact_ms: dict[int, int] = {}
        self.fenced: set[int] = set()

    def touch(self, broker_id: int) -> None:
        self.last_contact_ms[broker_id] = _now_ms()

    def expired(self) -> list[int]:
        """Unfenced brokers whose session has lapsed."""
        now = _now_ms()
        return [b for b, t in self.last_contact_ms.items()
                if b not in self.fenced and now - t > self.session_timeout_ms]

    def has_valid_session(self, broker_id: int) -> bool:
        """Unfenced and heard from within the session timeout (Kafka's ``hasValidSession``):
        the fencer may not have noticed a lapse yet, this does."""
        last = self.last_contact_ms.get(broker_id)
        return last is not None and broker_id not in self.fenced \
            and _now_ms() - last <= self.session_timeout_ms

    def is_active(self, broker_id: int) -> bool:
        return broker_id in self.last_contact_ms and broker_id not in self.fenced
