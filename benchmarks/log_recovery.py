"""What a partition keeps after one flipped byte in an old segment and an unclean stop.

A 20,000-record log (batches of 4 records, 4 KiB segments, so about 60 segments) is written
through ``LogManager`` as the broker writes it, the process "dies" (no clean-shutdown marker),
one byte is flipped in an old segment, and the log is opened again as the broker opens it at
start-up.  We count the records a consumer can still read, seeking past any batch the broker
refuses, with kafka-python's reader checking every CRC.  Two cases:

- ``scanned``: no recovery point was written before the stop, so recovery scans every segment;
- ``trusted``: the recovery point was checkpointed (the scheduled task), so the old segment is
  loaded without a scan and the damage is found by the read's checks.

Each case flips a byte at several places (batch headers and record bytes, old and newer
segments) and reports the fewest records kept, and how many were served damaged or renumbered.

    PYTHONPATH=. python benchmarks/log_recovery.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from kafka.record.memory_records import MemoryRecords

from kafkacore.broker.log import LogConfig, LogManager
from kafkacore.core.records import MemoryRecordsBuilder
from kafkacore.errors import CorruptMessageError

RECORDS = 20_000
PER_BATCH = 4
CONFIG = LogConfig(segment_bytes=4096, index_interval_bytes=256)
#: (segment index, byte in it): a length field, a CRC, a header field, record bytes, and a base
#: offset (the one field the CRC does not cover)
FLIPS = [(1, 8), (1, 17), (2, 30), (3, 200), (10, 1000), (30, 2000), (5, 3)]


def batch(first: int) -> bytes:
    b = MemoryRecordsBuilder(1 << 16)
    for i in range(first, first + PER_BATCH):
        b.append(1_700_000_000_000 + i, b"k%d" % i, b"value-%06d" % i)
    b.close()
    return bytes(b.build())


def readable(log) -> tuple[int, int]:
    """(records read sound and under their own offset, records served in batches failing
    their CRC or under another record's offset: each value names its offset)."""
    count, bad, offset = 0, 0, log.log_start_offset
    while offset < log.log_end_offset:
        try:
            data = log.read(offset, 1 << 16).records
        except CorruptMessageError:
            offset += PER_BATCH  # the consumer seeks past the refused batch
            continue
        records = MemoryRecords(data)
        last = offset
        while (b := records.next_batch()) is not None:
            crc_ok = b.validate_crc()
            for r in b:
                sound = crc_ok and r.value == b"value-%06d" % r.offset
                count += sound
                bad += not sound
                last = r.offset
        offset = last + 1
    return count, bad


def run(root: Path, segment: int, at: int, trusted: bool) -> tuple[int, int]:
    mgr = LogManager([root], CONFIG)
    mgr.startup()
    log = mgr.get_or_create_log("t", 0)
    for first in range(0, RECORDS, PER_BATCH):
        log.append_as_leader(batch(first))
    log.flush()
    if trusted:
        mgr.checkpoint_recovery_points()
    path = log.segments[segment].log_path
    log.close(clean=False)
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    path.write_bytes(bytes(data))
    again = LogManager([root], CONFIG)
    again.startup()
    return readable(again.get_log("t", 0))


def main() -> int:
    for trusted in (False, True):
        kept, bad = [], 0
        for segment, at in FLIPS:
            with tempfile.TemporaryDirectory() as d:
                good, corrupt = run(Path(d), segment, at, trusted)
                kept.append(good)
                bad += corrupt
        case = "trusted" if trusted else "scanned"
        print(f"{case}: records kept of {RECORDS}: fewest {min(kept)}, by flip {kept}; "
              f"records served with a bad CRC or under another offset: {bad}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
