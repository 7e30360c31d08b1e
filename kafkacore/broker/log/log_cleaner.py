"""``LogCleaner``: the threads that compact the logs of compacted topics (Kafka's
``LogCleaner``).  See docs/broker/log_cleaner.rst.

``log.cleaner.threads`` threads, each with its own :class:`Cleaner` and offset map (the
``log.cleaner.dedupe.buffer.size`` split between them), share one :class:`Throttler`
(``log.cleaner.io.max.bytes.per.second``).  A thread asks the :class:`LogCleanerManager` for the
filthiest log, cleans it, records how far it got, and asks again; with nothing to clean it
sleeps ``log.cleaner.backoff.ms``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

from kafkacore.broker.log.cleaner import (
    Cleaner,
    CleanerStats,
    CorruptSegmentError,
    LogCleaningAbortedError,
)
from kafkacore.broker.log.cleaner_config import CleanerConfig
from kafkacore.broker.log.log import Log
from kafkacore.broker.log.log_cleaner_manager import Key, LogCleanerManager
from kafkacore.broker.log.offset_map import SkimpyOffsetMap
from kafkacore.broker.log.throttler import Throttler
from kafkacore.broker.server_common.shutdownable_thread import ShutdownableThread
from kafkacore.errors import KafkaStorageError

log = logging.getLogger(__name__)


class CleanerThread(ShutdownableThread):
    """One cleaner thread (Kafka's ``LogCleaner.CleanerThread``)."""

    def __init__(self, cleaner_id: int, owner: LogCleaner) -> None:
        super().__init__(f"kafka-log-cleaner-thread-{cleaner_id}")
        cfg = owner.config
        self.owner = owner
        self._wake = threading.Event()
        self.cleaner = Cleaner(
            cleaner_id,
            SkimpyOffsetMap(cfg.dedupe_buffer_size // max(cfg.num_threads, 1),
                            cfg.dedupe_buffer_load_factor),
            cfg.io_buffer_size, owner.throttler, owner.manager.check_done)
        #: the stats of the last clean (tests, benchmarks, the log line)
        self.last_stats: CleanerStats | None = None

    def wakeup(self) -> None:
        self._wake.set()

    def do_work(self) -> None:
        if not self.try_clean():
            self._wake.wait(self.owner.config.backoff_ms / 1000)
            self._wake.clear()

    def try_clean(self) -> bool:
        """Clean the filthiest log, if one needs it; False when none does."""
        manager = self.owner.manager
        c = manager.grab_filthiest_compacted_log()
        if c is None:
            return False
        lg, end, horizon = c.log, None, -1
        try:
            end, stats = self.cleaner.clean(c)
            horizon = stats.latest_delete_horizon
            self.last_stats = stats
            log.info("%s: cleaned [%d, %d) in %.2f s: %d of %d records kept, %.1f MB read, "
                     "%.1f MB written, %d segments swapped", lg.name, c.first_dirty_offset, end,
                     stats.elapsed_s, stats.records_retained, stats.records_read,
                     stats.bytes_read / 1e6, stats.bytes_written / 1e6, stats.segments_swapped)
        except (LogCleaningAbortedError, KafkaStorageError) as exc:
            log.info("%s: clean stopped: %s", lg.name, exc)
        except CorruptSegmentError as exc:
            # Kafka: a CorruptRecordException ends the clean and marks the partition
            # uncleanable.  Nothing of the damaged segment's group was swapped in, so its intact
            # batches stay; the log is recovered from that segment at the next start, which
            # cuts the damaged bytes only (LogSegment.recover resyncs to the next sound batch).
            log.error("%s: the log cleaner met damaged data (%s): cleaning stops for this "
                      "partition until the broker restarts; the log is recovered from %s then",
                      lg.name, exc, exc.segment.log_path.name)
            lg.report_damage(exc.segment, exc.position, str(exc))
            manager.mark_uncleanable(lg)
            return True
        except Exception as exc:
            if isinstance(exc, OSError) and lg._closed:  # deleted under the cleaner
                log.info("%s: clean stopped: the log was deleted (%s)", lg.name, exc)
                return True
            # Kafka marks the partition uncleanable and goes on with the others.
            log.exception("%s: the log cleaner failed on it; it is not cleaned again until "
                          "the broker restarts", lg.name)
            manager.mark_uncleanable(lg)
            return True
        finally:
            if (lg.topic, lg.partition) not in manager.uncleanable:
                manager.done_cleaning(lg, end, horizon)
        return True


class LogCleaner:
    def __init__(self, config: CleanerConfig, log_dirs: list[Path],
                 logs: Callable[[], dict[Key, Log]]) -> None:
        self.config = config
        self._stop = threading.Event()
        self.throttler = Throttler(config.max_io_bytes_per_second, stop=self._stop)
        self.manager = LogCleanerManager(log_dirs, logs)
        self.threads = [CleanerThread(i, self) for i in range(config.num_threads)]

    def startup(self) -> None:
        for t in self.threads:
            t.start()

    def shutdown(self, timeout_s: float = 10.0) -> None:
        """Stop the threads; a clean in progress stops at its next segment, its cleaned file
        discarded (the log keeps its old segments)."""
        self._stop.set()
        self.manager.abort_all()
        for t in self.threads:
            t.initiate_shutdown()
        for t in self.threads:
            if t.is_alive():
                t.await_shutdown(timeout_s)

    def wakeup(self) -> None:
        """Look for dirty logs now instead of after the back-off (tests, tutorials)."""
        for t in self.threads:
            t.wakeup()

    def clean_now(self) -> list[CleanerStats]:
        """Clean, on the calling thread, every log that needs it (tests and tutorials without
        started threads)."""
        done: list[CleanerStats] = []
        thread = self.threads[0] if self.threads else CleanerThread(0, self)
        for _ in range(1000):  # a bound: each turn cleans a log or ends the loop
            if not thread.try_clean():
                break
            if thread.last_stats is not None:
                done.append(thread.last_stats)
                thread.last_stats = None
        return done
