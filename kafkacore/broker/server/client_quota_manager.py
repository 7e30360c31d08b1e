"""``ClientQuotaManager``: byte-rate quotas on producers and consumers (KIP-13, KIP-219).

Each client the quota applies to has a **sensor**: a rate over ``quota.window.num`` windows of
``quota.window.size.seconds`` each (Kafka's ``Rate`` over a ``SampledStat``).  A request's bytes
are recorded; when the rate is over the quota bound, the client is throttled for the time that
brings it back to the bound:

    throttle = (rate - bound) / bound * window span

The answer goes back at once with that ``throttle_time_ms``, and the broker reads nothing more
from the connection until the time is over (the processor mutes it, KIP-219): a client that
ignores the hint is held back all the same.  The throttle time is bounded by the sensor's whole
span, so a muted connection always comes back.  See docs/broker/admin.rst.
"""

from __future__ import annotations

import collections
import threading
import time
from typing import Any

from kafkacore.broker.metadata.client_quota_control_manager import CLIENT_ID, USER, Entity

#: Kafka's ``quota.window.num`` and ``quota.window.size.seconds`` (their defaults)
QUOTA_WINDOW_NUM = 11
QUOTA_WINDOW_SIZE_SECONDS = 1
#: a client's sensor idle this long is dropped (Kafka's quota sensors expire after an hour)
SENSOR_EXPIRATION_S = 3600.0
#: at most this many sensors per manager: a client that makes up client ids cannot grow the
#: table without end (the least recently used sensor goes first)
MAX_SENSORS = 100_000


class Rate:
    """Bytes per second over the last ``samples`` windows of ``window_ms`` (Kafka's ``Rate``
    over a ``SampledStat``).

    A sample is a window's start and the bytes recorded in it; a sample older than the whole
    span is dropped.  The elapsed time counts at least ``samples - 1`` whole windows, so a new
    sensor does not read a first burst as an enormous rate (Kafka's ``Rate.windowSize``).
    """

    def __init__(self, samples: int, window_ms: int) -> None:
        self.samples = samples
        self.window_ms = window_ms
        #: [window start in ms, bytes], oldest first; at most ``samples`` of them
        self._samples: collections.deque[list[float]] = collections.deque(maxlen=samples)

    def _purge(self, now_ms: float) -> None:
        span = self.samples * self.window_ms
        while self._samples and now_ms - self._samples[0][0] >= span:
            self._samples.popleft()

    def record(self, value: float, now_ms: float) -> None:
        self._purge(now_ms)
        if not self._samples or now_ms >= self._samples[-1][0] + self.window_ms:
            self._samples.append([now_ms, 0.0])
        self._samples[-1][1] += value

    def window_size_ms(self, now_ms: float) -> float:
        self._purge(now_ms)
        elapsed = now_ms - self._samples[0][0] if self._samples else 0.0
        full = int(elapsed // self.window_ms)
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return elapsed

    def measure(self, now_ms: float) -> float:
        """Bytes per second."""
        size_ms = self.window_size_ms(now_ms)
        return sum(v for _, v in self._samples) / (size_ms / 1000.0)


def _candidates(user: str, client_id: str) -> list[tuple[Entity, tuple[str, str]]]:
    """The entities that may hold a client's quota, most specific first (Kafka's default quota
    callback), each with the sensor key it shares: a default entity gives each user or client id
    its own sensor."""
    return [
        (((CLIENT_ID, client_id), (USER, user)), (user, client_id)),
        (((CLIENT_ID, None), (USER, user)), (user, client_id)),
        (((USER, user),), (user, "")),
        (((CLIENT_ID, client_id), (USER, None)), (user, client_id)),
        (((CLIENT_ID, None), (USER, None)), (user, client_id)),
        (((USER, None),), (user, "")),
        (((CLIENT_ID, client_id),), ("", client_id)),
        (((CLIENT_ID, None),), ("", client_id)),
    ]


class ClientQuotaManager:
    """One quota type's bounds and sensors (``producer_byte_rate`` for Produce,
    ``consumer_byte_rate`` for a consumer's Fetch).  Thread-safe: every handler thread records."""

    def __init__(self, quota_key: str, window_num: int = QUOTA_WINDOW_NUM,
                 window_size_s: int = QUOTA_WINDOW_SIZE_SECONDS) -> None:
        self.quota_key = quota_key
        self.window_num = window_num
        self.window_ms = window_size_s * 1000
        #: the longest throttle: the sensor's whole span
        self.max_throttle_time_ms = window_num * self.window_ms
        # Lock order: leaf. Guards the quota bounds and the sensors.
        self._lock = threading.Lock()
        self._bounds: dict[Entity, float] = {}
        #: sensor key (user, client id) -> [its rate, when last recorded (ms)], least
        #: recently recorded first
        self._sensors: collections.OrderedDict[tuple[str, str], list[Any]] = \
            collections.OrderedDict()

    def update_quotas(self, quotas: dict[Entity, dict[str, float]]) -> None:
        """The bounds of this manager's key, from every entity's quotas (replaces them all)."""
        bounds = {e: v[self.quota_key] for e, v in quotas.items() if self.quota_key in v}
        with self._lock:
            self._bounds = bounds

    def quota(self, user: str, client_id: str) -> tuple[tuple[str, str], float] | None:
        """(sensor key, bound) of the quota that applies, None if none does."""
        bounds = self._bounds
        if not bounds:
            return None
        for entity, key in _candidates(user, client_id):
            bound = bounds.get(entity)
            if bound is not None:
                return key, bound
        return None

    def record_request(self, principal: str, client_id: str, value: int) -> int:
        """A request's ``value`` bytes against its client's quota; its throttle time.  While
        no quota of this type is set (the common case, on every Produce and Fetch), 0 at once:
        nothing is recorded, and the principal's user is not even worked out."""
        if not self._bounds:
            return 0
        return self.record_and_get_throttle_time_ms(principal_user(principal), client_id, value)

    def record_and_get_throttle_time_ms(self, user: str, client_id: str, value: int,
                                        now_ms: float | None = None) -> int:
        """Record ``value`` bytes; the throttle time if the client is now over its quota (Kafka's
        ``maybeRecordAndGetThrottleTimeMs``)."""
        found = self.quota(user, client_id)
        if found is None:
            return 0
        key, bound = found
        now_ms = time.monotonic() * 1000 if now_ms is None else now_ms
        with self._lock:
            sensor = self._sensor(key, now_ms)
            rate: Rate = sensor[0]
            rate.record(value, now_ms)
            observed = rate.measure(now_ms)
            if observed <= bound:
                return 0
            if bound <= 0:
                return self.max_throttle_time_ms
            throttle = (observed - bound) / bound * rate.window_size_ms(now_ms)
            return min(int(round(throttle)), self.max_throttle_time_ms)

    def rate(self, user: str, client_id: str) -> float | None:
        """The client's measured rate in bytes per second (its quota metric), None if no quota
        applies or it recorded nothing yet."""
        found = self.quota(user, client_id)
        if found is None:
            return None
        with self._lock:
            sensor = self._sensors.get(found[0])
            return None if sensor is None else sensor[0].measure(time.monotonic() * 1000)

    def _sensor(self, key: tuple[str, str], now_ms: float) -> list[Any]:
        """The client's sensor, made if need be; idle ones dropped, the table bounded."""
        sensors = self._sensors
        sensor = sensors.get(key)
        if sensor is None:
            sensor = sensors[key] = [Rate(self.window_num, self.window_ms), now_ms]
        sensor[1] = now_ms
        sensors.move_to_end(key)
        while len(sensors) > MAX_SENSORS or \
                now_ms - next(iter(sensors.values()))[1] > SENSOR_EXPIRATION_S * 1000:
            sensors.popitem(last=False)
        return sensor


def principal_user(principal: str) -> str:
    """The user of a ``User:<name>`` principal (the name quotas know it by)."""
    return principal.split(":", 1)[1] if ":" in principal else principal


class QuotaManagers:
    """The broker's quota managers (Kafka's ``QuotaFactory.QuotaManagers``): Produce's and
    Fetch's.  ``request_percentage`` is kept and described, but not enforced."""

    def __init__(self, window_num: int = QUOTA_WINDOW_NUM,
                 window_size_s: int = QUOTA_WINDOW_SIZE_SECONDS) -> None:
        self.produce = ClientQuotaManager("producer_byte_rate", window_num, window_size_s)
        self.fetch = ClientQuotaManager("consumer_byte_rate", window_num, window_size_s)

    def update(self, quotas: dict[Entity, dict[str, float]]) -> None:
        """Every entity's quotas, as the metadata now has them."""
        self.produce.update_quotas(quotas)
        self.fetch.update_quotas(quotas)


__all__ = ["QUOTA_WINDOW_NUM", "QUOTA_WINDOW_SIZE_SECONDS", "ClientQuotaManager", "QuotaManagers",
           "Rate", "principal_user"]
