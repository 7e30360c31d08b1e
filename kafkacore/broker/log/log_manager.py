"""``LogManager``: every partition's ``Log`` under the broker's ``log.dirs`` (Kafka's ``LogManager``).

A partition lives in ``<log dir>/<topic>-<partition>/``.  At shutdown every log is closed and a
``.kafka_cleanshutdown`` marker is written in each log dir; at start-up the marker tells whether
the logs may be trusted (only the active segments are scanned) or must be recovered from their
recovery points (``recovery-point-offset-checkpoint``, written by ``checkpoint_recovery_points``).

With a :class:`~kafkacore.broker.server_common.kafka_scheduler.KafkaScheduler`, ``startup`` schedules the
periodic work as Kafka's ``LogManager.startup`` does: retention (``kafka-log-retention``, every
``log.retention.check.interval.ms``), the ``flush.ms`` check (``kafka-log-flusher``, every
``log.flush.scheduler.interval.ms``), the recovery-point and log-start-offset checkpoints
(``kafka-recovery-point-checkpoint``, ``kafka-log-start-offset-checkpoint``), producer-id expiry
(``PeriodicProducerExpirationCheck``) and, ours, the probe that brings an offline log dir back.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkacore.broker.log.cleaner_config import CleanerConfig
from kafkacore.broker.log.dir_failure_channel import LogDirFailureChannel
from kafkacore.broker.log.log import Log
from kafkacore.broker.log.log_cleaner import LogCleaner
from kafkacore.broker.log.log_config import LONG_MAX, LogConfig
from kafkacore.broker.log.offset_checkpoint_file import OffsetCheckpointFile
from kafkacore.broker.server_common.files import fsync_directory
from kafkacore.errors import KafkaStorageError

log = logging.getLogger(__name__)

#: Kafka's ``LogLoader.CleanShutdownFileName``
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
#: Kafka's ``LogManager.RecoveryPointCheckpointFile``
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
#: Kafka's ``LogManager.LogStartOffsetCheckpointFile``
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
#: what the offline-dir probe writes and removes (``log.dir.failure.probe.interval.ms``)
PROBE_FILE = ".kafkacore_probe"
PROBE_BYTES = 64 * 1024
#: how long the fsync of a log dir that got new partition directories waits for more of them:
#: one fsync for every log a CreateTopics of a hundred topics creates, not one per few logs
#: (the fsync takes milliseconds, a log's creation less than one)
LOG_DIR_FLUSH_DELAY_MS = 100
#: threads creating a batch of new logs side by side (the file system works, they wait)
LOG_CREATION_THREADS = 4
#: a log wanted by ``get_or_create_logs``: (topic, partition, config or None for the default,
#: topic id or None)
NewLog = tuple[str, int, LogConfig | None, uuid.UUID | None]


@dataclass(frozen=True)
class LogManagerIntervals:
    """The periods of the log tasks, by Kafka's broker settings, with Kafka's defaults."""

    #: ``log.retention.check.interval.ms``: delete segments past retention this often
    retention_check_ms: int = 300_000
    #: ``log.flush.scheduler.interval.ms``: check each log's ``flush.ms`` this often (never)
    flush_check_ms: int = LONG_MAX
    #: ``log.flush.offset.checkpoint.interval.ms``: write the recovery points this often
    flush_recovery_offset_checkpoint_ms: int = 60_000
    #: ``log.flush.start.offset.checkpoint.interval.ms``: write the log start offsets
    flush_start_offset_checkpoint_ms: int = 60_000
    #: ``producer.id.expiration.check.interval.ms``: forget idle producers this often
    producer_id_expiration_check_ms: int = 600_000
    #: ``log.initial.task.delay.ms``: the first retention and flush checks wait this long
    initial_task_delay_ms: int = 30_000
    #: ``log.dir.failure.probe.interval.ms`` (ours: Kafka never brings a dir back)
    dir_probe_ms: int = 1_000
#: descriptors a log is counted for: its active segment's file, and one more for a segment
#: being rolled or cleaned
DESCRIPTORS_PER_LOG = 2
#: descriptors no log may take (connections, checkpoints, the metadata log, shutdown's own
#: files): a quarter of the process's limit, and at least this many
MIN_RESERVED_DESCRIPTORS = 256


def raise_descriptor_limit() -> None:
    """Raise this process's soft descriptor limit to its hard one, as far as the OS allows
    (what an operator's ``ulimit -n`` would do): the logs' budget is what the limit leaves."""
    try:
        import resource
    except ImportError:  # not a POSIX system
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):
            pass


def log_budget() -> int:
    """How many logs this process may hold: its descriptor limit now, less a reserve, over
    ``DESCRIPTORS_PER_LOG``.  A request that would take the broker past it is refused, so no
    request can spend the descriptors the broker needs to serve, and to stop."""
    try:
        import resource
    except ImportError:  # not a POSIX system: no limit to read
        return 1 << 30
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 1 << 30
    reserved = max(MIN_RESERVED_DESCRIPTORS, soft // 4)
    return max(0, (soft - reserved) // DESCRIPTORS_PER_LOG)


_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")


class LogManager:
    def __init__(self, log_dirs: list[str | Path], default_config: LogConfig | None = None,
                 *, scheduler: Any = None, intervals: LogManagerIntervals | None = None,
                 cleaner_config: CleanerConfig | None = None) -> None:
        if not log_dirs:
            raise KafkaStorageError("log.dirs is empty")
        self.log_dirs = [Path(d) for d in log_dirs]
        self.default_config = default_config or LogConfig()
        #: a KafkaScheduler (None: nothing periodic; tests call the tasks themselves)
        self.scheduler = scheduler
        self.intervals = intervals or LogManagerIntervals()
        self.dir_failure_channel = LogDirFailureChannel()
        raise_descriptor_limit()
        self._logs: dict[tuple[str, int], Log] = {}
        #: how many logs each log dir holds (where the next new log goes), kept with _logs
        self._counts: dict[Path, int] = dict.fromkeys(self.log_dirs, 0)
        #: log dirs with a new partition directory whose name is not fsync'd yet
        self._unsynced_dirs: set[Path] = set()
        # Lock order: before _checkpoint_lock. Guards the logs map and the dirs' state.
        self._lock = threading.Lock()
        #: one writer of the checkpoint files at a time (Kafka's ``CheckpointFile`` lock): the
        #: periodic tasks and DeleteRecords' handlers write them through the same temp file
        # Lock order: leaf (after LogManager._lock).
        self._checkpoint_lock = threading.Lock()
        self._started = False
        self._creator_pool: ThreadPoolExecutor | None = None
        #: the log cleaner (compacted topics), started by ``startup`` when enabled
        self.cleaner: LogCleaner | None = None
        if cleaner_config is not None and cleaner_config.enable_cleaner:
            self.cleaner = LogCleaner(cleaner_config, self.log_dirs, self.all_logs)

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
                recovery_points = OffsetCheckpointFile(d / RECOVERY_POINT_CHECKPOINT).read()
                start_offsets = OffsetCheckpointFile(d / LOG_START_OFFSET_CHECKPOINT).read()
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
                        log_start_offset=start_offsets.get(key, 0),
                        dir_failure_channel=self.dir_failure_channel,
                    )
                    if lg.recovered_bytes_truncated:
                        log.warning(
                            "%s: recovery removed %d bytes (torn tail or damaged batches)",
                            lg.name,
                            lg.recovered_bytes_truncated,
                        )
                    self._logs[key] = lg
                    self._counts[d] += 1
                # The marker is removed once the logs are open: a crash from now on is unclean.
                marker.unlink(missing_ok=True)
            self._started = True
        if self.scheduler is not None:
            self._schedule_tasks()
        if self.cleaner is not None:
            self.cleaner.startup()

    def _schedule_tasks(self) -> None:
        """Kafka's ``LogManager.startup``: the periodic log tasks.  A period of Long.MAX_VALUE
        (Kafka's "never") schedules nothing; 0 runs the task once, as in Kafka."""
        iv = self.intervals
        delay = iv.initial_task_delay_ms
        tasks = [
            ("kafka-log-retention", self.cleanup_logs, delay, iv.retention_check_ms),
            ("kafka-log-flusher", self.flush_dirty_logs, delay, iv.flush_check_ms),
            ("kafka-recovery-point-checkpoint", self.checkpoint_recovery_points, delay,
             iv.flush_recovery_offset_checkpoint_ms),
            ("kafka-log-start-offset-checkpoint", self.checkpoint_log_start_offsets, delay,
             iv.flush_start_offset_checkpoint_ms),
            ("PeriodicProducerExpirationCheck", self.remove_expired_producers,
             iv.producer_id_expiration_check_ms, iv.producer_id_expiration_check_ms),
            ("kafka-log-dir-probe", self.probe_offline_dirs, iv.dir_probe_ms, iv.dir_probe_ms),
        ]
        for name, fn, first, period in tasks:
            if period < LONG_MAX:
                self.scheduler.schedule(name, fn, first, period)

    @property
    def max_logs(self) -> int:
        """The logs this broker may hold (:func:`log_budget`, read at each use: the limit may
        change under a running broker); the logs found at start-up are opened whatever their
        number, new ones beyond it are refused."""
        return log_budget()

    @property
    def log_count(self) -> int:
        """The logs this broker holds."""
        return len(self._logs)

    @property
    def unsynced_dirs(self) -> frozenset[Path]:
        """The log dirs that got a new partition directory whose name is not fsync'd yet: the
        ``kafka-log-dir-flush`` task fsyncs them together, a crash before it may lose the name."""
        with self._lock:
            return frozenset(self._unsynced_dirs)

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
        ``topic_id`` is written to its ``partition.metadata`` on creation.

        Creating a log touches its own directory only: what it costs does not grow with the
        number of logs.  The new directory's name is made durable by one fsync of the log dir,
        done for every log created meanwhile by a task on the scheduler (Kafka schedules the
        flush of ``partition.metadata`` the same way): the topic itself is already durable in
        the metadata log, and a log lost to a crash before that fsync is created again empty."""
        return self.get_or_create_logs([(topic, partition, config, topic_id)])[0]

    def get_or_create_logs(self, wanted: list[NewLog]) -> list[Log]:
        """``get_or_create_log`` for many partitions (a CreateTopics request's): the new logs
        are created side by side on ``LOG_CREATION_THREADS`` threads, as a log's creation is
        mostly the file system's work (a directory and two files), done without the GIL.  If
        one cannot be created, the others are kept and its ``KafkaStorageError`` raised."""
        with self._lock:
            logs: dict[tuple[str, int], Log] = {}
            todo: list[tuple[Path, str, int, LogConfig | None, uuid.UUID | None]] = []
            placed: set[tuple[str, int]] = set()
            failure: KafkaStorageError | None = None
            budget = self.max_logs
            for topic, partition, config, topic_id in wanted:
                if (topic, partition) in logs or (topic, partition) in placed:
                    continue
                existing = self._reusable(topic, partition, topic_id)
                if existing is not None:
                    logs[(topic, partition)] = existing
                    continue
                if len(self._logs) + len(todo) >= budget:
                    # Refused, not attempted: a descriptor spent here is one a connection, a
                    # checkpoint or the shutdown cannot have.
                    failure = failure or KafkaStorageError(
                        f"cannot create {topic}-{partition}: this broker holds "
                        f"{len(self._logs)} logs, its descriptor budget allows {budget}")
                    continue
                # Kafka puts a new partition in the log dir holding the fewest partitions.
                target = min(self.log_dirs, key=self._counts.__getitem__)
                if self.dir_failure_channel.is_offline(target):
                    failure = failure or KafkaStorageError(f"log dir {target} is offline")
                    continue
                self._counts[target] += 1  # placed: the next new log weighs it
                placed.add((topic, partition))
                todo.append((target, topic, partition, config, topic_id))
            if len(todo) > 1:
                opened = list(self._creators().map(lambda args: self._open_new(*args), todo))
            else:
                opened = [self._open_new(*args) for args in todo]
            for (target, topic, partition, _, _), lg in zip(todo, opened, strict=True):
                if isinstance(lg, KafkaStorageError):
                    self._counts[target] -= 1
                    failure = failure or lg
                    continue
                self._logs[(topic, partition)] = logs[(topic, partition)] = lg
                self._note_new_dir(target)
            if failure is not None:
                raise failure
            return [logs[(topic, partition)] for topic, partition, _, _ in wanted]

    def _reusable(self, topic: str, partition: int, topic_id: uuid.UUID | None) -> Log | None:
        """The existing log of the partition, unless it belongs to another topic id (with
        ``_lock`` held)."""
        existing = self._logs.get((topic, partition))
        if existing is None or topic_id is None or existing.topic_id in (None, topic_id):
            return existing
        # Left by an earlier topic of this name whose creation a crash interrupted before its
        # metadata was on disk: nothing was ever acknowledged in it.
        log.warning("%s belongs to topic id %s, not %s: deleting it", existing.name,
                    existing.topic_id, topic_id)
        self._remove(topic, partition).delete()
        return None

    def _open_new(self, target: Path, topic: str, partition: int, config: LogConfig | None,
                  topic_id: uuid.UUID | None) -> Log | KafkaStorageError:
        """A new log in ``target``, or the error that stopped it (a dir gone bad is offline)."""
        try:
            return Log(
                target / f"{topic}-{partition}",
                config or self.default_config,
                topic=topic,
                partition=partition,
                topic_id=topic_id,
                dir_failure_channel=self.dir_failure_channel,
            )
        except KafkaStorageError as exc:  # a partition.metadata found there is not ours
            return exc
        except OSError as exc:
            if exc.errno not in (errno.EMFILE, errno.ENFILE):
                # Out of descriptors is the process's trouble, not the dir's: it stays online.
                self.dir_failure_channel.maybe_add_offline_log_dir(
                    target, f"cannot create the log of {topic}-{partition}", exc)
            return KafkaStorageError(f"cannot create {topic}-{partition}: {exc}")

    def _creators(self) -> ThreadPoolExecutor:
        """The threads that create new logs side by side (started at the first batch)."""
        if self._creator_pool is None:
            self._creator_pool = ThreadPoolExecutor(LOG_CREATION_THREADS,
                                                    thread_name_prefix="kafka-log-creator")
        return self._creator_pool

    def _remove(self, topic: str, partition: int) -> Log:
        lg = self._logs.pop((topic, partition))
        parent = lg.dir.parent
        if parent in self._counts:
            self._counts[parent] -= 1
        return lg

    def _note_new_dir(self, d: Path) -> None:
        """Have ``d`` fsync'd soon, once for every log created in it meanwhile (with
        ``_lock`` held)."""
        if self.scheduler is not None and self._unsynced_dirs:
            self._unsynced_dirs.add(d)  # the task scheduled for the others takes this one too
            return
        try:
            if self.scheduler is None:
                raise RuntimeError("no scheduler")
            self.scheduler.schedule_once("kafka-log-dir-flush", self.flush_new_log_dirs,
                                         LOG_DIR_FLUSH_DELAY_MS)
            self._unsynced_dirs.add(d)
        except RuntimeError:  # no scheduler, or it has stopped: now, then
            self._fsync_dir(d)

    def flush_new_log_dirs(self) -> None:
        """fsync each log dir that got new partition directories since the last call."""
        with self._lock:
            dirs, self._unsynced_dirs = self._unsynced_dirs, set()
        for d in dirs:
            self._fsync_dir(d)

    def _fsync_dir(self, d: Path) -> None:
        try:
            fsync_directory(d)
        except OSError as exc:
            self.dir_failure_channel.maybe_add_offline_log_dir(d, "cannot fsync the log dir", exc)

    def delete_log(self, topic: str, partition: int) -> bool:
        with self._lock:
            if (topic, partition) not in self._logs:
                return False
            lg = self._remove(topic, partition)
        lg.delete()
        return True

    def reconfigure_default_log_config(
            self, default: LogConfig, topic_configs: Callable[[str], dict[str, str]]) -> None:
        """The broker's log defaults changed (a dynamic broker config): every log takes them,
        under its topic's own settings (Kafka's ``LogManager.reconfigureDefaultLogConfig``)."""
        with self._lock:
            self.default_config = default
            logs = list(self._logs.items())
        for (topic, _), lg in logs:
            lg.update_config(LogConfig.from_properties(topic_configs(topic), base=default))

    def all_logs(self) -> dict[tuple[str, int], Log]:
        return dict(self._logs)

    def cleanup_logs(self, now_ms: int | None = None) -> int:
        """Retention over every log (Kafka's ``LogManager.cleanupLogs``); segments deleted."""
        deleted = 0
        for lg in list(self._logs.values()):
            try:
                deleted += lg.delete_old_segments(now_ms)
            except KafkaStorageError:
                continue  # deleted or closed meanwhile, or its dir is offline
        if deleted:
            log.info("retention deleted %d segments", deleted)
        return deleted

    def remove_expired_producers(self, now_ms: int | None = None) -> int:
        """Kafka's ``PeriodicProducerExpirationCheck``: forget producers idle for
        ``producer.id.expiration.ms``."""
        return sum(lg.remove_expired_producers(now_ms) for lg in list(self._logs.values()))

    def probe_offline_dirs(self) -> list[Path]:
        """Try a small write (and fsync) in every offline log dir; a dir where it succeeds is
        online again.  Returns the dirs brought back."""
        back = []
        for d in self.dir_failure_channel.offline_dirs():
            probe = d / PROBE_FILE
            try:
                fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                try:
                    if os.write(fd, bytes(PROBE_BYTES)) != PROBE_BYTES:
                        continue
                    os.fsync(fd)
                finally:
                    os.close(fd)
                    probe.unlink(missing_ok=True)
            except OSError:
                continue
            self.dir_failure_channel.mark_online(d)
            back.append(d)
        return back

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
        with self._checkpoint_lock:  # the snapshot too: an older one never lands last
            for d in self.log_dirs:
                points = {}
                for key, lg in list(self._logs.items()):
                    if lg.dir.parent == d:
                        point = lg.recovery_point
                        if lg.damaged_from is not None:  # a read found damage: scan it next
                            point = min(point, lg.damaged_from)
                        points[key] = point
                self._write_checkpoint(d, RECOVERY_POINT_CHECKPOINT, points)

    def checkpoint_log_start_offsets(self) -> None:
        """Kafka's ``log-start-offset-checkpoint``: where DeleteRecords moved each log's start
        inside its first segment, read back at the next start.  Written periodically, and at
        once after DeleteRecords."""
        with self._checkpoint_lock:
            for d in self.log_dirs:
                points = {key: lg.log_start_offset for key, lg in list(self._logs.items())
                          if lg.dir.parent == d}
                self._write_checkpoint(d, LOG_START_OFFSET_CHECKPOINT, points)

    def _write_checkpoint(self, d: Path, name: str, points: dict[tuple[str, int], int]) -> None:
        """Write one checkpoint file (with ``_checkpoint_lock`` held: two writers would share
        its temp file, and the second's rename would fail and take the dir offline)."""
        if self.dir_failure_channel.is_offline(d):
            return
        try:
            OffsetCheckpointFile(d / name).write(points)
        except OSError as exc:
            self.dir_failure_channel.maybe_add_offline_log_dir(d, f"cannot write {name}", exc)

    def flush_all(self) -> None:
        for lg in list(self._logs.values()):
            lg.flush()

    def shutdown(self) -> None:
        """Stop the cleaner, close every log (flush + producer snapshot), then mark the dirs
        clean."""
        if self.cleaner is not None:
            self.cleaner.shutdown()
        with self._lock:
            for lg in self._logs.values():
                lg.close()
            self.checkpoint_recovery_points()
            self.checkpoint_log_start_offsets()
            # A dir with a damaged log or one that is offline is not marked clean: the next
            # start recovers it from its recovery points.
            unclean = {lg.dir.parent for lg in self._logs.values() if lg.damaged_from is not None}
            unclean.update(self.dir_failure_channel.offline_dirs())
            self._logs.clear()
            self._counts = dict.fromkeys(self.log_dirs, 0)
            dirs, self._unsynced_dirs = self._unsynced_dirs, set()
            for d in dirs:
                self._fsync_dir(d)
            if self._creator_pool is not None:
                self._creator_pool.shutdown()
                self._creator_pool = None
            for d in self.log_dirs:
                if d in unclean:
                    log.error("log dir %s is not marked clean: it is recovered at the next "
                              "start", d)
                elif d.exists():
                    try:
                        (d / CLEAN_SHUTDOWN_FILE).touch()
                    except OSError as exc:
                        log.error("cannot mark log dir %s clean: %s", d, exc)

