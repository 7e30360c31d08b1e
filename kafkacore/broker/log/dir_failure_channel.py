"""``LogDirFailureChannel``: which log dirs are offline, and why (Kafka's ``LogDirFailureChannel``).

A write or fsync that fails with an ``OSError`` (a full disk, a disk gone read-only) puts its log
dir here.  From then on every log in the dir answers ``KAFKA_STORAGE_ERROR`` (Kafka's offline
partitions), the failure is logged once at ERROR with its cause, and the ``LogManager``'s probe
task tries a small write in the dir until one succeeds: then the dir is online again.  Kafka keeps
a failed dir offline until the broker restarts (and halts a broker whose last dir failed); see
docs/broker/log.rst for why we bring it back instead.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

log = logging.getLogger(__name__)


class LogDirFailureChannel:
    """Thread-safe; guarded by ``_lock``: ``_offline`` (dir -> the failure that took it)."""

    def __init__(self) -> None:
        # Lock order: leaf. Guards _offline and the offline/online counts.
        self._lock = threading.Lock()
        self._offline: dict[Path, str] = {}
        #: how many times a dir went offline, and came back (tests and operators read them)
        self.failures = 0
        self.recoveries = 0

    def maybe_add_offline_log_dir(self, log_dir: Path, message: str, exc: BaseException) -> bool:
        """Mark ``log_dir`` offline; True (and one ERROR line) if it was online."""
        with self._lock:
            if log_dir in self._offline:
                return False
            self._offline[log_dir] = f"{message}: {exc}"
            self.failures += 1
        log.error("log dir %s is offline: %s: %s; its partitions answer KAFKA_STORAGE_ERROR "
                  "until a write there succeeds again", log_dir, message, exc)
        return True

    def any_offline(self) -> bool:
        return bool(self._offline)

    def is_offline(self, log_dir: Path) -> bool:
        return log_dir in self._offline  # a dict read: atomic under the GIL

    def reason(self, log_dir: Path) -> str | None:
        return self._offline.get(log_dir)

    def offline_dirs(self) -> list[Path]:
        with self._lock:
            return list(self._offline)

    def mark_online(self, log_dir: Path) -> None:
        with self._lock:
            if log_dir not in self._offline:
                return
            # Said before the dir is back, so that whoever sees it online (an append accepted
            # on another thread) finds the line already in the log.
            log.warning("log dir %s is online again: a probe write succeeded", log_dir)
            del self._offline[log_dir]
            self.recoveries += 1
