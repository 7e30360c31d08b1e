"""``LogManager``: every partition's ``Log`` under the broker's ``log.dirs`` (Kafka's ``LogManager``).

A partition lives in ``<log dir>/<topic>-<partition>/``.  At shutdown every log is closed and a
``.kafka_cleanshutdown`` marker is written in each log dir; at start-up the marker tells whether
the logs may be trusted (only the active segments are scanned) or must be recovered from their
recovery points (``recovery-point-offset-checkpoint``, written by ``checkpoint_recovery_points``).
"""

from __future__ import annotations

import logging
import os
import re
import threading
import uuid
from pathlib import Path

from kafkacore.broker.log.config import LogConfig
from kafkacore.broker.log.log import Log
from kafkacore.errors import KafkaStorageError

log = logging.getLogger(__name__)

#: Kafka's ``LogLoader.CleanShutdownFileName``
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
#: Kafka's ``LogManager.RecoveryPointCheckpointFile``
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")


class LogManager:
    def __init__(self, log_dirs: list[str | Path], default_config: LogConfig | None = None) -> None:
        if not log_dirs:
            raise KafkaStorageError("log.dirs is empty")
        self.log_dirs = [Path(d) for d in log_dirs]
        self.default_config = default_config or LogConfig()
        self._logs: dict[tuple[str, int], Log] = {}
        self._lock = threading.Lock()
        self._started = False

    def startup(self, topic_configs: dict[str, LogConfig] | None = None) -> None:
        """Open (and recover) every ``topic-partition`` directory found in the log dirs, each
        with its topic's config from ``topic_configs`` (the default config otherwise): topic
        configs live in the cluster's metadata, not in the log dirs."""
        topic_configs = topic_configs or {}
        with self._lock:
            for d in self.log_dirs:
                d.mkdir(parents=True, exist_ok=True)
                marker = d / CLEAN_SHUTDOWN_FILE
                clean = marker.exists()
                recovery_points = _read_checkpoint(d / RECOVERY_POINT_CHECKPOINT)
                for child in sorted(d.iterdir()):
                    m = _PARTITION_DIR.match(child.name)
                    if not child.is_dir() or m is None or child.name.endswith("-delete"):
                        continue
                    key = (m["topic"], int(m["partition"]))
                    if key in self._logs:
                        raise KafkaStorageError(f"{key} is in two log dirs")
                    lg = Log(
                        child,
                        topic_configs.get(key[0], self.default_config),
                        topic=key[0],
                        partition=key[1],
                        had_clean_shutdown=clean,
                        recovery_point=recovery_points.get(key, 0),
                    )
                    if lg.recovered_bytes_truncated:
                        log.warning(
                            "%s: recovery cut %d bytes of torn tail",
                            lg.name,
                            lg.recovered_bytes_truncated,
                        )
                    self._logs[key] = lg
                # The marker is removed once the logs are open: a crash from now on is unclean.
                marker.unlink(missing_ok=True)
            self._started = True

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self._logs.get((topic, partition))

    def get_or_create_log(
        self,
        topic: str,
        partition: int,
        config: LogConfig | None = None,
        topic_id: uuid.UUID | None = None,
    ) -> Log:
        """The partition's log, created (in the log dir with the fewest partitions) if needed;
        ``topic_id`` is written to its ``partition.metadata`` on creation."""
        with self._lock:
            existing = self._logs.get((topic, partition))
            if existing is not None:
                return existing
            # Kafka puts a new partition in the log dir holding the fewest partitions.
            counts = {d: 0 for d in self.log_dirs}
            for lg in self._logs.values():
                if lg.dir.parent in counts:
                    counts[lg.dir.parent] += 1
            target = min(self.log_dirs, key=lambda d: counts[d])
            lg = Log(
                target / f"{topic}-{partition}",
                config or self.default_config,
                topic=topic,
                partition=partition,
                topic_id=topic_id,
            )
            self._logs[(topic, partition)] = lg
            return lg

    def delete_log(self, topic: str, partition: int) -> bool:
        with self._lock:
            lg = self._logs.pop((topic, partition), None)
        if lg is None:
            return False
        lg.delete()
        return True

    def all_logs(self) -> dict[tuple[str, int], Log]:
        return dict(self._logs)

    def cleanup_logs(self, now_ms: int | None = None) -> int:
        """Retention over every log (Kafka's ``LogManager.cleanupLogs``); segments deleted."""
        deleted = 0
        for lg in list(self._logs.values()):
            try:
                deleted += lg.delete_old_segments(now_ms)
                lg.remove_expired_producers(now_ms)
            except KafkaStorageError:
                continue  # deleted or closed meanwhile
        return deleted

    def flush_dirty_logs(self, now_ms: int | None = None) -> int:
        """Kafka's ``flushDirtyLogs``: fsync the logs whose ``flush.ms`` has passed."""
        flushed = 0
        for lg in list(self._logs.values()):
            try:
                flushed += lg.maybe_flush(now_ms)
            except KafkaStorageError:
                continue
        return flushed

    def checkpoint_recovery_points(self) -> None:
        """Write each log dir's ``recovery-point-offset-checkpoint`` (Kafka's
        ``checkpointLogRecoveryOffsets``): after a crash, segments below a log's recovery point
        are trusted instead of scanned.  The broker calls this every
        ``log.flush.offset.checkpoint.interval.ms`` and at shutdown."""
        for d in self.log_dirs:
            points = {
                key: lg.recovery_point for key, lg in self._logs.items() if lg.dir.parent == d
            }
            _write_checkpoint(d / RECOVERY_POINT_CHECKPOINT, points)

    def flush_all(self) -> None:
        for lg in list(self._logs.values()):
            lg.flush()

    def shutdown(self) -> None:
        """Close every log (flush + producer snapshot), then mark the dirs clean."""
        with self._lock:
            for lg in self._logs.values():
                lg.close()
            self.checkpoint_recovery_points()
            self._logs.clear()
            for d in self.log_dirs:
                if d.exists():
                    (d / CLEAN_SHUTDOWN_FILE).touch()


def _read_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    """Kafka's ``OffsetCheckpointFile``: a version line (0), a count, then ``topic partition
    offset`` lines.  A missing or damaged file means: trust nothing, scan everything."""
    try:
        lines = path.read_text().splitlines()
        if len(lines) < 2 or lines[0].strip() != "0" or int(lines[1]) != len(lines) - 2:
            return {}
        out = {}
        for line in lines[2:]:
            topic, partition, offset = line.rsplit(" ", 2)
            out[(topic, int(partition))] = int(offset)
        return out
    except (OSError, ValueError):
        return {}


def _write_checkpoint(path: Path, points: dict[tuple[str, int], int]) -> None:
    lines = ["0", str(len(points))] + [f"{t} {p} {o}" for (t, p), o in sorted(points.items())]
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
