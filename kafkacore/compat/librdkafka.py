"""librdkafka's settings that mean something here, applied to a running producer.

:class:`~kafkacore.config.ProducerConfig` accepts every librdkafka producer setting; the ones
in ``kafkacore.config.LIBRDKAFKA_MAPPED`` land in ``config.librdkafka`` and
:func:`attach` gives them their effect on a :class:`~kafkacore.producer.KafkaProducer`:

* ``statistics.interval.ms`` with ``stats_cb``: every interval, ``stats_cb(json_str)`` with
  librdkafka's statistics document built from the producer's metrics
  (:func:`kafkacore.metrics.librdkafka_stats`);
* ``throttle_cb``: ``throttle_cb(ThrottleEvent)`` for each response a broker throttled;
* ``error_cb``: ``error_cb(KafkaError)`` for each error kafkacore logs that belongs to no
  record (a broker that cannot be reached, a refused login);
* ``debug``: librdkafka's contexts as kafkacore's loggers at DEBUG (:data:`DEBUG_CONTEXTS`);
  ``log_level``: the level of the ``kafkacore`` logger; ``logger``: a ``logging.Logger`` that
  receives kafkacore's log;
* ``socket.keepalive.enable``: SO_KEEPALIVE on every broker connection.

On a KafkaProducer the callbacks run on its I/O (or statistics) thread, as ``send()``'s
callbacks do; :class:`kafkacore.compat.confluent.Producer` serves them from ``poll()``, as
confluent-kafka does.  ``partitioner`` is read by the config itself (:data:`PARTITIONERS`).
"""

from __future__ import annotations

import json
import logging
import random
import threading
import weakref
import zlib
from collections.abc import Callable
from typing import Any

from kafkacore.compat.kafka_error import KafkaError
from kafkacore.metrics import librdkafka_stats

#: librdkafka's debug contexts, and the kafkacore loggers each one turns to DEBUG; none for a
#: consumer's or a feature's context, with nothing to log in a producer.
DEBUG_CONTEXTS: dict[str, tuple[str, ...]] = {
    "all": ("kafkacore",),
    "generic": ("kafkacore.producer",),
    "broker": ("kafkacore.network",),
    "topic": ("kafkacore.metadata",),
    "metadata": ("kafkacore.metadata", "kafkacore.admin"),
    "feature": ("kafkacore.network.connection",),
    "queue": ("kafkacore.accumulator",),
    "msg": ("kafkacore.sender", "kafkacore.accumulator"),
    "protocol": ("kafkacore.network", "kafkacore.protocol"),
    "cgrp": (),
    "security": ("kafkacore.network.sasl", "kafkacore.network.tls"),
    "fetch": (),
    "interceptor": ("kafkacore.producer",),
    "plugin": (),
    "consumer": (),
    "admin": ("kafkacore.admin",),
    "eos": ("kafkacore.transaction_manager", "kafkacore.sender"),
    "mock": (),
    "assignor": (),
    "conf": ("kafkacore.config",),
    "telemetry": (),
    "share": (),
}


def _random(topic: str, key: bytes | None, value: Any, n: int, available: Any) -> int:
    return random.randrange(n)


def _crc32(key: bytes | None) -> int:
    return zlib.crc32(key or b"")


def _fnv1a(key: bytes | None) -> int:
    h = 0x811C9DC5  # FNV-1a, 32 bits: offset basis, then xor and multiply by the prime
    for byte in key or b"":
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def _murmur2(key: bytes | None) -> int:
    from kafkacore.core.murmur2 import murmur2

    return murmur2(key or b"") & 0x7FFFFFFF


def _hashing(hash_: Callable[[bytes | None], int], null_random: bool,
             empty_random: bool = False) -> Callable[..., int]:
    def partition(topic: str, key: bytes | None, value: Any, n: int, available: Any) -> int:
        if (key is None and null_random) or (empty_random and not key):
            return random.randrange(n)
        return hash_(key) % n

    partition.__qualname__ = partition.__name__ = f"librdkafka_{hash_.__name__.strip('_')}"
    return partition


#: librdkafka's ``partitioner`` values as our ``partitioner.class``.  ``murmur2_random`` is
#: None, our own partitioner: murmur2 for keys as Java and librdkafka hash them, and keyless
#: records spread over partitions (sticky batches rather than one random pick per record).
#: librdkafka's default is ``consistent_random``; ours is murmur2, so give
#: ``partitioner=consistent_random`` to keep the partitions a librdkafka producer chose.
PARTITIONERS: dict[str, Callable[..., int] | None] = {
    "random": _random,
    "consistent": _hashing(_crc32, null_random=False),
    "consistent_random": _hashing(_crc32, null_random=True, empty_random=True),
    "murmur2": _hashing(_murmur2, null_random=False),
    "murmur2_random": None,
    "fnv1a": _hashing(_fnv1a, null_random=False),
    "fnv1a_random": _hashing(_fnv1a, null_random=True),
}


class ThrottleEvent:
    """What ``throttle_cb`` receives (confluent-kafka's ``ThrottleEvent``): the broker and how
    long it delayed its answer, in seconds."""

    def __init__(self, broker_name: str, broker_id: int, throttle_time: float) -> None:
        self.broker_name, self.broker_id, self.throttle_time = (
            broker_name, broker_id, throttle_time)

    def __str__(self) -> str:
        return (f"{self.broker_name}/{self.broker_id} throttled for "
                f"{int(self.throttle_time * 1000)} ms")

    __repr__ = __str__


class _Forward(logging.Handler):
    """kafkacore's log to a user's logger, and its errors to error_cb."""

    def __init__(self, logger: Any, error_cb: Callable[[Any], object] | None) -> None:
        super().__init__()
        self.logger, self.error_cb = logger, error_cb

    def emit(self, record: logging.LogRecord) -> None:
        if self.logger is not None:
            handle = getattr(self.logger, "handle", None)
            if handle is not None:
                handle(record)
            else:  # confluent's AsyncLogger has log() only
                self.logger.log(record.levelno, record.getMessage())
        if self.error_cb is not None and record.levelno >= logging.ERROR:
            try:
                self.error_cb(KafkaError(KafkaError._FAIL, record.getMessage()))
            except Exception:  # a callback's failure must not turn into more log records
                pass


class Attached:
    """What :func:`attach` started for one producer; :meth:`close` stops it."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._handler: logging.Handler | None = None

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(5)
        if self._handler is not None:
            logging.getLogger("kafkacore").removeHandler(self._handler)
            self._handler = None


def apply_logging(settings: dict[str, Any]) -> None:
    """``debug`` and ``log_level``: levels of kafkacore's loggers (they are process-wide, as
    the ``logging`` module's are).  With ``debug`` and no handler configured anywhere, a
    stderr handler is added, as librdkafka prints its debug lines to stderr."""
    root = logging.getLogger("kafkacore")
    if "log_level" in settings:
        level = settings["log_level"]
        root.setLevel(logging.DEBUG if level >= 7 else logging.INFO if level == 6 else
                      logging.WARNING if level >= 4 else logging.ERROR if level == 3 else
                      logging.CRITICAL)
    contexts = settings.get("debug", ())
    for context in contexts:
        for name in DEBUG_CONTEXTS[context]:
            logging.getLogger(name).setLevel(logging.DEBUG)
    if contexts and not root.hasHandlers():
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        root.addHandler(handler)


def attach(producer: Any, settings: dict[str, Any] | None = None) -> Attached:
    """Give ``settings`` (default: ``producer.config.librdkafka``) their effect on a running
    KafkaProducer; the result's ``close()`` stops what was started."""
    settings = producer.config.librdkafka if settings is None else settings
    attached = Attached()
    if not settings:
        return attached
    apply_logging(settings)
    client = producer._client
    if settings.get("socket.keepalive.enable"):
        client.socket_keepalive = True
    throttle_cb = settings.get("throttle_cb")
    if throttle_cb is not None or settings.get("stats_cb") is not None:
        def throttled(node_id: int, address: str, throttle_ms: int) -> None:
            producer._metrics.record("produce-throttle-time", throttle_ms)
            if throttle_cb is not None:
                throttle_cb(ThrottleEvent(address, node_id, throttle_ms / 1000))

        client.throttle_listener = throttled
    if settings.get("logger") is not None or settings.get("error_cb") is not None:
        attached._handler = _Forward(settings.get("logger"), settings.get("error_cb"))
        logging.getLogger("kafkacore").addHandler(attached._handler)
    stats_cb, interval_ms = settings.get("stats_cb"), settings.get("statistics.interval.ms", 0)
    if stats_cb is not None and interval_ms > 0:
        attached._thread = threading.Thread(  # a weak reference: it must not keep it alive
            target=_emit_stats,
            args=(weakref.ref(producer), stats_cb, interval_ms / 1000, attached._stop),
            name=f"kafkacore-stats | {producer.client_id}", daemon=True)
        attached._thread.start()
    return attached


def _emit_stats(producer_ref: weakref.ref[Any], stats_cb: Callable[[str], object],
                interval_s: float, stop: threading.Event) -> None:
    log = logging.getLogger("kafkacore.metrics")
    while not stop.wait(interval_s):
        producer = producer_ref()
        if producer is None or producer._closed:
            return
        try:
            text = json.dumps(librdkafka_stats(producer))
            del producer
            stats_cb(text)
        except Exception:
            log.exception("stats_cb failed")


__all__ = ["DEBUG_CONTEXTS", "PARTITIONERS", "Attached", "ThrottleEvent", "apply_logging",
           "attach"]
