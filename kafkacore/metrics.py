"""The producer's metrics: windowed rates and averages, named as the Java producer names them.

Java's metrics keep a few time samples per sensor and report over those; we do the same with two
samples of ``window_s`` seconds each, so a rate reflects the last half-minute or so, not all time.
Recording happens on the Sender thread once per batch or request (never per record), so one lock
for the whole registry costs nothing that matters.
"""

from __future__ import annotations

import threading
import time
from typing import Any


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
        # name -> [count, total] since the start (librdkafka's statistics are cumulative).
        self._totals: dict[str, list[float]] = {}

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
            t = self._totals.get(name)
            if t is None:
                t = self._totals[name] = [0, 0.0]
            t[0] += count
            t[1] += value
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

    def total(self, name: str) -> tuple[int, float]:
        """(occurrences, summed values) since the start."""
        with self._lock:
            t = self._totals.get(name)
            return (int(t[0]), t[1]) if t is not None else (0, 0.0)


def _window_stats(metrics: Metrics, name: str) -> dict[str, int]:
    """librdkafka's window object (``rtt``, ``int_latency``...) in microseconds, from one of
    our millisecond series; percentiles are not kept here, so they read as the average."""
    count, total = metrics.total(name)
    avg = int(metrics.avg(name) * 1000)
    top = int(metrics.max(name) * 1000)
    return {"min": 0, "max": top, "avg": avg, "sum": int(total * 1000), "cnt": count,
            "stddev": 0, "hdrsize": 0, "p50": avg, "p75": avg, "p90": avg, "p95": avg,
            "p99": avg, "p99_99": avg, "outofrange": 0}


def librdkafka_stats(producer: Any) -> dict[str, Any]:
    """librdkafka's statistics document (its STATISTICS.md, producer's fields) for a
    :class:`~kafkacore.producer.KafkaProducer`, from its metrics: what ``stats_cb``
    receives, as JSON, every ``statistics.interval.ms``.  Figures kafkacore does not keep
    (per-broker byte counts, consumer fields) are 0."""
    m: Metrics = producer._metrics
    now = time.monotonic()
    cfg = producer.config
    pool = producer._pool
    used = cfg["buffer.memory"] - int(pool.available_memory())
    records, _ = producer._accumulator.undelivered_record_counts()
    cluster = producer._metadata.cluster
    connections = getattr(producer._client, "_connections", {})
    sent, _ = m.total("record-send")
    requests, _ = m.total("request-latency")
    _, sent_bytes = m.total("batch-size")
    brokers = {}
    for node in cluster.nodes:
        conn = connections.get(node.node_id)
        name = f"{node.host}:{node.port}/{node.node_id}"
        brokers[name] = {
            "name": name, "nodeid": node.node_id, "nodename": f"{node.host}:{node.port}",
            "source": "learned",
            "state": "UP" if conn is not None and conn.ready else "INIT",
            "stateage": 0, "outbuf_cnt": 0, "outbuf_msg_cnt": 0,
            "waitresp_cnt": len(conn.in_flight) if conn is not None else 0,
            "waitresp_msg_cnt": 0, "tx": 0, "txbytes": 0, "txerrs": 0, "txretries": 0,
            "txidle": -1, "req_timeouts": 0, "rx": 0, "rxbytes": 0, "rxerrs": 0,
            "rxcorriderrs": 0, "rxpartial": 0, "rxidle": -1, "zbuf_grow": 0, "buf_grow": 0,
            "wakeups": 0, "connects": 0, "disconnects": 0, "req": {},
            "int_latency": _window_stats(m, "record-queue-time"),
            "outbuf_latency": _window_stats(m, "none"),
            "rtt": _window_stats(m, "request-latency"),
            "throttle": _window_stats(m, "produce-throttle-time"),
            "toppars": {f"{tp.topic}-{tp.partition}": {"topic": tp.topic,
                                                       "partition": tp.partition}
                        for tp in cluster.partitions_for_node(node.node_id)},
        }
    topics = {}
    for topic in sorted(cluster.topics):
        partitions = {
            str(p.partition): {"partition": p.partition,
                               "broker": -1 if p.leader is None else p.leader,
                               "leader": -1 if p.leader is None else p.leader,
                               "desired": True, "unknown": False, "msgq_cnt": 0,
                               "msgq_bytes": 0, "xmit_msgq_cnt": 0, "xmit_msgq_bytes": 0,
                               "txmsgs": 0, "txbytes": 0, "msgs": 0, "msgs_inflight": 0}
            for p in cluster.partitions_for_topic(topic)}
        topics[topic] = {"topic": topic, "age": 0, "metadata_age": 0,
                         "batchsize": _window_stats(m, "batch-size"),
                         "batchcnt": _window_stats(m, "records-per-request"),
                         "partitions": partitions}
    doc: dict[str, Any] = {
        "name": f"{producer.client_id}#producer", "client_id": producer.client_id,
        "type": "producer", "ts": int(now * 1_000_000), "time": int(time.time()),
        "age": int((now - m._created) * 1_000_000), "replyq": 0,
        "msg_cnt": records, "msg_size": used, "msg_max": 0,
        "msg_size_max": cfg["buffer.memory"], "simple_cnt": 0,
        "metadata_cache_cnt": len(cluster.topics), "brokers": brokers, "topics": topics,
        "tx": requests, "tx_bytes": int(sent_bytes), "rx": requests, "rx_bytes": 0,
        "txmsgs": sent, "txmsg_bytes": int(sent_bytes), "rxmsgs": 0, "rxmsg_bytes": 0,
    }
    tm = producer._transaction_manager
    if tm is not None:
        state = getattr(getattr(tm, "state", None), "name", "READY")
        doc["eos"] = {"idemp_state": "Assigned" if tm.has_producer_id() else "RequestPID",
                      "idemp_stateage": 0, "txn_state": state, "txn_stateage": 0,
                      "txn_may_enq": tm.transactional_id is None or state == "IN_TRANSACTION",
                      "producer_id": tm.producer_id, "producer_epoch": tm.producer_epoch,
                      "epoch_cnt": 0}
    return doc
