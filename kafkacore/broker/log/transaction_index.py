"""``TransactionIndex``: the aborted transactions of one segment (Kafka's ``TransactionIndex``).

One ``<base offset>.txnindex`` file per segment, one entry per transaction aborted by a marker
in that segment: Kafka's ``AbortedTxn`` layout, 34 bytes, big-endian::

    version int16 (0) | producer id int64 | first offset int64 | last offset int64
    | last stable offset int64

``first offset`` is the transaction's first record in this partition, ``last offset`` its ABORT
marker, ``last stable offset`` the partition's LSO once the abort completed.  A read_committed
fetch asks the segments it reads from for the entries that overlap its range
(:meth:`collect_aborted`) and sends them with the records, so that the consumer drops the
aborted producers' batches between each first offset and its marker.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import NamedTuple

TXN_INDEX_SUFFIX = ".txnindex"
_ENTRY = struct.Struct(">hqqqq")
_VERSION = 0


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TransactionIndex:
    """Entries in memory (a segment has few aborts) and appended to the file as they come.
    Not thread-safe: the owning ``Log`` holds its lock."""

    def __init__(self, path: Path, *, new: bool = False) -> None:
        """``new``: the index of a new log's first segment, empty and complete; its file is
        written at the first abort or flush (a crash before either leaves no file, and the
        log, having one segment, is replayed whole: what the missing file asks for)."""
        self.path = path
        self.entries: list[AbortedTxn] = []
        #: False if the file was missing when opened (lost, or a segment of an older broker):
        #: the log then rebuilds the index from the batches
        self.existed = new or path.exists()
        #: the empty file is still to be written (a new segment's index, until its first flush)
        self._unwritten = new
        if new:
            return
        self._load()
        if not self.existed:
            path.touch()

    def _load(self) -> None:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        whole = len(data) - len(data) % _ENTRY.size
        for pos in range(0, whole, _ENTRY.size):
            version, *fields = _ENTRY.unpack_from(data, pos)
            if version != _VERSION:
                break  # a damaged tail: the entries before it stand
            self.entries.append(AbortedTxn(*fields))
        if whole != len(data) or len(self.entries) * _ENTRY.size != whole:
            self._rewrite()  # cut the torn or damaged tail

    def append(self, txn: AbortedTxn) -> None:
        """Add ``txn`` unless an entry already covers its marker (a replay after recovery
        meets the markers it indexed before)."""
        if self.entries and txn.last_offset <= self.entries[-1].last_offset:
            return
        self.entries.append(txn)
        self._unwritten = False
        with open(self.path, "ab") as f:
            f.write(_ENTRY.pack(_VERSION, *txn))

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose marker is at or after ``offset`` (the log was cut there)."""
        kept = [e for e in self.entries if e.last_offset < offset]
        if len(kept) != len(self.entries):
            self.entries = kept
            self._rewrite()

    def collect_aborted(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Entries of transactions that overlap [fetch_offset, upper_bound)."""
        return [e for e in self.entries
                if e.last_offset >= fetch_offset and e.first_offset < upper_bound]

    def _rewrite(self) -> None:
        tmp = self.path.with_suffix(TXN_INDEX_SUFFIX + ".tmp")
        with open(tmp, "wb") as f:
            f.write(b"".join(_ENTRY.pack(_VERSION, *e) for e in self.entries))
        os.replace(tmp, self.path)
        self._unwritten = False

    def flush(self) -> None:
        if self._unwritten:
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644))
            self._unwritten = False
        if self.path.exists():
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def delete(self) -> None:
        self.entries = []
        self._unwritten = False
        self.path.unlink(missing_ok=True)
