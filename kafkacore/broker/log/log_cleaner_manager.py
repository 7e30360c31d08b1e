"""``LogCleanerManager``: which log the cleaner threads clean next, and where they got to
(Kafka's ``LogCleanerManager``).

Each log dir has a ``cleaner-offset-checkpoint`` file (an ``OffsetCheckpointFile``, as the recovery
points): for each compacted partition, the offset up to which it was cleaned.  Everything after
it is the log's *dirty* section; its *dirty ratio* is the dirty bytes over all the bytes that a
clean could touch.  A thread asks for the *filthiest* log: the one with the highest ratio among
those at or over their ``min.cleanable.dirty.ratio`` (or whose oldest dirty record is older than
``max.compaction.lag.ms``), that no other thread is cleaning.  The dirty section ends at the first
offset that may not be cleaned: the active segment (never cleaned), the last stable offset (an
open transaction's records might still be aborted), and the first segment younger than
``min.compaction.lag.ms``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kafkacore.broker.log.log import Log
from kafkacore.broker.log.offset_checkpoint_file import OffsetCheckpointFile

log = logging.getLogger(__name__)

#: Kafka's ``LogCleanerManager.offsetCheckpointFile``
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"

Key = tuple[str, int]


class LogCleaningAbortedError(Exception):
    """The clean was stopped (shutdown, or the log went away); nothing was changed."""


@dataclass
class LogToClean:
    """A compacted log and its sections, as the ``LogCleanerManager`` measured them."""

    log: Log
    #: where the dirty section starts (the cleaner's checkpoint)
    first_dirty_offset: int
    #: the first offset not to clean: the active segment, the LSO, min.compaction.lag.ms
    uncleanable_offset: int
    clean_bytes: int
    dirty_bytes: int
    #: max.compaction.lag.ms has passed for its oldest dirty record, or a horizon has
    needs_compaction_now: bool = False

    @property
    def dirty_ratio(self) -> float:
        total = self.clean_bytes + self.dirty_bytes
        return self.dirty_bytes / total if total else 0.0


class LogCleanerManager:
    def __init__(self, log_dirs: list[Path], logs: Callable[[], dict[Key, Log]]) -> None:
        self.log_dirs = log_dirs
        self._logs = logs
        # Lock order: leaf. Guards _in_progress and the cleaner checkpoints read.
        self._lock = threading.Lock()
        #: partitions being cleaned -> the log (guarded by _lock)
        self._in_progress: dict[Key, Log] = {}
        #: partitions whose clean must stop (shutdown); checked by ``check_done``
        self._aborted: set[Key] = set()
        #: partitions a clean failed on: not tried again until the broker restarts (Kafka's
        #: ``uncleanablePartitions``)
        self.uncleanable: set[Key] = set()
        #: the delete horizons the cleaner wrote, per partition: a log is cleaned again once its
        #: horizon has passed, dirty or not, to remove the tombstones and markers (KIP-534)
        self._horizons: dict[Key, int] = {}

    # -- the checkpoints -----------------------------------------------------------------------

    def all_cleaner_checkpoints(self) -> dict[Key, int]:
        out: dict[Key, int] = {}
        for d in self.log_dirs:
            out.update(OffsetCheckpointFile(d / CLEANER_OFFSET_CHECKPOINT).read())
        return out

    def _update_checkpoint(self, d: Path, key: Key, offset: int | None) -> None:
        checkpoint = OffsetCheckpointFile(d / CLEANER_OFFSET_CHECKPOINT)
        points = checkpoint.read()
        alive = self._logs()
        points = {k: v for k, v in points.items() if k in alive}  # forget deleted partitions
        if offset is None:
            points.pop(key, None)
        else:
            points[key] = offset
        checkpoint.write(points)

    # -- choosing a log --------------------------------------------------------------------------

    def cleanable(self, key: Key, lg: Log, checkpoint: int | None, now_ms: int) -> LogToClean:
        """The log's clean and dirty sections (Kafka's ``cleanableOffsets``)."""
        with lg._lock:  # the segments may be read (timestamps): none may be swapped meanwhile
            return self._cleanable(key, lg, checkpoint, now_ms)

    def _cleanable(self, key: Key, lg: Log, checkpoint: int | None, now_ms: int) -> LogToClean:
        cfg = lg.config
        segments = lg.segments
        start, end = lg.log_start_offset, lg.log_end_offset
        first_dirty = checkpoint if checkpoint is not None and start <= checkpoint <= end \
            else start
        upper = min(segments[-1].base_offset, lg.last_stable_offset)
        clean_bytes = dirty_bytes = 0
        uncleanable = first_dirty
        needs_now = False
        lag_limit = now_ms - cfg.min_compaction_lag_ms
        for segment in segments[:-1]:
            if segment.next_offset <= first_dirty:
                clean_bytes += segment.size
                continue
            if segment.next_offset > upper or (cfg.min_compaction_lag_ms > 0
                                               and segment.largest_timestamp > lag_limit):
                break
            if dirty_bytes == 0 and cfg.max_compaction_lag_ms < (1 << 63) - 1:
                needs_now = now_ms - segment.largest_timestamp > cfg.max_compaction_lag_ms
            dirty_bytes += segment.size
            uncleanable = segment.next_offset
        horizon = self._horizons.get(key)
        if horizon is not None and horizon <= now_ms and clean_bytes:
            needs_now = True
        return LogToClean(lg, first_dirty, max(uncleanable, first_dirty), clean_bytes,
                          dirty_bytes, needs_now)

    def grab_filthiest_compacted_log(self, now_ms: int | None = None) -> LogToClean | None:
        """The dirtiest compacted log that may be cleaned now, marked in progress; or None."""
        now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
        checkpoints = self.all_cleaner_checkpoints()
        with self._lock:
            best: LogToClean | None = None
            best_key: Key | None = None
            for key, lg in self._logs().items():
                if not lg.config.compact or key in self._in_progress or key in self.uncleanable:
                    continue
                try:
                    c = self.cleanable(key, lg, checkpoints.get(key), now)
                except Exception:  # closed or deleted meanwhile: not this turn
                    continue
                ratio = lg.config.min_cleanable_dirty_ratio
                if not (c.dirty_bytes and c.dirty_ratio >= ratio or c.needs_compaction_now):
                    continue
                if best is None or c.dirty_ratio > best.dirty_ratio:
                    best, best_key = c, key
            if best is not None and best_key is not None:
                self._in_progress[best_key] = best.log
                self._horizons.pop(best_key, None)
            return best

    def delete_horizon(self, key: Key) -> int | None:
        """The delete horizon (ms) the last clean of partition ``key`` wrote into its tombstones
        and markers, or None: once it has passed, the log is cleaned again, dirty or not, to
        remove them (KIP-534)."""
        with self._lock:
            return self._horizons.get(key)

    def check_done(self, lg: Log) -> None:
        """Raise :class:`LogCleaningAbortedError` if this log's clean must stop."""
        key = (lg.topic, lg.partition)
        if key in self._aborted:
            raise LogCleaningAbortedError(f"the clean of {lg.name} was aborted")

    def done_cleaning(self, lg: Log, end_offset: int | None, horizon: int = -1) -> None:
        """The clean ended: write the checkpoint (``end_offset``; None: unchanged)."""
        key = (lg.topic, lg.partition)
        try:
            if end_offset is not None:
                self._update_checkpoint(lg.dir.parent, key, end_offset)
        finally:
            with self._lock:
                self._in_progress.pop(key, None)
                if horizon >= 0:
                    self._horizons[key] = horizon

    def mark_uncleanable(self, lg: Log) -> None:
        with self._lock:
            key = (lg.topic, lg.partition)
            self.uncleanable.add(key)
            self._in_progress.pop(key, None)

    def abort_all(self) -> None:
        """Shutdown: every clean in progress stops at its next check."""
        with self._lock:
            self._aborted.update(self._in_progress)
